package api_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const searchPath = "/v1/users/u-42/conversations/c-7/evidence/search"

func post(t testing.TB, h http.Handler, target, token, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestSearch checks that a search answers the evidence response the source
// chose for the query, unchanged, and within max_tokens when asked.
func TestSearch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	live, _ := foldFocus(t, history)
	b.src.set(recordOf("u-42", "c-7", &live))
	b.src.wantQuery = "what did we decide about the database?"
	tok := userToken(t, "u-42")

	w := post(t, b.h, searchPath, tok, `{"query": "what did we decide about the database?"}`)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if n := b.src.searches.Load(); n != 1 {
		t.Errorf("the source saw the query %d times, want 1", n)
	}
	get := do(t, b.h, http.MethodGet, "/v1/users/u-42/conversations/c-7/evidence", tok)
	if diff := cmp.Diff(decode(t, get), decode(t, w)); diff != "" {
		t.Errorf("search response differs from the record's (-get +search):\n%s", diff)
	}

	full := decode(t, w)
	budget := full.EstimatedTokens - 1
	w = post(t, b.h, searchPath, tok, `{"query": "what did we decide about the database?", "max_tokens": `+strconv.Itoa(budget)+`}`)
	got := decode(t, w)
	if got.Message == nil || got.EstimatedTokens > budget {
		t.Errorf("with max_tokens %d: message %v, %d tokens", budget, got.Message, got.EstimatedTokens)
	}

	// Unknown conversations answer the empty response, as GET does.
	w = post(t, b.h, "/v1/users/u-42/conversations/nope/evidence/search", tok, `{"query": "anything"}`)
	if w.Code != http.StatusOK || decode(t, w).Version != 0 {
		t.Errorf("unknown conversation: %d %s", w.Code, w.Body)
	}
}

func TestSearchBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		token    func(t testing.TB) string
		wantCode int
		wantErr  string
	}{
		{"empty query", `{"query": ""}`, nil, 400, "empty_query"},
		{"no query", `{"max_tokens": 10}`, nil, 400, "empty_query"},
		{"query not a string", `{"query": 7}`, nil, 400, "invalid_body"},
		{"malformed", `{"query": "x"`, nil, 400, "invalid_body"},
		{"not an object", `"x"`, nil, 400, "invalid_body"},
		{"unknown field", `{"query": "x", "k": 1}`, nil, 400, "invalid_body"},
		{"trailing data", `{"query": "x"} {}`, nil, 400, "invalid_body"},
		{"zero max_tokens", `{"query": "x", "max_tokens": 0}`, nil, 400, "invalid_max_tokens"},
		{"negative max_tokens", `{"query": "x", "max_tokens": -3}`, nil, 400, "invalid_max_tokens"},
		{"query at the limit", `{"query": "` + strings.Repeat("q", 64<<10) + `"}`, nil, 200, ""},
		{"query over the limit", `{"query": "` + strings.Repeat("q", 64<<10+1) + `"}`, nil, 400, "query_too_long"},
		{"escaped query over the body limit", `{"query": "` + strings.Repeat(`\u0071`, 100<<10) + `"}`, nil, 400, "query_too_long"},
		{"no token", `{"query": "x"}`, func(testing.TB) string { return "" }, 401, "unauthorized"},
		{"another user", `{"query": "x"}`, func(t testing.TB) string { return userToken(t, "u-1") }, 403, "forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tok := userToken(t, "u-42")
			if tt.token != nil {
				tok = tt.token(t)
			}
			w := post(t, b.h, searchPath, tok, tt.body)
			if w.Code != tt.wantCode {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.wantCode, w.Body)
			}
			if tt.wantErr != "" {
				if code, _ := errorOf(t, w); code != tt.wantErr {
					t.Errorf("code %q, want %q", code, tt.wantErr)
				}
			}
			if strings.Contains(w.Body.String(), "qqqq") {
				t.Error("the response quotes the query")
			}
		})
	}
}

// TestSearchNeverLogsTheQuery makes the source fail, so that the handler
// logs a server error, and checks that neither the log, the error body nor
// the metrics carry the query's text.
func TestSearchNeverLogsTheQuery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.src.err = errors.New("connection refused")
	const marker = "SECRET-QUERY-MARKER"
	w := post(t, b.h, searchPath, userToken(t, "u-42"), `{"query": "`+marker+`"}`)
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", w.Code)
	}
	if b.logs.Len() == 0 {
		t.Fatal("no server error was logged, so the check below proves nothing")
	}
	m := do(t, b.h, http.MethodGet, "/metrics", "")
	for name, s := range map[string]string{"log": b.logs.String(), "body": w.Body.String(), "metrics": m.Body.String()} {
		if strings.Contains(s, marker) {
			t.Errorf("the %s carries the query", name)
		}
	}
}
