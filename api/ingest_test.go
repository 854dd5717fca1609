package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/checkpoint"
)

// fakePublisher is an in-memory stream: it numbers events, reports a
// repeated event id as a duplicate, and can fail or hold each publish.
type fakePublisher struct {
	mu     sync.Mutex
	seq    uint64
	byID   map[string]uint64
	events [][]byte
	err    error
	// hold, when set, is waited on before each ack.
	hold chan struct{}
}

func newFakePublisher() *fakePublisher { return &fakePublisher{byID: map[string]uint64{}} }

func (p *fakePublisher) Publish(ctx context.Context, eventID string, data []byte) (uint64, bool, error) {
	if p.hold != nil {
		select {
		case <-p.hold:
		case <-ctx.Done():
			return 0, false, ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return 0, false, p.err
	}
	if seq, ok := p.byID[eventID]; ok {
		return seq, true, nil
	}
	p.seq++
	p.byID[eventID] = p.seq
	p.events = append(p.events, append([]byte(nil), data...))
	return p.seq, false, nil
}

func (p *fakePublisher) stored() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.events)
}

func setupIngest(t *testing.T, limits checkpoint.Limits) (*api.Handler, *fakePublisher) {
	t.Helper()
	src := newFakeSource()
	pub := newFakePublisher()
	h, err := api.New(src, &api.Config{
		JWTSecret: secret, Notifier: src, Publisher: pub, Limits: limits,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return h, pub
}

// snapshotEvent is a valid snapshot of history for u-42 / c-7.
func snapshotEvent(eventID, userID string) string {
	return fmt.Sprintf(`{"schema":"recall.checkpoint.v1","event_id":%q,"user_id":%q,"conversation_id":"c-7","offset":0,"prefix_digest":null,"messages":%s}`,
		eventID, userID, history)
}

func TestIngest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		token      string
		body       string
		wantStatus int
		wantCode   string // for errors
		wantStored int
	}{
		{"own user", userToken(t, "u-42"), snapshotEvent("e1", "u-42"), 202, "", 1},
		{"service token for any user", serviceToken(t), snapshotEvent("e1", "u-99"), 202, "", 1},
		{"delete event", userToken(t, "u-42"), `{"schema":"recall.checkpoint.v1","kind":"delete","event_id":"d1","user_id":"u-42","conversation_id":"c-7"}`, 202, "", 1},
		{"another user's event", userToken(t, "u-43"), snapshotEvent("e1", "u-42"), 403, api.CodeForbidden, 0},
		{"no token", "", snapshotEvent("e1", "u-42"), 401, api.CodeUnauthorized, 0},
		{"not JSON", userToken(t, "u-42"), `{"schema":`, 400, "malformed", 0},
		{"not UTF-8", userToken(t, "u-42"), "{\"schema\":\"\xff\"}", 400, "malformed", 0},
		{"no user_id", userToken(t, "u-42"), `{"schema":"recall.checkpoint.v1","event_id":"e1","conversation_id":"c-7","messages":[]}`, 400, "invalid", 0},
		{"bad message", userToken(t, "u-42"), `{"schema":"recall.checkpoint.v1","event_id":"e1","user_id":"u-42","conversation_id":"c-7","messages":[{"role":"robot","content":"x"}]}`, 400, "invalid", 0},
		{"append without prefix digest", userToken(t, "u-42"), `{"schema":"recall.checkpoint.v1","event_id":"e1","user_id":"u-42","conversation_id":"c-7","offset":3,"messages":[]}`, 400, "invalid", 0},
		{"other schema", userToken(t, "u-42"), `{"schema":"recall.checkpoint.v2","event_id":"e1","user_id":"u-42","conversation_id":"c-7","messages":[]}`, 400, "unsupported_schema", 0},
		{"too large", userToken(t, "u-42"), snapshotEvent("e1", "u-42") + strings.Repeat(" ", 4096), 413, "too_large", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, pub := setupIngest(t, checkpoint.Limits{MaxEventBytes: len(snapshotEvent("e1", "u-42")) + 100})
			w := post(t, h, "/v1/checkpoints", tt.token, tt.body)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %s", w.Code, tt.wantStatus, w.Body.String())
			}
			if tt.wantCode != "" {
				if code, _ := errorOf(t, w); code != tt.wantCode {
					t.Errorf("error code %q, want %q", code, tt.wantCode)
				}
			} else {
				var got map[string]any
				if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
					t.Fatal(err)
				}
				want := map[string]any{"stream_seq": float64(1), "duplicate": false}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("body %s, want %v", w.Body.String(), want)
				}
			}
			if n := pub.stored(); n != tt.wantStored {
				t.Errorf("%d events stored, want %d", n, tt.wantStored)
			}
			if tt.wantStored == 1 && string(pub.events[0]) != tt.body {
				t.Errorf("stored %q, want the body as sent", pub.events[0])
			}
		})
	}
}

