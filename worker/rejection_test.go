package worker_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/recallhq/recall/checkpoint"
	pt "github.com/recallhq/recall/testutil/pipelinetest"
	"github.com/recallhq/recall/worker"
)

func msg(id, role, content string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"id": id, "role": role, "content": content})
	return b
}

func appendEvent(t *testing.T, eventID, user, conv string, history []json.RawMessage, offset int) []byte {
	t.Helper()
	raw, _ := json.Marshal(history[:offset])
	msgs, err := checkpoint.DecodeMessages(raw)
	pt.Must(t, err)
	d, err := checkpoint.PrefixDigest(msgs, offset)
	pt.Must(t, err)
	b, _ := json.Marshal(map[string]any{
		"schema": checkpoint.Schema, "event_id": eventID, "user_id": user, "conversation_id": conv,
		"offset": offset, "prefix_digest": d.String(), "messages": history[offset:],
	})
	return b
}

// TestRejections sends one event of each bad kind, each followed by a good
// one: every bad event gets exactly one rejection row with its reason, the
// worker keeps going, and no state changes because of a bad event.
func TestRejections(t *testing.T) {
	t.Parallel()
	b := pt.New(t)
	b.GapTimeout = 300 * time.Millisecond
	b.StartWorker(4)

	history := []json.RawMessage{
		msg("m0", "user", "We must ship by Friday."),
		msg("m1", "assistant", "Agreed: we'll use Postgres."),
		msg("m2", "user", "Next, draft the schema."),
	}
	good := func(i int) {
		id := fmt.Sprintf("good-%d", i)
		b.Publish(id, pt.Event(id, "u", fmt.Sprintf("good-%d", i), history))
	}
	// The conversation the lineage tests work on.
	b.Publish("base", pt.Event("base", "u", "c", history))
	want := pt.Oracle(t, history)
	before := b.WaitCursor("u", "c", want.Cursor, 10*time.Second)

	forged := append([]json.RawMessage{msg("m0", "user", "We must ship by Monday.")}, history[1:]...)
	bad := []struct {
		name   string
		data   []byte
		reason string
	}{
		{"not json", []byte("{not json"), "malformed"},
		{"invalid utf-8", []byte("{\"schema\":\"recall.checkpoint.v1\",\"x\":\"\xff\xfe\"}"), "malformed"},
		{"unsupported schema", []byte(`{"schema":"recall.checkpoint.v9","event_id":"x","user_id":"u","conversation_id":"c","messages":[]}`), "unsupported_schema"},
		{"invalid: no user", []byte(`{"schema":"recall.checkpoint.v1","event_id":"x","conversation_id":"c","messages":[]}`), "invalid"},
		{"invalid: bad role", pt.Event("bad-role", "u", "c", []json.RawMessage{json.RawMessage(`{"role":"wizard","content":"hi"}`)}), "invalid"},
		{"too large", pt.Event("big", "u", "c", []json.RawMessage{msg("m0", "user", strings.Repeat("x", 17<<20))}), "too_large"},
		{"prefix mismatch", pt.Event("forged", "u", "c", forged), "prefix_mismatch"},
		{"gap", appendEvent(t, "gap", "u", "c", append(history, msg("m3", "assistant", "ok"), msg("m4", "assistant", "ok"), msg("m5", "user", "go")), 5), "gap"},
	}
	for i, tt := range bad {
		b.Publish(fmt.Sprintf("bad-%d", i), tt.data)
		good(i)
	}
	var wantReasons []string
	for _, tt := range bad {
		wantReasons = append(wantReasons, tt.reason)
	}
	// Every bad event is rejected on its first delivery, the 17 MiB one
	// too, however long it takes to arrive: the wait ends before AckWait,
	// after which JetStream would deliver it again.
	got := b.WaitRejections(len(bad), worker.DefaultAckWait-5*time.Second)
	if fmt.Sprint(sortedCopy(got)) != fmt.Sprint(sortedCopy(wantReasons)) {
		t.Errorf("rejection reasons %v, want %v", got, wantReasons)
	}
	for i := range bad {
		b.WaitCursor("u", fmt.Sprintf("good-%d", i), want.Cursor, 10*time.Second)
	}
	after, err := b.Store.Evidence(t.Context(), "u", "c")
	pt.Must(t, err)
	if after.Version != before.Version || string(after.Body) != string(before.Body) {
		t.Errorf("state of u/c changed by bad events: version %d -> %d", before.Version, after.Version)
	}
	// Exactly one row each, with the payload kept for replay.
	var n, withPayload int
	pt.Must(t, b.Pool.QueryRow(t.Context(), `SELECT count(*), count(payload) FROM recall_rejection`).Scan(&n, &withPayload))
	if n != len(bad) || withPayload != len(bad) {
		t.Errorf("%d rejection rows (%d with payload), want %d", n, withPayload, len(bad))
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

// TestAppendEvents grows a conversation with append events only, including
// one that arrives before the event it extends (it is retried until the gap
// is filled).
func TestAppendEvents(t *testing.T) {
	t.Parallel()
	b := pt.New(t)
	b.GapTimeout = 10 * time.Second
	b.StartWorker(2)
	var history []json.RawMessage
	for i := range 12 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		history = append(history, msg(fmt.Sprintf("m%d", i), role, fmt.Sprintf("turn %d: we must keep item %d", i, i)))
	}
	b.Publish("s0", pt.Event("s0", "u", "c", history[:3]))
	// [5, 9) before [3, 5): the first waits for the second.
	b.Publish("a5", appendEvent(t, "a5", "u", "c", history[:9], 5))
	time.Sleep(100 * time.Millisecond)
	b.Publish("a3", appendEvent(t, "a3", "u", "c", history[:5], 3))
	b.Publish("a9", appendEvent(t, "a9", "u", "c", history[:11], 9))
	want := pt.Oracle(t, history[:11])
	rec := b.WaitCursor("u", "c", want.Cursor, 15*time.Second)
	pt.RequireState(t, rec, want)
	if rec.MessageCount != 11 {
		t.Errorf("message_count %d, want 11", rec.MessageCount)
	}
	if r := b.Rejections(); len(r) != 0 {
		t.Errorf("rejections: %v", r)
	}
	// A snapshot that re-publishes the whole history is a no-op; an append
	// with a wrong prefix digest is a prefix_mismatch.
	b.Publish("s-all", pt.Event("s-all", "u", "c", history[:11]))
	wrong := appendEvent(t, "wrong", "u", "c", history, 11)
	var ev map[string]any
	pt.Must(t, json.Unmarshal(wrong, &ev))
	ev["prefix_digest"] = strings.Repeat("0", 64)
	wrong, _ = json.Marshal(ev)
	b.Publish("wrong", wrong)
	if got := b.WaitRejections(1, 10*time.Second); len(got) != 1 || got[0] != "prefix_mismatch" {
		t.Errorf("rejections %v, want [prefix_mismatch]", got)
	}
}

// TestDeleteEvent deletes a conversation through the pipeline: evidence and
// held messages are gone, and a later event is rejected as deleted.
func TestDeleteEvent(t *testing.T) {
	t.Parallel()
	b := pt.New(t)
	b.StartWorker(2)
	history := []json.RawMessage{msg("m0", "user", "We must ship by Friday."), msg("m1", "assistant", "ok"), msg("m2", "user", "next")}
	b.Publish("s0", pt.Event("s0", "u", "c", history))
	b.WaitCursor("u", "c", 2, 10*time.Second)
	del, _ := json.Marshal(map[string]any{"schema": checkpoint.Schema, "kind": "delete", "event_id": "d0", "user_id": "u", "conversation_id": "c"})
	b.Publish("d0", del)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var deleted bool
		pt.Must(t, b.Pool.QueryRow(t.Context(), `SELECT deleted_at IS NOT NULL FROM recall_conversation WHERE user_id='u' AND conversation_id='c'`).Scan(&deleted))
		if deleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("conversation not deleted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	rec, err := b.Store.Evidence(t.Context(), "u", "c")
	pt.Must(t, err)
	if rec.Version != 0 || rec.Cursor != 0 || rec.Body != nil {
		t.Errorf("deleted conversation reads as %+v", rec)
	}
	var held int
	pt.Must(t, b.Pool.QueryRow(t.Context(), `SELECT count(*) FROM recall_message WHERE user_id='u' AND conversation_id='c'`).Scan(&held))
	if held != 0 {
		t.Errorf("%d messages still held", held)
	}
	b.Publish("late", pt.Event("late", "u", "c", history))
	// Late bad events for the deleted key: recorded as deleted too.
	b.Publish("late-invalid", pt.Event("late-invalid", "u", "c", []json.RawMessage{json.RawMessage(`{"role":"wizard","content":"the deleted text"}`)}))
	b.Publish("late-schema", []byte(`{"schema":"recall.checkpoint.v9","event_id":"late-schema","user_id":"u","conversation_id":"c","messages":[{"role":"user","content":"the deleted text"}]}`))
	if got := b.WaitRejections(3, 10*time.Second); fmt.Sprint(got) != "[deleted deleted deleted]" {
		t.Errorf("rejections %v, want [deleted deleted deleted]", got)
	}
	var payloads int
	pt.Must(t, b.Pool.QueryRow(t.Context(), `SELECT count(payload) FROM recall_rejection`).Scan(&payloads))
	if payloads != 0 {
		t.Errorf("a rejection of a deleted conversation kept its payload")
	}
}

// TestMachineNATS runs a conversation and the rejections through the
// machine's own nats-server (Debian's 2.9 here), which predates a reason on
// Term: terminated events must not come back.
func TestMachineNATS(t *testing.T) {
	t.Parallel()
	url := os.Getenv("TEST_NATS_URL")
	if url == "" {
		url = "nats://127.0.0.1:4222"
	}
	b := pt.NewSharedNATS(t, url)
	b.StartWorker(2)
	t.Logf("server version %s", b.JS.Conn().ConnectedServerVersion())
	history := []json.RawMessage{msg("m0", "user", "We must ship by Friday."), msg("m1", "assistant", "ok"), msg("m2", "user", "next")}
	b.Publish("s0", pt.Event("s0", "u", "c", history))
	b.Publish("bad", []byte("{not json"))
	b.WaitCursor("u", "c", 2, 10*time.Second)
	if got := b.WaitRejections(1, 10*time.Second); len(got) != 1 || got[0] != "malformed" {
		t.Fatalf("rejections %v, want [malformed]", got)
	}
	// A terminated event is not redelivered: the consumer has nothing
	// pending or waiting for an ack.
	time.Sleep(500 * time.Millisecond)
	cons, err := b.JS.Consumer(t.Context(), b.Stream, "recall-worker")
	pt.Must(t, err)
	info, err := cons.Info(t.Context())
	pt.Must(t, err)
	if info.NumAckPending != 0 || info.NumPending != 0 || info.Delivered.Consumer != info.Delivered.Stream {
		t.Errorf("consumer after a terminated event: ack pending %d, pending %d, %d deliveries of %d events",
			info.NumAckPending, info.NumPending, info.Delivered.Consumer, info.Delivered.Stream)
	}
	// The accepted and the terminated event both left the stream.
	waitStreamEmpty(t, b, 10*time.Second)
}

// TestSlowEventNotRedelivered: an event whose handling outlasts AckWait is
// kept in progress by the heartbeat, not delivered a second time.
func TestSlowEventNotRedelivered(t *testing.T) {
	t.Parallel()
	b := pt.New(t)
	// Heartbeats every 500 ms; a loaded machine (the race detector, the
	// whole suite) must delay one by a second before the server redelivers.
	b.AckWait = 1500 * time.Millisecond
	b.StartWorker(2)
	// Hold the conversation's row lock so that ingest waits 4 s: without
	// heartbeats the event would be redelivered twice meanwhile.
	history := []json.RawMessage{msg("m0", "user", "We must ship by Friday."), msg("m1", "assistant", "ok"), msg("m2", "user", "next")}
	b.Publish("s0", pt.Event("s0", "u", "c", history[:1]))
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		pt.Must(t, b.Pool.QueryRow(t.Context(), `SELECT count(*) FROM recall_conversation`).Scan(&n))
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("first event not ingested")
		}
		time.Sleep(20 * time.Millisecond)
	}
	tx, err := b.Pool.Begin(t.Context())
	pt.Must(t, err)
	_, err = tx.Exec(t.Context(), `SELECT 1 FROM recall_conversation WHERE user_id = 'u' FOR UPDATE`)
	pt.Must(t, err)
	b.Publish("s1", pt.Event("s1", "u", "c", history))
	time.Sleep(4 * time.Second)
	pt.Must(t, tx.Rollback(t.Context()))
	b.WaitCursor("u", "c", 2, 10*time.Second)
	cons, err := b.JS.Consumer(t.Context(), b.Stream, "recall-worker")
	pt.Must(t, err)
	info, err := cons.Info(t.Context())
	pt.Must(t, err)
	// Each delivery takes a consumer sequence: more of them than stream
	// messages means something was delivered twice.
	if info.Delivered.Consumer != info.Delivered.Stream {
		t.Errorf("%d deliveries of %d events: redelivered while in progress", info.Delivered.Consumer, info.Delivered.Stream)
	}
}
