package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// fuzzSource is a Source and Notifier with one fixed record.
type fuzzSource struct{}

func (fuzzSource) Evidence(_ context.Context, userID, conversationID string) (evidence.Record, error) {
	s := evidence.NewState()
	s.Version, s.Cursor, s.MessageCount = 3, 4, 5
	s.Buckets.Decisions = append(s.Buckets.Decisions, evidence.Entry{Role: "assistant", MessageID: "m3", Index: 3, Excerpt: "Agreed: we'll use Postgres."})
	return evidence.Record{UserID: userID, ConversationID: conversationID, Version: 3, Cursor: 4, MessageCount: 5,
		PrefixDigest: checkpoint.ChainStart(), Body: evidence.AppendBody(nil, &s, 0)}, nil
}

func (f fuzzSource) Search(ctx context.Context, userID, conversationID, _ string) (evidence.Record, error) {
	return f.Evidence(ctx, userID, conversationID)
}

func (fuzzSource) DeleteConversation(context.Context, string, string) error { return nil }

func (fuzzSource) Subscribe(string, string) (<-chan struct{}, func()) {
	return make(chan struct{}), func() {}
}

// fuzzQueries seeds the query fuzzers: the forms the contract names and
// the edges of each parser.
var fuzzQueries = []string{
	"", "max_tokens=100", "min_cursor=4&wait=2s", "min_cursor=5&wait=0.01", "wait=500ms", "wait=2",
	"max_tokens=0", "max_tokens=-1", "max_tokens=+7", "max_tokens=9223372036854775808", "max_tokens=1e3",
	"min_cursor=-1", "min_cursor=abc", "min_cursor=", "wait=-1s", "wait=-0", "wait=NaN", "wait=Inf", "wait=-Inf",
	"wait=1e400", "wait=9223372036.854775807", "wait=1h", "wait=0x10", "wait=1_000", "wait=%ff", "wait=2s&wait=3s",
	"max_tokens=1&max_tokens=x", "min_cursor=3&min_cursor=-4", "min_version=7", "min_version=-1", "min_version=x&min_cursor=2", "wait", "max_tokens", "%zz", ";", "a=b;c=d",
}

func fuzzHandler(f *testing.F, maxWait time.Duration) *Handler {
	f.Helper()
	h, err := New(fuzzSource{}, &Config{JWTSecret: []byte("fuzz-secret"), Notifier: fuzzSource{}, MaxWait: maxWait})
	if err != nil {
		f.Fatal(err)
	}
	return h
}

// FuzzParseEvidenceQuery checks the evidence query parser on any query
// string: it never panics, what it accepts is within the contract's bounds,
// and what it refuses is a 400 with one of the query's error codes.
func FuzzParseEvidenceQuery(f *testing.F) {
	for _, q := range fuzzQueries {
		f.Add(q)
	}
	h := fuzzHandler(f, 0)
	f.Fuzz(func(t *testing.T, rawQuery string) {
		q, _ := url.ParseQuery(rawQuery) // what it could parse, as net/http does
		eq, err := h.parseEvidenceQuery(q)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%q: error %T %v, want *Error", rawQuery, err, err)
			}
			switch e.Code {
			case CodeInvalidMaxTokens, CodeInvalidMinCursor, CodeInvalidMinVersion, CodeInvalidWait, CodeWaitTooLong:
			default:
				t.Fatalf("%q: code %q", rawQuery, e.Code)
			}
			if e.Status != http.StatusBadRequest {
				t.Fatalf("%q: status %d, want 400", rawQuery, e.Status)
			}
			return
		}
		switch {
		case eq.maxTokens < 0 || (eq.maxTokens == 0) == q.Has("max_tokens"):
			t.Fatalf("%q: max_tokens %d", rawQuery, eq.maxTokens)
		case eq.minCursor < 0:
			t.Fatalf("%q: min_cursor %d", rawQuery, eq.minCursor)
		case eq.minVersion < 0:
			t.Fatalf("%q: min_version %d", rawQuery, eq.minVersion)
		case eq.wait < 0 || eq.wait > h.MaxWait():
			t.Fatalf("%q: wait %s, want within [0, %s]", rawQuery, eq.wait, h.MaxWait())
		}
	})
}

// FuzzEvidenceRequest sends a GET …/evidence with any query string through
// the whole handler: the answer is 200 with the evidence or 400 with the
// contract's error body, always valid JSON, and never waits longer than the
// handler allows.
func FuzzEvidenceRequest(f *testing.F) {
	for _, q := range fuzzQueries {
		f.Add(q)
	}
	const maxWait = 20 * time.Millisecond
	h := fuzzHandler(f, maxWait)
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "u-42", "exp": time.Now().Add(24 * time.Hour).Unix()}).
		SignedString([]byte("fuzz-secret"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		u := &url.URL{Path: "/v1/users/u-42/conversations/c-7/evidence", RawQuery: rawQuery}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL, req.RequestURI = u, u.RequestURI()
		req.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(w, req)
		if took := time.Since(start); took > maxWait+2*time.Second {
			t.Fatalf("%q: took %s, more than the longest wait %s", rawQuery, took, maxWait)
		}
		body := w.Body.Bytes()
		if !json.Valid(body) {
			t.Fatalf("%q: status %d, body not JSON: %q", rawQuery, w.Code, body)
		}
		switch w.Code {
		case http.StatusOK:
			var r struct {
				UserID  string          `json:"user_id"`
				Cursor  *int            `json:"cursor"`
				Message json.RawMessage `json:"message"`
				Lagging *bool           `json:"lagging"`
			}
			if err := json.Unmarshal(body, &r); err != nil || r.UserID != "u-42" || r.Cursor == nil || r.Lagging == nil || r.Message == nil {
				t.Fatalf("%q: 200 with %s (%v)", rawQuery, body, err)
			}
		case http.StatusBadRequest:
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%q: 400 with %s", rawQuery, body)
			}
		default:
			t.Fatalf("%q: status %d: %s", rawQuery, w.Code, body)
		}
	})
}
