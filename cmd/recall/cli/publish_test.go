package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/worker"
)

const publishTestHistory = `{"user_id":"u-42","conversation_id":"c-7","messages":[
 {"id":"m0","role":"user","content":"We must ship by Friday."},
 {"id":"m1","role":"assistant","content":"","tool_calls":[{"id":"t1","name":"search","args":{}}]},
 {"id":"m2","role":"tool","tool_call_id":"t1","content":"{}","artifact":{"rows":[]}},
 {"id":"m3","role":"assistant","content":"Agreed: we'll use Postgres."},
 {"id":"m4","role":"user","content":"Next, draft the schema."},
 {"type":"ai","data":{"id":"m5","content":"Draft ready."}},
 {"type":"human","data":{"id":"m6","content":"Add an index."}}
]}`

type publishBundle struct {
	env    map[string]string
	stream jetstream.Stream
}

func setupPublish(t *testing.T) *publishBundle {
	t.Helper()
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv.URL())
	stream, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: worker.DefaultStream, Subjects: []string{worker.DefaultSubject}})
	if err != nil {
		t.Fatal(err)
	}
	return &publishBundle{env: map[string]string{"NATS_URL": srv.URL()}, stream: stream}
}

// run runs recall publish with stdin and returns its stdout, stderr and
// error.
func (b *publishBundle) run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := &Env{
		Stdin:  strings.NewReader(stdin),
		Stdout: &stdout,
		Stderr: &stderr,
		Getenv: func(k string) string { return b.env[k] },
	}
	err := runPublish(t.Context(), env, args)
	return stdout.String(), stderr.String(), err
}

type fetchedEvent struct {
	msgID string
	event *checkpoint.Event
}

