package api_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/recallhq/recall/api"
)

// The fuzzers below post arbitrary bodies to the routes that take one:
// every answer has a status the route documents and a well-formed JSON
// body (the error body for errors), never a server error, and an error
// never quotes the body back.

func FuzzSearchBody(f *testing.F) {
	for _, s := range []string{`{"query": "what did we decide?"}`, `{"query": "x", "max_tokens": 5}`, `{"query": ""}`, `{}`,
		`{"query": 7}`, `{"query": "x", "max_tokens": -1}`, `{"query": "x", "max_tokens": 1e300}`, `{"query": "\u0000\ud800"}`, `[`, ``} {
		f.Add([]byte(s))
	}
	h, tok := fuzzBodyHandler(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkBodyAnswer(t, h, "/v1/users/u-42/conversations/c-7/evidence/search", tok, body, http.StatusOK)
	})
}

func FuzzContextBody(f *testing.F) {
	for _, s := range []string{`{"messages": ` + history + `}`, `{"messages": ` + history + `, "system": "s", "budget": {"prompt": 50}}`,
		`{"messages": []}`, `{"messages": [{"role": "robot", "content": "x"}]}`, `{"messages": ` + history + `, "budget": {"context_window": -1}}`,
		`{"messages": ` + history + `, "wait": "2s", "min_cursor": 99}`, `{"messages": "x"}`, `null`, ``} {
		f.Add([]byte(s))
	}
	h, tok := fuzzBodyHandler(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkBodyAnswer(t, h, "/v1/users/u-42/conversations/c-7/context", tok, body, http.StatusOK)
	})
}

func FuzzIngestBody(f *testing.F) {
	for _, s := range []string{snapshotEvent("e1", "u-42"), snapshotEvent("e2", "someone-else"), `{"schema": "recall.checkpoint.v2"}`,
		`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u-42","conversation_id":"c","offset":9223372036854775807,"messages":[]}`,
		`{"schema":"recall.checkpoint.v1","kind":"delete","event_id":"d","user_id":"u-42","conversation_id":"c"}`, "\xff", ``} {
		f.Add([]byte(s))
	}
	h, tok := fuzzBodyHandler(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkBodyAnswer(t, h, "/v1/checkpoints", tok, body, http.StatusAccepted)
	})
}

// fuzzBodyHandler serves a conversation with evidence for u-42, and takes
// checkpoints into an in-memory stream; tok is u-42's token.
func fuzzBodyHandler(f *testing.F) (http.Handler, string) {
	src := newFakeSource()
	live, _ := foldFocus(f, history)
	src.set(recordOf("u-42", "c-7", &live))
	h, err := api.New(src, &api.Config{
		JWTSecret: secret, Notifier: src, Publisher: newFakePublisher(), MaxWait: 1,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		f.Fatal(err)
	}
	return h, userToken(f, "u-42")
}

func checkBodyAnswer(t *testing.T, h http.Handler, path, tok string, body []byte, ok int) {
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	switch w.Code {
	case ok, http.StatusBadRequest, http.StatusForbidden, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
	default:
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if !json.Valid(w.Body.Bytes()) {
		t.Fatalf("status %d with a body that is not JSON: %q", w.Code, w.Body)
	}
	if w.Code == ok {
		return
	}
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("status %d with a body that is not the error body: %s", w.Code, w.Body)
	}
	if len(body) >= 16 && bytes.Contains([]byte(e.Error.Message), body) {
		t.Fatalf("the error quotes the body: %s", w.Body)
	}
}