// TestIngestTooDeep: an event nested deeper than the parser follows is
// answered 400 malformed with a message that says so.
func TestIngestTooDeep(t *testing.T) {
	t.Parallel()
	h, pub := setupIngest(t, checkpoint.Limits{})
	n := checkpoint.MaxEventDepth
	body := `{"schema":"recall.checkpoint.v1","event_id":"e1","user_id":"u-42","conversation_id":"c-7","messages":[{"role":"user","content":"hi","x":` +
		strings.Repeat("[", n) + strings.Repeat("]", n) + `}]}`
	w := post(t, h, "/v1/checkpoints", userToken(t, "u-42"), body)
	if w.Code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400; body %s", w.Code, w.Body.String())
	}
	code, message := errorOf(t, w)
	if want := fmt.Sprintf("event is nested deeper than %d levels", n); code != "malformed" || message != want {
		t.Errorf("error %s %q, want malformed %q", code, message, want)
	}
	if n := pub.stored(); n != 0 {
		t.Errorf("%d events stored, want 0", n)
	}
}

func TestIngestDuplicate(t *testing.T) {
	t.Parallel()
	h, pub := setupIngest(t, checkpoint.Limits{})
	tok := userToken(t, "u-42")
	for i, want := range []string{`{"stream_seq":1,"duplicate":false}`, `{"stream_seq":1,"duplicate":true}`} {
		w := post(t, h, "/v1/checkpoints", tok, snapshotEvent("same-id", "u-42"))
		if w.Code != http.StatusAccepted || strings.TrimSpace(w.Body.String()) != want {
			t.Errorf("publish %d: %d %s, want 202 %s", i+1, w.Code, w.Body.String(), want)
		}
	}
	if w := post(t, h, "/v1/checkpoints", tok, snapshotEvent("other-id", "u-42")); strings.TrimSpace(w.Body.String()) != `{"stream_seq":2,"duplicate":false}` {
		t.Errorf("a new event id: %s, want stream_seq 2", w.Body.String())
	}
	if n := pub.stored(); n != 2 {
		t.Errorf("%d events stored, want 2", n)
	}
}

// TestIngestAnswersAfterAck checks that the 202 waits for the stream's ack.
func TestIngestAnswersAfterAck(t *testing.T) {
	t.Parallel()
	h, pub := setupIngest(t, checkpoint.Limits{})
	pub.hold = make(chan struct{})
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- post(t, h, "/v1/checkpoints", userToken(t, "u-42"), snapshotEvent("e1", "u-42")) }()
	select {
	case w := <-done:
		t.Fatalf("answered %d before the stream acknowledged the event", w.Code)
	case <-time.After(100 * time.Millisecond):
	}
	close(pub.hold)
	if w := <-done; w.Code != http.StatusAccepted {
		t.Fatalf("status %d after the ack, want 202; %s", w.Code, w.Body.String())
	}
}

func TestIngestStreamErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		err         error
		wantMessage string
	}{
		{"no stream", fmt.Errorf("publish: %w", api.ErrNoStream), "start a recall worker"},
		{"no ack", errors.New("nats: timeout"), "retry with the same event_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, pub := setupIngest(t, checkpoint.Limits{})
			pub.err = tt.err
			w := post(t, h, "/v1/checkpoints", userToken(t, "u-42"), snapshotEvent("e1", "u-42"))
			if w.Code != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want 503; %s", w.Code, w.Body.String())
			}
			if code, msg := errorOf(t, w); code != api.CodeUnavailable || !strings.Contains(msg, tt.wantMessage) {
				t.Errorf("error %s: %s, want %s mentioning %q", code, msg, api.CodeUnavailable, tt.wantMessage)
			}
		})
	}
}

func TestIngestWithoutPublisher(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := post(t, b.h, "/v1/checkpoints", userToken(t, "u-42"), snapshotEvent("e1", "u-42"))
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503; %s", w.Code, w.Body.String())
	}
}