// fetch reads the stream's events with a consumer; each must pass
// checkpoint.ParseEvent.
func (b *publishBundle) fetch(t *testing.T) []fetchedEvent {
	t.Helper()
	info, err := b.stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs == 0 {
		return nil
	}
	cons, err := b.stream.OrderedConsumer(t.Context(), jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(int(info.State.Msgs), jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var out []fetchedEvent
	for msg := range batch.Messages() {
		ev, err := checkpoint.ParseEvent(msg.Data(), checkpoint.Limits{})
		if err != nil {
			t.Fatalf("event %d: %v", len(out), err)
		}
		out = append(out, fetchedEvent{msgID: msg.Headers().Get(jetstream.MsgIDHeader), event: ev})
	}
	return out
}

func historyOf(t *testing.T, corpus string) []checkpoint.Message {
	t.Helper()
	var c struct {
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal([]byte(corpus), &c); err != nil {
		t.Fatal(err)
	}
	msgs, err := checkpoint.DecodeMessages(c.Messages)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func TestPublishCommand(t *testing.T) {
	t.Parallel()
	b := setupPublish(t)
	history := historyOf(t, publishTestHistory)
	dir := t.TempDir()
	file := filepath.Join(dir, "conversation.json")
	if err := os.WriteFile(file, []byte(publishTestHistory), 0o600); err != nil {
		t.Fatal(err)
	}
	fullEvent := `{"schema":"recall.checkpoint.v1","event_id":"given-id","user_id":"u-1","conversation_id":"c-1","messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name       string
		stdin      string
		args       []string
		wantEvents int
		check      func(t *testing.T, evs []fetchedEvent)
	}{
		{"snapshot from stdin", publishTestHistory, nil, 1, func(t *testing.T, evs []fetchedEvent) {
			ev := evs[0].event
			if ev.Offset != 0 || len(ev.Messages) != len(history) || ev.UserID != "u-42" || ev.ConversationID != "c-7" {
				t.Errorf("got offset %d, %d messages, %s/%s", ev.Offset, len(ev.Messages), ev.UserID, ev.ConversationID)
			}
			if len(ev.EventID) != 32 || evs[0].msgID != ev.EventID {
				t.Errorf("event_id %q, Nats-Msg-Id %q", ev.EventID, evs[0].msgID)
			}
		}},
		{"snapshot from a file with overrides", "", []string{"--user", "u-9", "--conversation", "c-9", "--event-id", "e-9", file}, 1, func(t *testing.T, evs []fetchedEvent) {
			ev := evs[0].event
			if ev.UserID != "u-9" || ev.ConversationID != "c-9" || ev.EventID != "e-9" || evs[0].msgID != "e-9" {
				t.Errorf("got %s/%s event %s, Nats-Msg-Id %s", ev.UserID, ev.ConversationID, ev.EventID, evs[0].msgID)
			}
		}},
		{"append with --offset", publishTestHistory, []string{"--offset", "3"}, 1, func(t *testing.T, evs []fetchedEvent) {
			ev := evs[0].event
			want, _ := checkpoint.PrefixDigest(history, 3)
			if ev.Offset != 3 || len(ev.Messages) != len(history)-3 || ev.PrefixDigest != want {
				t.Errorf("got offset %d, %d messages, prefix %s; want 3, %d, %s", ev.Offset, len(ev.Messages), ev.PrefixDigest, len(history)-3, want)
			}
		}},
		{"turns", publishTestHistory, []string{"--turns", "-"}, 3, func(t *testing.T, evs []fetchedEvent) {
			for i, wantLen := range []int{1, 5, 7} {
				ev := evs[i].event
				if ev.Offset != 0 || len(ev.Messages) != wantLen || !ev.Messages[wantLen-1].IsRequest() {
					t.Errorf("turn %d: offset %d, %d messages; want a snapshot of %d ending in a user message", i, ev.Offset, len(ev.Messages), wantLen)
				}
			}
		}},
		{"full event keeps its id", fullEvent, nil, 1, func(t *testing.T, evs []fetchedEvent) {
			if evs[0].event.EventID != "given-id" || evs[0].msgID != "given-id" {
				t.Errorf("event id %q, Nats-Msg-Id %q", evs[0].event.EventID, evs[0].msgID)
			}
		}},
		{"full event cut with --offset", `{"schema":"recall.checkpoint.v1","user_id":"u-1","conversation_id":"c-1","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`,
			[]string{"--offset", "2"}, 1, func(t *testing.T, evs []fetchedEvent) {
				if ev := evs[0].event; ev.Offset != 2 || len(ev.Messages) != 1 || ev.EventID == "" {
					t.Errorf("offset %d, %d messages, id %q", ev.Offset, len(ev.Messages), ev.EventID)
				}
			}},
		{"delete event", `{"schema":"recall.checkpoint.v1","kind":"delete","user_id":"u-1","conversation_id":"c-1"}`, nil, 1, func(t *testing.T, evs []fetchedEvent) {
			if evs[0].event.Kind != checkpoint.KindDelete {
				t.Errorf("kind %s", evs[0].event.Kind)
			}
		}},
		{"sample conversation turn by turn", "", []string{"--example", "planning", "--turns"}, 5, func(t *testing.T, evs []fetchedEvent) {
			for _, ev := range evs {
				if ev.event.UserID != "demo-user" || ev.event.ConversationID != "planning" || !ev.event.Messages[len(ev.event.Messages)-1].IsRequest() {
					t.Errorf("event %s/%s of %d messages", ev.event.UserID, ev.event.ConversationID, len(ev.event.Messages))
				}
			}
		}},
		{"bare list of messages", `[{"role":"user","content":"hi"}]`, []string{"--user", "u", "--conversation", "c"}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := &publishBundle{env: b.env, stream: b.stream}
			if err := tb.stream.Purge(t.Context()); err != nil {
				t.Fatal(err)
			}
			stdout, stderr, err := tb.run(t, tt.stdin, tt.args...)
			if err != nil {
				t.Fatalf("publish: %v\nstderr: %s", err, stderr)
			}
			if got := strings.Count(stdout, "seq="); got != tt.wantEvents {
				t.Errorf("printed %d acks, want %d:\n%s", got, tt.wantEvents, stdout)
			}
			evs := tb.fetch(t)
			if len(evs) != tt.wantEvents {
				t.Fatalf("stream holds %d events, want %d", len(evs), tt.wantEvents)
			}
			if tt.check != nil {
				tt.check(t, evs)
			}
		})
	}
}

func TestPublishCommandErrors(t *testing.T) {
	t.Parallel()
	b := setupPublish(t)
	tests := []struct {
		name    string
		stdin   string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"not JSON", `{"messages": [ secret`, nil, nil, "not valid JSON"},
		{"no messages", `{"user_id":"u","conversation_id":"c"}`, nil, nil, `"messages" must be a list`},
		{"no key", `{"messages":[]}`, nil, nil, "--user and --conversation"},
		{"bad role", `{"user_id":"u","conversation_id":"c","messages":[{"role":"robot","content":"secret"}]}`, nil, nil, "message 0"},
		{"invalid event", `{"schema":"recall.checkpoint.v1","user_id":"u","conversation_id":"c"}`, nil, nil, "recall would reject this event"},
		{"offset past the end", publishTestHistory, []string{"--offset", "99"}, nil, "past the end"},
		{"offset of an append", `{"schema":"recall.checkpoint.v1","user_id":"u","conversation_id":"c","offset":1,"prefix_digest":"` + strings.Repeat("a", 64) + `","messages":[]}`, []string{"--offset", "1"}, nil, "already an append"},
		{"turns without a user message", `{"user_id":"u","conversation_id":"c","messages":[{"role":"assistant","content":"x"}]}`, []string{"--turns"}, nil, "no user message"},
		{"no stream for the subject", publishTestHistory, nil, map[string]string{"RECALL_SUBJECT": "elsewhere"}, "no JetStream stream takes subject elsewhere"},
		{"no NATS", publishTestHistory, []string{"--nats-url", "nats://user:hunter2@127.0.0.1:1", "--timeout", "500ms"}, nil, "connect to NATS"},
		{"usage", "", []string{"a", "b"}, nil, "usage"},
		{"unknown example", "", []string{"--example", "nope"}, nil, `no example "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range b.env {
				env[k] = v
			}
			for k, v := range tt.env {
				env[k] = v
			}
			tb := &publishBundle{env: env}
			_, stderr, err := tb.run(t, tt.stdin, tt.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q, want it to contain %q (stderr %s)", err, tt.wantErr, stderr)
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error quotes input or a password: %v", err)
			}
		})
	}
}

func TestPublishCommandWait(t *testing.T) {
	t.Parallel()
	b := setupPublish(t)
	const secret = "test-secret-of-at-least-32-bytes!!"
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.URL.Path != "/v1/users/u-42/conversations/c-7/evidence" {
			http.Error(w, `{"error":{"code":"not_found","message":"no route"}}`, http.StatusNotFound)
			return
		}
		tok, err := jwt.Parse(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), func(*jwt.Token) (any, error) { return []byte(secret), nil },
			jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired())
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"code":"unauthorized","message":"bad token"}}`))
			return
		}
		if sub, _ := tok.Claims.GetSubject(); sub != "u-42" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		if r.URL.Query().Get("min_cursor") != "6" || r.URL.Query().Get("wait") == "" {
			t.Errorf("query %s, want min_cursor=6 and a wait", r.URL.RawQuery)
		}
		cursor := 4 // lagging the first time
		if n > 1 {
			cursor = 6
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"user_id":"u-42","conversation_id":"c-7","version":2,"cursor":` + strconv.Itoa(cursor) + `,"lagging":` + strconv.FormatBool(cursor < 6) + `}`))
	}))
	t.Cleanup(api.Close)

	env := map[string]string{"NATS_URL": b.env["NATS_URL"], "RECALL_API_URL": api.URL, "RECALL_JWT_SECRET": secret}
	tb := &publishBundle{env: env, stream: b.stream}
	stdout, stderr, err := tb.run(t, publishTestHistory, "--wait")
	if err != nil {
		t.Fatalf("publish --wait: %v\nstderr: %s", err, stderr)
	}
	var got struct {
		Cursor int `json:"cursor"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Cursor != 6 {
		t.Errorf("stdout is not the evidence with cursor 6 (%v):\n%s", err, stdout)
	}
	if !strings.Contains(stderr, "seq=1 ") {
		t.Errorf("stderr lacks the ack: %s", stderr)
	}

	tb.env = map[string]string{"NATS_URL": b.env["NATS_URL"], "RECALL_API_URL": api.URL}
	if _, _, err := tb.run(t, publishTestHistory, "--wait"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("without a token: %v, want a 401 error", err)
	}
	tb.env = env
	calls.Store(-100) // the API stays behind
	if _, _, err := tb.run(t, publishTestHistory, "--wait", "--wait-timeout", "1500ms"); err == nil || !strings.Contains(err.Error(), "cursor is 4, short of 6") {
		t.Errorf("lagging API: %v, want a timeout naming the cursor", err)
	}
}
