package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/internal/metrics"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var secret = []byte("test-secret-of-at-least-32-bytes!!")

const (
	evidenceRoute = "GET /v1/users/{user_id}/conversations/{conversation_id}/evidence"
	deleteRoute   = "DELETE /v1/users/{user_id}/conversations/{conversation_id}"
)

type testBundle struct {
	h       *api.Handler
	src     *fakeSource
	metrics *metrics.Metrics
	logs    *bytes.Buffer
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	src := newFakeSource()
	m := metrics.New()
	logs := &bytes.Buffer{}
	h, err := api.New(src, &api.Config{
		JWTSecret: secret,
		Notifier:  src,
		Metrics:   m,
		Logger:    slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &testBundle{h: h, src: src, metrics: m, logs: logs}
}

// sign signs claims with HS256 and the test secret.
func sign(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func userToken(t testing.TB, sub string) string {
	t.Helper()
	s, err := apiclient.Sign(secret, sub, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func serviceToken(t testing.TB) string {
	t.Helper()
	s, err := apiclient.Sign(secret, "svc", time.Hour, &apiclient.TokenOptions{Service: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func do(t testing.TB, h http.Handler, method, target, token string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// errorOf decodes an error body and checks its shape.
func errorOf(t *testing.T, w *httptest.ResponseRecorder) (code, message string) {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var body map[string]map[string]string
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body %q: %v", w.Body.String(), err)
	}
	e, ok := body["error"]
	if !ok || len(body) != 1 || len(e) != 2 || e["code"] == "" || e["message"] == "" {
		t.Fatalf("error body = %s, want {\"error\":{\"code\",\"message\"}}", w.Body.String())
	}
	return e["code"], e["message"]
}

var updatedAt = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)

// history is a conversation whose fold puts one entry in each bucket, with
// text that must be escaped.
const history = `[
 {"id":"m0","role":"user","content":"We must ship by Friday."},
 {"id":"m1","role":"assistant","content":"","tool_calls":[{"id":"t1","name":"search","args":{}}]},
 {"id":"m2","role":"tool","tool_call_id":"t1","content":"{\"rows\":[]}"},
 {"id":"m3","role":"assistant","content":"Agreed: we'll use Postgres."},
 {"id":"m4","role":"user","content":"Next step: draft the schema. <b>\"quoted\" & \u2028</b>"},
 {"id":"m5","role":"assistant","content":"Here is a draft."},
 {"id":"m6","role":"user","content":"Looks good, thanks."}
]`

// sentinelHistory summarises messages that yield no entries.
const sentinelHistory = `[
 {"id":"m0","role":"assistant","content":"","tool_calls":[{"id":"t1","name":"search","args":{}}]},
 {"id":"m1","role":"tool","tool_call_id":"t1","content":"{}"},
 {"id":"m2","role":"user","content":"And now?"}
]`

// fold folds a history by the seed profile's rules, which the golden
// responses pin; foldFocus by the focus profile's.
func fold(t testing.TB, historyJSON string) (evidence.State, []checkpoint.Message) {
	t.Helper()
	return foldWith(t, historyJSON, &evidence.Config{Profile: evidence.ProfileSeed})
}

func foldFocus(t testing.TB, historyJSON string) (evidence.State, []checkpoint.Message) {
	t.Helper()
	return foldWith(t, historyJSON, nil)
}

func foldWith(t testing.TB, historyJSON string, cfg *evidence.Config) (evidence.State, []checkpoint.Message) {
	t.Helper()
	msgs, err := checkpoint.DecodeMessages([]byte(historyJSON))
	if err != nil {
		t.Fatal(err)
	}
	s, outcome, err := evidence.Fold(evidence.NewState(), msgs, cfg)
	if err != nil || outcome != checkpoint.Applied {
		t.Fatalf("Fold: %v, %v", outcome, err)
	}
	return s, msgs
}

// recordOf is the record a store keeps for s.
func recordOf(user, conv string, s *evidence.State) evidence.Record {
	rec := evidence.Record{
		UserID: user, ConversationID: conv,
		Version: s.Version, Cursor: s.Cursor, MessageCount: s.MessageCount, PrefixDigest: s.PrefixDigest,
		UpdatedAt: updatedAt,
		Body:      evidence.AppendBody(nil, s, 0),
	}
	if s.Shown != nil {
		rec.View, _ = json.Marshal(s.Shown)
	}
	return rec
}

// response is the GET …/evidence body.
type response struct {
	UserID          string                    `json:"user_id"`
	ConversationID  string                    `json:"conversation_id"`
	Version         int64                     `json:"version"`
	Cursor          int                       `json:"cursor"`
	MessageCount    int                       `json:"message_count"`
	PrefixDigest    string                    `json:"prefix_digest"`
	OmittedEntries  int                       `json:"omitted_entries"`
	EstimatedTokens int                       `json:"estimated_tokens"`
	Buckets         evidence.Buckets          `json:"buckets"`
	Message         *evidence.EvidenceMessage `json:"message"`
	UpdatedAt       *string                   `json:"updated_at"`
	Lagging         bool                      `json:"lagging"`
}

var responseKeys = []string{"buckets", "conversation_id", "cursor", "estimated_tokens", "lagging", "message",
	"message_count", "omitted_entries", "prefix_digest", "updated_at", "user_id", "version"}

// decode checks the response's status, headers and keys, and decodes it.
func decode(t *testing.T, w *httptest.ResponseRecorder) response {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200; body %s", w.Code, w.Body.String())
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, w.Body.String())
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if diff := cmp.Diff(responseKeys, keys); diff != "" {
		t.Errorf("response keys (-want +got):\n%s", diff)
	}
	var bucketKeys map[string]json.RawMessage
	if err := json.Unmarshal(raw["buckets"], &bucketKeys); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"constraints", "decisions", "open_work", "recent_context"} {
		if v := string(bucketKeys[b]); v == "" || v == "null" {
			t.Errorf("bucket %s = %q, want a list", b, v)
		}
	}
	var r response
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// golden compares body, indented, with testdata/name.json.
func golden(t *testing.T, name string, body []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		t.Fatalf("indent: %v", err)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./api -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func emptyBuckets() evidence.Buckets {
	return evidence.Buckets{Constraints: []evidence.Entry{}, Decisions: []evidence.Entry{}, OpenWork: []evidence.Entry{}, RecentContext: []evidence.Entry{}}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	tests := []struct {
		name    string
		src     api.Source
		cfg     *api.Config
		wantErr string
	}{
		{"no secret", src, &api.Config{Notifier: src}, "RECALL_JWT_SECRET"},
		{"nil config", src, nil, "RECALL_JWT_SECRET"},
		{"no notifier", src, &api.Config{JWTSecret: secret}, "Notifier"},
		{"no source", nil, &api.Config{JWTSecret: secret, Notifier: src}, "src"},
		{"negative wait", src, &api.Config{JWTSecret: secret, Notifier: src, MaxWait: -time.Second}, "MaxWait"},
		{"ok", src, &api.Config{JWTSecret: secret, Notifier: src}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := api.New(tt.src, tt.cfg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("New: %v, want an error naming %s", err, tt.wantErr)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	exp := time.Now().Add(time.Hour).Unix()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signWith := func(m jwt.SigningMethod, key any, claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(m, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name       string
		header     string // the whole Authorization header; "" sends none
		wantStatus int    // for GET; DELETE answers 204 where GET answers 200
	}{
		{"no token", "", 401},
		{"empty bearer", "Bearer ", 401},
		{"basic scheme", "Basic dXNlcjpwYXNz", 401},
		{"malformed", "Bearer not.a.jwt", 401},
		{"garbage", "Bearer abc", 401},
		{"bad signature", "Bearer " + signWith(jwt.SigningMethodHS256, []byte("another-secret"), jwt.MapClaims{"sub": "u-42", "exp": exp}), 401},
		{"expired", "Bearer " + sign(t, jwt.MapClaims{"sub": "u-42", "exp": time.Now().Add(-time.Minute).Unix()}), 401},
		{"missing exp", "Bearer " + sign(t, jwt.MapClaims{"sub": "u-42"}), 401},
		{"not yet valid", "Bearer " + sign(t, jwt.MapClaims{"sub": "u-42", "exp": exp, "nbf": time.Now().Add(time.Hour).Unix()}), 401},
		{"alg none", "Bearer " + signWith(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"sub": "u-42", "exp": exp}), 401},
		{"RS256", "Bearer " + signWith(jwt.SigningMethodRS256, rsaKey, jwt.MapClaims{"sub": "u-42", "exp": exp}), 401},
		{"HS512 with the right secret", "Bearer " + signWith(jwt.SigningMethodHS512, secret, jwt.MapClaims{"sub": "u-42", "exp": exp}), 401},
		{"no sub and no scope", "Bearer " + sign(t, jwt.MapClaims{"exp": exp}), 401},
		{"scope of the wrong type", "Bearer " + sign(t, jwt.MapClaims{"sub": "u-42", "exp": exp, "scope": 7}), 401},
		{"other user", "Bearer " + userToken(t, "u-43"), 403},
		{"scope without service", "Bearer " + sign(t, jwt.MapClaims{"sub": "u-43", "exp": exp, "scope": "recall:services read"}), 403},
		{"own conversation", "Bearer " + userToken(t, "u-42"), 200},
		{"lower-case scheme", "bearer " + userToken(t, "u-42"), 200},
		{"service scope string", "Bearer " + sign(t, jwt.MapClaims{"sub": "svc", "exp": exp, "scope": "read recall:service"}), 200},
		{"service scope list", "Bearer " + sign(t, jwt.MapClaims{"sub": "svc", "exp": exp, "scope": []string{"read", apiclient.ServiceScope}}), 200},
		{"service scope without sub", "Bearer " + sign(t, jwt.MapClaims{"exp": exp, "scope": apiclient.ServiceScope}), 200},
	}
	routes := []struct {
		method, target string
		okStatus       int
	}{
		{http.MethodGet, "/v1/users/u-42/conversations/c-7/evidence", 200},
		{http.MethodDelete, "/v1/users/u-42/conversations/c-7", 204},
	}
	for _, rt := range routes {
		for _, tt := range tests {
			t.Run(rt.method+"/"+tt.name, func(t *testing.T) {
				r := httptest.NewRequest(rt.method, rt.target, nil)
				if tt.header != "" {
					r.Header.Set("Authorization", tt.header)
				}
				w := httptest.NewRecorder()
				reads := b.src.reads.Load()
				b.h.ServeHTTP(w, r)
				want := tt.wantStatus
				if want == 200 {
					want = rt.okStatus
				}
				if w.Code != want {
					t.Fatalf("status = %d, want %d; body %s", w.Code, want, w.Body.String())
				}
				switch want {
				case 401:
					if code, _ := errorOf(t, w); code != api.CodeUnauthorized {
						t.Errorf("code = %q, want %q", code, api.CodeUnauthorized)
					}
					if !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
						t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", w.Header().Get("WWW-Authenticate"))
					}
				case 403:
					if code, _ := errorOf(t, w); code != api.CodeForbidden {
						t.Errorf("code = %q, want %q", code, api.CodeForbidden)
					}
				}
				if want >= 400 && b.src.reads.Load() != reads {
					t.Errorf("the store was read for a refused request")
				}
			})
		}
	}
}

func TestAuthBeforeValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := strings.Repeat("x", checkpoint.MaxKeyBytes+1)
	tests := []struct {
		name, target, token string
		wantStatus          int
	}{
		{"no token, long id", "/v1/users/" + long + "/conversations/c/evidence", "", 401},
		{"other user, long id", "/v1/users/" + long + "/conversations/c/evidence", userToken(t, "u-42"), 403},
		{"own user, long conversation", "/v1/users/u-42/conversations/" + long + "/evidence", userToken(t, "u-42"), 400},
		{"other user, bad query", "/v1/users/u-43/conversations/c/evidence?max_tokens=x", userToken(t, "u-42"), 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if w := do(t, b.h, http.MethodGet, tt.target, tt.token); w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.wantStatus, w.Body.String())
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := serviceToken(t)
	long := strings.Repeat("é", checkpoint.MaxKeyBytes/2) + "x" // 257 bytes
	tests := []struct {
		name     string
		method   string
		target   string
		wantCode string
	}{
		{"max_tokens zero", "GET", "/v1/users/u/conversations/c/evidence?max_tokens=0", api.CodeInvalidMaxTokens},
		{"max_tokens negative", "GET", "/v1/users/u/conversations/c/evidence?max_tokens=-5", api.CodeInvalidMaxTokens},
		{"max_tokens text", "GET", "/v1/users/u/conversations/c/evidence?max_tokens=lots", api.CodeInvalidMaxTokens},
		{"max_tokens empty", "GET", "/v1/users/u/conversations/c/evidence?max_tokens=", api.CodeInvalidMaxTokens},
		{"min_cursor negative", "GET", "/v1/users/u/conversations/c/evidence?min_cursor=-1", api.CodeInvalidMinCursor},
		{"min_cursor text", "GET", "/v1/users/u/conversations/c/evidence?min_cursor=two", api.CodeInvalidMinCursor},
		{"min_cursor float", "GET", "/v1/users/u/conversations/c/evidence?min_cursor=1.5", api.CodeInvalidMinCursor},
		{"wait over the cap", "GET", "/v1/users/u/conversations/c/evidence?min_cursor=1&wait=31s", api.CodeWaitTooLong},
		{"wait over the cap in seconds", "GET", "/v1/users/u/conversations/c/evidence?min_cursor=1&wait=30.5", api.CodeWaitTooLong},
		{"wait huge", "GET", "/v1/users/u/conversations/c/evidence?min_cursor=1&wait=1e300", api.CodeWaitTooLong},
		{"wait negative", "GET", "/v1/users/u/conversations/c/evidence?min_cursor=1&wait=-1s", api.CodeInvalidWait},
		{"wait negative seconds", "GET", "/v1/users/u/conversations/c/evidence?min_cursor=1&wait=-2", api.CodeInvalidWait},
		{"wait text", "GET", "/v1/users/u/conversations/c/evidence?min_cursor=1&wait=soon", api.CodeInvalidWait},
		{"wait NaN", "GET", "/v1/users/u/conversations/c/evidence?min_cursor=1&wait=NaN", api.CodeInvalidWait},
		{"long user id", "GET", "/v1/users/" + long + "/conversations/c/evidence", api.CodeInvalidID},
		{"long conversation id", "GET", "/v1/users/u/conversations/" + long + "/evidence", api.CodeInvalidID},
		{"long user id on delete", "DELETE", "/v1/users/" + long + "/conversations/c", api.CodeInvalidID},
		{"long conversation id on delete", "DELETE", "/v1/users/u/conversations/" + long, api.CodeInvalidID},
		{"invalid UTF-8 id", "GET", "/v1/users/%ff/conversations/c/evidence", api.CodeInvalidID},
		{"NUL in id", "GET", "/v1/users/u/conversations/a%00b/evidence", api.CodeInvalidID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(t, b.h, tt.method, tt.target, tok)
			if w.Code != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400; body %s", w.Code, w.Body.String())
			}
			if code, _ := errorOf(t, w); code != tt.wantCode {
				t.Errorf("code = %q, want %q", code, tt.wantCode)
			}
		})
	}
	if n := b.src.reads.Load(); n != 0 {
		t.Errorf("the store was read %d times for refused requests", n)
	}

	t.Run("ids of exactly 256 bytes", func(t *testing.T) {
		id := strings.Repeat("é", checkpoint.MaxKeyBytes/2)
		w := do(t, b.h, "GET", "/v1/users/"+id+"/conversations/"+id+"/evidence", tok)
		if r := decode(t, w); r.UserID != id || r.ConversationID != id {
			t.Errorf("ids = %q, %q, want both %q", r.UserID, r.ConversationID, id)
		}
	})
	t.Run("accepted query forms", func(t *testing.T) {
		for _, q := range []string{"wait=2", "wait=0.5", "wait=500ms", "wait=30s", "min_cursor=0&wait=30s", "unknown=1", "max_tokens=10&min_cursor=0"} {
			if w := do(t, b.h, "GET", "/v1/users/u/conversations/c/evidence?"+q, tok); w.Code != 200 {
				t.Errorf("?%s: status = %d, want 200; body %s", q, w.Code, w.Body.String())
			}
		}
	})
}

func TestEvidenceResponses(t *testing.T) {
	t.Parallel()
	live, msgs := fold(t, history)
	wantPrefix, err := checkpoint.PrefixDigest(msgs, 6)
	if err != nil {
		t.Fatal(err)
	}
	if live.Cursor != 6 || live.Buckets.Len() != 4 {
		t.Fatalf("fixture: cursor %d with %d entries, want 6 and 4", live.Cursor, live.Buckets.Len())
	}
	sentinel, _ := fold(t, sentinelHistory)
	wantUpdated := "2026-01-02T03:04:05.123456789Z"
	liveMessage := evidence.Render(&live)

	unknown := response{
		UserID: "u-42", ConversationID: "c-7", PrefixDigest: checkpoint.ChainStart().String(), Buckets: emptyBuckets(),
	}
	tests := []struct {
		name   string
		stored *evidence.State // nil: nothing stored
		del    bool            // DELETE before the GET
		query  string
		want   response
	}{
		{name: "unknown", want: unknown},
		{name: "deleted", stored: &live, del: true, want: unknown},
		{
			name: "live", stored: &live,
			want: response{
				UserID: "u-42", ConversationID: "c-7", Version: 1, Cursor: 6, MessageCount: 7,
				PrefixDigest: wantPrefix.String(), EstimatedTokens: evidence.EstimateTokens(len(liveMessage.Content)),
				Buckets: live.Buckets, Message: liveMessage, UpdatedAt: &wantUpdated,
			},
		},
		{
			name: "sentinel", stored: &sentinel,
			want: response{
				UserID: "u-42", ConversationID: "c-7", Version: 1, Cursor: 2, MessageCount: 3,
				PrefixDigest: sentinel.PrefixDigest.String(), EstimatedTokens: evidence.EstimateTokens(len(evidence.Sentinel)),
				Buckets: emptyBuckets(), Message: &evidence.EvidenceMessage{Role: checkpoint.RoleAssistant, Content: evidence.Sentinel},
				UpdatedAt: &wantUpdated,
			},
		},
		{
			name: "max_tokens_too_small", stored: &live, query: "?max_tokens=1",
			want: response{
				UserID: "u-42", ConversationID: "c-7", Version: 1, Cursor: 6, MessageCount: 7,
				PrefixDigest: wantPrefix.String(), Buckets: live.Buckets, UpdatedAt: &wantUpdated,
			},
		},
		{
			name: "max_tokens_large", stored: &live, query: "?max_tokens=100000",
			want: response{
				UserID: "u-42", ConversationID: "c-7", Version: 1, Cursor: 6, MessageCount: 7,
				PrefixDigest: wantPrefix.String(), EstimatedTokens: evidence.EstimateTokens(len(liveMessage.Content)),
				Buckets: live.Buckets, Message: liveMessage, UpdatedAt: &wantUpdated,
			},
		},
		{
			name: "sentinel_max_tokens_too_small", stored: &sentinel, query: "?max_tokens=5",
			want: response{
				UserID: "u-42", ConversationID: "c-7", Version: 1, Cursor: 2, MessageCount: 3,
				PrefixDigest: sentinel.PrefixDigest.String(), Buckets: emptyBuckets(), UpdatedAt: &wantUpdated,
			},
		},
		{
			name: "lagging", stored: &live, query: "?min_cursor=7",
			want: response{
				UserID: "u-42", ConversationID: "c-7", Version: 1, Cursor: 6, MessageCount: 7,
				PrefixDigest: wantPrefix.String(), EstimatedTokens: evidence.EstimateTokens(len(liveMessage.Content)),
				Buckets: live.Buckets, Message: liveMessage, UpdatedAt: &wantUpdated, Lagging: true,
			},
		},
		{
			name: "not_lagging", stored: &live, query: "?min_cursor=6",
			want: response{
				UserID: "u-42", ConversationID: "c-7", Version: 1, Cursor: 6, MessageCount: 7,
				PrefixDigest: wantPrefix.String(), EstimatedTokens: evidence.EstimateTokens(len(liveMessage.Content)),
				Buckets: live.Buckets, Message: liveMessage, UpdatedAt: &wantUpdated,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tok := userToken(t, "u-42")
			if tt.stored != nil {
				b.src.set(recordOf("u-42", "c-7", tt.stored))
			}
			if tt.del {
				if w := do(t, b.h, http.MethodDelete, "/v1/users/u-42/conversations/c-7", tok); w.Code != http.StatusNoContent || w.Body.Len() != 0 {
					t.Fatalf("DELETE: status %d, body %q; want 204 and no body", w.Code, w.Body.String())
				}
				if !slices.Equal(b.src.deleted, []key{{"u-42", "c-7"}}) {
					t.Fatalf("deleted = %v, want the one key", b.src.deleted)
				}
			}
			w := do(t, b.h, http.MethodGet, "/v1/users/u-42/conversations/c-7/evidence"+tt.query, tok)
			got := decode(t, w)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if n := b.src.reads.Load(); n != 1 {
				t.Errorf("%d reads, want 1", n)
			}
			golden(t, tt.name, w.Body.Bytes())
		})
	}
}

func TestMaxTokensDropsEntries(t *testing.T) {
	t.Parallel()
	for name, fold := range map[string]func(testing.TB, string) (evidence.State, []checkpoint.Message){"seed": fold, "focus": foldFocus} {
		t.Run(name, func(t *testing.T) { testMaxTokensDropsEntries(t, fold) })
	}
}

func testMaxTokensDropsEntries(t *testing.T, fold func(testing.TB, string) (evidence.State, []checkpoint.Message)) {
	b := setup(t)
	live, _ := fold(t, history)
	b.src.set(recordOf("u-42", "c-7", &live))
	full := evidence.Render(&live)
	budget := evidence.EstimateTokens(len(full.Content)) - 1
	w := do(t, b.h, http.MethodGet, "/v1/users/u-42/conversations/c-7/evidence?max_tokens="+strconv.Itoa(budget), userToken(t, "u-42"))
	got := decode(t, w)
	want := evidence.RenderWithin(&live, budget)
	if want == nil || got.Message == nil {
		t.Fatalf("message = %v, want %v", got.Message, want)
	}
	if diff := cmp.Diff(want, got.Message); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	if got.EstimatedTokens > budget || got.EstimatedTokens != evidence.EstimateTokens(len(want.Content)) {
		t.Errorf("estimated_tokens = %d, want %d (within %d)", got.EstimatedTokens, evidence.EstimateTokens(len(want.Content)), budget)
	}
	// Entries are objects in the seed profile's message and model lines in
	// focus's; count them either way.
	var content struct {
		OmittedEntries int                          `json:"omitted_entries"`
		Buckets        map[string][]json.RawMessage `json:"buckets"`
	}
	if err := json.Unmarshal([]byte(got.Message.Content), &content); err != nil {
		t.Fatalf("message content is not JSON: %v", err)
	}
	n := 0
	for _, l := range content.Buckets {
		n += len(l)
	}
	if n != live.Buckets.Len()-1 || content.OmittedEntries != 1 {
		t.Errorf("message holds %d entries with omitted_entries %d, want %d and 1", n, content.OmittedEntries, live.Buckets.Len()-1)
	}
	if diff := cmp.Diff(live.Buckets, got.Buckets); diff != "" {
		t.Errorf("buckets changed (-want +got):\n%s", diff)
	}
	if got.OmittedEntries != live.OmittedEntries {
		t.Errorf("omitted_entries = %d, want the state's %d", got.OmittedEntries, live.OmittedEntries)
	}
}

func TestEscapedIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// %2F keeps a slash inside one segment; the response names the decoded id.
	w := do(t, b.h, http.MethodGet, "/v1/users/team%2Fa/conversations/%3Cc%3E%22/evidence", userToken(t, "team/a"))
	got := decode(t, w)
	if got.UserID != "team/a" || got.ConversationID != `<c>"` {
		t.Errorf("ids = %q, %q; want %q, %q", got.UserID, got.ConversationID, "team/a", `<c>"`)
	}
	if strings.Contains(w.Body.String(), "<") {
		t.Errorf("body carries an unescaped <: %s", w.Body.String())
	}
}

func TestRouting(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := userToken(t, "u-42")
	tests := []struct {
		name, method, target string
		wantStatus           int
		wantCode             string
		wantAllow            string
	}{
		{"unknown route", "GET", "/v1/nope", 404, api.CodeNotFound, ""},
		{"root", "GET", "/", 404, api.CodeNotFound, ""},
		{"evidence of a user", "GET", "/v1/users/u-42/evidence", 404, api.CodeNotFound, ""},
		{"trailing segment", "GET", "/v1/users/u-42/conversations/c-7/evidence/more", 404, api.CodeNotFound, ""},
		{"POST evidence", "POST", "/v1/users/u-42/conversations/c-7/evidence", 405, api.CodeMethodNotAllowed, "GET, HEAD"},
		{"PUT conversation", "PUT", "/v1/users/u-42/conversations/c-7", 405, api.CodeMethodNotAllowed, "DELETE"},
		{"GET conversation", "GET", "/v1/users/u-42/conversations/c-7", 405, api.CodeMethodNotAllowed, "DELETE"},
		{"POST healthz", "POST", "/healthz", 405, api.CodeMethodNotAllowed, "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(t, b.h, tt.method, tt.target, tok)
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.wantStatus, w.Body.String())
			}
			if code, _ := errorOf(t, w); code != tt.wantCode {
				t.Errorf("code = %q, want %q", code, tt.wantCode)
			}
			if got := w.Header().Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
		})
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	var readyErr error
	h, err := api.New(src, &api.Config{
		JWTSecret: secret, Notifier: src,
		Ready: func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); !ok {
				return errors.New("no deadline")
			}
			return readyErr
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if w := do(t, h, "GET", "/healthz", ""); w.Code != 200 || w.Body.String() != "{\"status\":\"ok\"}\n" {
		t.Errorf("/healthz: %d %q", w.Code, w.Body.String())
	}
	if w := do(t, h, "GET", "/readyz", ""); w.Code != 200 {
		t.Errorf("/readyz: %d %q", w.Code, w.Body.String())
	}
	readyErr = errors.New("dial tcp 127.0.0.1:5432: connection refused")
	w := do(t, h, "GET", "/readyz", "")
	if w.Code != 503 {
		t.Errorf("/readyz with Postgres down: %d, want 503", w.Code)
	}
	if code, _ := errorOf(t, w); code != api.CodeNotReady {
		t.Errorf("code = %q, want %q", code, api.CodeNotReady)
	}
	readyErr = nil
	h.SetDraining()
	h.SetDraining() // idempotent
	w = do(t, h, "GET", "/readyz", "")
	if w.Code != 503 {
		t.Errorf("/readyz while draining: %d, want 503", w.Code)
	}
	if code, _ := errorOf(t, w); code != api.CodeDraining {
		t.Errorf("code = %q, want %q", code, api.CodeDraining)
	}
	if w := do(t, h, "GET", "/healthz", ""); w.Code != 200 {
		t.Errorf("/healthz while draining: %d, want 200", w.Code)
	}
	if w := do(t, h, "GET", "/metrics", ""); w.Code != 200 || !strings.Contains(w.Body.String(), "recall_http_requests_total") {
		t.Errorf("/metrics: %d, want 200 with recall_http_requests_total", w.Code)
	}
}

func TestMetricsUseRoutePatterns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := userToken(t, "u-secret-id")
	do(t, b.h, "GET", "/v1/users/u-secret-id/conversations/c-secret-conv/evidence", tok)
	do(t, b.h, "GET", "/v1/users/u-secret-id/conversations/c-secret-conv/evidence", "")
	do(t, b.h, "DELETE", "/v1/users/u-secret-id/conversations/c-secret-conv", tok)
	do(t, b.h, "GET", "/v1/users/u-secret-id/nowhere", tok)

	got := map[string]float64{}
	families, err := b.metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "secret") {
					t.Errorf("metric %s has label %s=%q carrying an id", f.GetName(), l.GetName(), l.GetValue())
				}
			}
			if f.GetName() == "recall_http_requests_total" {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				got[labels["route"]+" "+labels["code"]] = m.GetCounter().GetValue()
			}
		}
	}
	want := map[string]float64{
		evidenceRoute + " 200": 1,
		evidenceRoute + " 401": 1,
		deleteRoute + " 204":   1,
		"unmatched 404":        1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recall_http_requests_total (-want +got):\n%s", diff)
	}
	w := do(t, b.h, "GET", "/metrics", "")
	if strings.Contains(w.Body.String(), "secret") {
		t.Errorf("/metrics carries an id")
	}
	if !strings.Contains(w.Body.String(), `recall_http_request_duration_seconds_count{route="`+evidenceRoute+`"} 2`) {
		t.Errorf("/metrics lacks the latency of the evidence route:\n%s", w.Body.String())
	}
}

func TestSourceErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.src.err = errors.New(`query failed near "We must ship by Friday" for u-42`)
	tok := userToken(t, "u-42")
	for _, rt := range []struct{ method, target string }{
		{"GET", "/v1/users/u-42/conversations/c-7/evidence"},
		{"DELETE", "/v1/users/u-42/conversations/c-7"},
	} {
		w := do(t, b.h, rt.method, rt.target, tok)
		if w.Code != 500 {
			t.Fatalf("%s: status = %d, want 500", rt.method, w.Code)
		}
		code, msg := errorOf(t, w)
		if code != api.CodeInternal || strings.Contains(msg, "Friday") || strings.Contains(msg, "u-42") {
			t.Errorf("%s: error %q %q leaks the cause", rt.method, code, msg)
		}
	}
	if !strings.Contains(b.logs.String(), "route=") {
		t.Errorf("server error not logged with its route: %s", b.logs.String())
	}
	b.src.err = context.DeadlineExceeded
	if w := do(t, b.h, "GET", "/v1/users/u-42/conversations/c-7/evidence", tok); w.Code != 503 {
		t.Errorf("store timeout: status = %d, want 503", w.Code)
	}
}

func TestNewServer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := api.NewServer("127.0.0.1:0", b.h)
	if s.Handler != b.h || s.Addr != "127.0.0.1:0" {
		t.Fatalf("server does not serve the handler on the address")
	}
	if s.WriteTimeout <= b.h.MaxWait() || s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Errorf("timeouts: write %v (max wait %v), read header %v, read %v, idle %v, max header bytes %d",
			s.WriteTimeout, b.h.MaxWait(), s.ReadHeaderTimeout, s.ReadTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
}

func TestCachedTokenStillExpires(t *testing.T) {
	t.Parallel()
	b := setup(t)
	exp := time.Now().Add(1500 * time.Millisecond)
	tok := sign(t, jwt.MapClaims{"sub": "u-42", "exp": exp.Unix()})
	for range 3 {
		if w := do(t, b.h, "GET", "/v1/users/u-42/conversations/c-7/evidence", tok); w.Code != 200 {
			t.Fatalf("status = %d before exp, want 200", w.Code)
		}
	}
	// Another user with the same (cached) token is still refused.
	if w := do(t, b.h, "GET", "/v1/users/u-43/conversations/c-7/evidence", tok); w.Code != 403 {
		t.Fatalf("status = %d for another user, want 403", w.Code)
	}
	time.Sleep(time.Until(exp.Truncate(time.Second)) + 100*time.Millisecond)
	if w := do(t, b.h, "GET", "/v1/users/u-42/conversations/c-7/evidence", tok); w.Code != 401 {
		t.Fatalf("status = %d after exp, want 401", w.Code)
	}
}
