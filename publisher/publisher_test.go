package publisher_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/publisher"
	"github.com/recallhq/recall/testutil/natstest"
)

const (
	testStream  = "RECALL_CHECKPOINTS"
	testSubject = "recall.checkpoints"
)

type testBundle struct {
	js     jetstream.JetStream
	stream jetstream.Stream
}

// setup starts a JetStream server with recall's stream and returns a client.
func setup(t *testing.T) *testBundle {
	t.Helper()
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv.URL())
	stream, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: testStream, Subjects: []string{testSubject}})
	if err != nil {
		t.Fatalf("create stream: %v", err)
	}
	return &testBundle{js: js, stream: stream}
}

func newPublisher(t *testing.T, js jetstream.JetStream, opts ...publisher.Option) *publisher.Publisher {
	t.Helper()
	p, err := publisher.New(js, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// published is one event read back from the stream.
type published struct {
	msgID string
	data  []byte
	event *checkpoint.Event
}

// fetch reads every event in the stream with a consumer, checks that each
// one passes checkpoint.ParseEvent and that its Nats-Msg-Id is its event_id.
func (b *testBundle) fetch(t *testing.T) []published {
	t.Helper()
	info, err := b.stream.Info(t.Context())
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	want := int(info.State.Msgs)
	if want == 0 {
		return nil
	}
	cons, err := b.stream.OrderedConsumer(t.Context(), jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	batch, err := cons.Fetch(want, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	var out []published
	for msg := range batch.Messages() {
		ev, err := checkpoint.ParseEvent(msg.Data(), checkpoint.Limits{})
		if err != nil {
			t.Fatalf("event %d does not pass evidence.ParseEvent: %v\n%s", len(out), err, msg.Data())
		}
		id := msg.Headers().Get(jetstream.MsgIDHeader)
		if id != ev.EventID {
			t.Errorf("event %d: Nats-Msg-Id %q, event_id %q", len(out), id, ev.EventID)
		}
		out = append(out, published{msgID: id, data: msg.Data(), event: ev})
	}
	if err := batch.Error(); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if len(out) != want {
		t.Fatalf("fetched %d events, the stream holds %d", len(out), want)
	}
	return out
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// testHistory mixes the three message forms, tool calls, a part list and a
// channel message.
func testHistory() []json.RawMessage {
	return []json.RawMessage{
		raw(`{"id":"m0","role":"system","content":"You are a planner."}`),
		raw(`{"id":"m1","role":"user","content":"We must ship by Friday."}`),
		raw(`{"type":"ai","data":{"id":"m2","content":"","tool_calls":[{"id":"t1","name":"search","args":{"q":"deadline"}}]}}`),
		raw(`{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"id":"m3","tool_call_id":"t1","content":"{\"rows\":[]}","artifact":{"rows":[]}}}`),
		raw(`{"id":"m4","role":"assistant","content":"Agreed: we'll use Postgres."}`),
		raw(`{"id":"m5","role":"user","content":[{"type":"text","text":"Next, draft the schema."},{"type":"image_url","image_url":{"url":"x"}}]}`),
		raw(`{"id":"m6","role":"assistant","type":"thinking","content":"hmm"}`),
		raw(`{"id":"m7","role":"assistant","content":"Draft: users(id, name)."}`),
		raw(`{"id":"m8","role":"user","content":"Add an index."}`),
	}
}

func decode(t *testing.T, raws []json.RawMessage) []checkpoint.Message {
	t.Helper()
	b, err := json.Marshal(raws)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := checkpoint.DecodeMessages(b)
	if err != nil {
		t.Fatalf("decode history: %v", err)
	}
	return msgs
}

func prefixDigest(t *testing.T, raws []json.RawMessage, k int) checkpoint.Digest {
	t.Helper()
	d, err := checkpoint.PrefixDigest(decode(t, raws), k)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestPublishSnapshot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := newPublisher(t, b.js)
	h := testHistory()
	histories := [][]json.RawMessage{h[:2], h[:6], h, {}}

	var acks []*publisher.Ack
	for i, hist := range histories {
		ack, err := p.Publish(t.Context(), "u-1", "c-1", hist)
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		acks = append(acks, ack)
	}
	got := b.fetch(t)
	for i, ev := range got {
		hist, ack := histories[i], acks[i]
		if ack.Stream != testStream || ack.Sequence != uint64(i+1) || ack.Duplicate {
			t.Errorf("ack %d = %+v", i, ack)
		}
		if ev.event.EventID != ack.EventID || len(ack.EventID) != 32 {
			t.Errorf("event %d: event_id %q, ack %q", i, ev.event.EventID, ack.EventID)
		}
		if ev.event.Kind != checkpoint.KindSnapshot || ev.event.Offset != 0 || len(ev.event.Messages) != len(hist) {
			t.Errorf("event %d: kind %s, offset %d, %d messages; want a snapshot of %d", i, ev.event.Kind, ev.event.Offset, len(ev.event.Messages), len(hist))
		}
		if ack.Offset != 0 || ack.Sent != len(hist) || ack.End() != len(hist) {
			t.Errorf("ack %d: offset %d, sent %d", i, ack.Offset, ack.Sent)
		}
		if d, _ := chainDigests(ev.event.PrefixDigest, ev.event.Digests), error(nil); d != prefixDigest(t, hist, len(hist)) {
			t.Errorf("event %d: its messages do not digest like the history", i)
		}
	}
}

// replica is what recall holds of a conversation, applied the way the
// contract describes: an append extends the history when its prefix digest
// matches.
type replica struct {
	digests []checkpoint.Digest
}

func (r *replica) apply(t *testing.T, ev *checkpoint.Event) {
	t.Helper()
	if ev.Offset > len(r.digests) {
		t.Fatalf("gap: event at offset %d, replica holds %d messages", ev.Offset, len(r.digests))
	}
	if d := chainDigests(checkpoint.ChainStart(), r.digests[:ev.Offset]); d != ev.PrefixDigest {
		t.Fatalf("prefix_mismatch at offset %d", ev.Offset)
	}
	r.digests = append(r.digests[:ev.Offset:ev.Offset], ev.Digests...)
}

func TestPublishAppend(t *testing.T) {
	t.Parallel()
	h := testHistory()
	edited := append([]json.RawMessage{}, h...)
	edited[4] = raw(`{"id":"m4","role":"assistant","content":"Agreed: we'll use MySQL."}`)
	// The same messages serialised differently: other key order and
	// spacing, m1 in LangChain's constructor form, m4 with metadata that
	// does not enter the digest.
	reserialised := append([]json.RawMessage{}, h...)
	reserialised[0] = raw(`{ "content": "You are a planner.", "role": "system", "id": "m0" }`)
	reserialised[1] = raw(`{"lc":1,"type":"constructor","id":["langchain","schema","messages","HumanMessage"],"kwargs":{"id":"m1","content":"We must ship by Friday.","response_metadata":{}}}`)
	reserialised[4] = raw(`{"type":"ai","data":{"id":"m4","content":"Agreed: we'll use Postgres.","usage_metadata":{"input_tokens":3}}}`)
	grown := append(append([]json.RawMessage{}, reserialised...), raw(`{"id":"m9","role":"assistant","content":"Done."}`), raw(`{"id":"m10","role":"user","content":"Thanks."}`))

	steps := []struct {
		name       string
		history    []json.RawMessage
		wantOffset int
	}{
		{"first publish is a snapshot", h[:2], 0},
		{"grown history appends", h[:6], 2},
		{"grown again", h, 6},
		{"same history appends nothing", h, 9},
		{"re-serialised history still appends", grown, 9},
		{"changed message sends a snapshot", append(edited, grown[9:]...), 0},
		{"then appends again", append(append(edited, grown[9:]...), raw(`{"id":"m11","role":"assistant","content":"ok"}`)), 11},
		{"shorter history sends a snapshot", h[:3], 0},
	}

	b := setup(t)
	p := newPublisher(t, b.js, publisher.WithMode(publisher.Append))
	for i, st := range steps {
		ack, err := p.Publish(t.Context(), "u-1", "c-1", st.history)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, st.name, err)
		}
		if ack.Offset != st.wantOffset || ack.End() != len(st.history) {
			t.Errorf("step %d (%s): offset %d, end %d; want offset %d, end %d", i, st.name, ack.Offset, ack.End(), st.wantOffset, len(st.history))
		}
	}

	got := b.fetch(t)
	if len(got) != len(steps) {
		t.Fatalf("%d events, want %d", len(got), len(steps))
	}
	var r replica
	for i, st := range steps {
		ev := got[i].event
		if ev.Offset != st.wantOffset || ev.End() != len(st.history) {
			t.Errorf("event %d (%s): offset %d, end %d", i, st.name, ev.Offset, ev.End())
		}
		if want := prefixDigest(t, st.history, ev.Offset); ev.PrefixDigest != want {
			t.Errorf("event %d (%s): prefix_digest %s, want evidence.PrefixDigest(history, %d) = %s", i, st.name, ev.PrefixDigest, ev.Offset, want)
		}
		if ev.Offset == 0 && jsonField(t, got[i].data, "prefix_digest") != "null" {
			t.Errorf("event %d (%s): a snapshot's prefix_digest is %s, want null", i, st.name, jsonField(t, got[i].data, "prefix_digest"))
		}
		r.apply(t, ev)
		// What recall holds after the event is the caller's history.
		if gotD, wantD := chainDigests(checkpoint.ChainStart(), r.digests), prefixDigest(t, st.history, len(st.history)); gotD != wantD || len(r.digests) != len(st.history) {
			t.Errorf("event %d (%s): replica holds %d messages that differ from the history", i, st.name, len(r.digests))
		}
	}
}

// chainDigests extends c over message digests, as recall does with the
// digests ParseEvent computed.
func chainDigests(c checkpoint.Digest, digests []checkpoint.Digest) checkpoint.Digest {
	for _, d := range digests {
		c = c.Next(d)
	}
	return c
}

func jsonField(t *testing.T, data []byte, field string) string {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return string(obj[field])
}

func TestAppendMemory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := newPublisher(t, b.js, publisher.WithMode(publisher.Append), publisher.WithMaxConversations(2))
	h := testHistory()
	publish := func(user, conv string, n int) int {
		t.Helper()
		ack, err := p.Publish(t.Context(), user, conv, h[:n])
		if err != nil {
			t.Fatalf("publish %s/%s: %v", user, conv, err)
		}
		return ack.Offset
	}

	publish("u", "a", 2)
	publish("u", "b", 2)
	if got := publish("u", "a", 3); got != 2 {
		t.Errorf("a remembered: offset %d, want 2", got)
	}
	publish("u", "c", 2) // evicts b, the least recently used
	if got := publish("u", "b", 4); got != 0 {
		t.Errorf("b was evicted: offset %d, want 0", got)
	}
	if got := publish("v", "a", 4); got != 0 {
		t.Errorf("another user's conversation a: offset %d, want 0", got)
	}

	p.Forget("v", "a")
	if got := publish("v", "a", 5); got != 0 {
		t.Errorf("after Forget: offset %d, want 0", got)
	}
	ack, err := p.Delete(t.Context(), "v", "a")
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if ack.Kind != checkpoint.KindDelete || ack.Sent != 0 {
		t.Errorf("delete ack %+v", ack)
	}
	if got := publish("v", "a", 6); got != 0 {
		t.Errorf("after Delete: offset %d, want 0", got)
	}

	events := b.fetch(t)
	var deletes int
	for _, ev := range events {
		if ev.event.Kind == checkpoint.KindDelete {
			deletes++
			if ev.event.UserID != "v" || ev.event.ConversationID != "a" {
				t.Errorf("delete event for %s/%s", ev.event.UserID, ev.event.ConversationID)
			}
			if got := jsonField(t, ev.data, "messages"); got != "" {
				t.Errorf("delete event carries messages %s", got)
			}
		}
	}
	if deletes != 1 {
		t.Errorf("%d delete events, want 1", deletes)
	}
}

func TestPublishFailureForgets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := newPublisher(t, b.js, publisher.WithMode(publisher.Append), publisher.WithAttempts(2))
	h := testHistory()
	if _, err := p.Publish(t.Context(), "u", "c", h[:2]); err != nil {
		t.Fatal(err)
	}
	if err := b.js.DeleteStream(t.Context(), testStream); err != nil {
		t.Fatal(err)
	}
	_, err := p.Publish(t.Context(), "u", "c", h[:4])
	if !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Fatalf("publish without a stream: %v, want jetstream.ErrNoStreamResponse", err)
	}
	stream, err := b.js.CreateStream(t.Context(), jetstream.StreamConfig{Name: testStream, Subjects: []string{testSubject}})
	if err != nil {
		t.Fatal(err)
	}
	b.stream = stream
	ack, err := p.Publish(t.Context(), "u", "c", h[:5])
	if err != nil {
		t.Fatal(err)
	}
	if ack.Offset != 0 {
		t.Errorf("after a failed publish: offset %d, want a snapshot", ack.Offset)
	}
	if got := b.fetch(t); len(got) != 1 || got[0].event.Offset != 0 || len(got[0].event.Messages) != 5 {
		t.Errorf("stream holds %d events, want one snapshot of 5 messages", len(got))
	}
}

func TestPublishInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := testHistory()
	badMessage := append(append([]json.RawMessage{}, h[:3]...), raw(`{"id":"m3","role":"robot","content":"secret text"}`))
	tests := []struct {
		name      string
		user      string
		conv      string
		history   []json.RawMessage
		wantIndex int // -1: not a message error
	}{
		{"empty user", "", "c", h, -1},
		{"long conversation id", "u", string(make([]byte, 257)), h, -1},
		{"NUL in user", "u\x00", "c", h, -1},
		{"unknown role", "u", "c", badMessage, 3},
		{"not an object", "u", "c", []json.RawMessage{raw(`"hello"`)}, 0},
		{"content a number", "u", "c", []json.RawMessage{h[0], raw(`{"role":"user","content":42}`)}, 1},
	}
	for _, mode := range []publisher.Mode{publisher.Snapshot, publisher.Append} {
		p := newPublisher(t, b.js, publisher.WithMode(mode))
		for _, tt := range tests {
			_, err := p.Publish(t.Context(), tt.user, tt.conv, tt.history)
			if err == nil {
				t.Errorf("%s, %s: published", mode, tt.name)
				continue
			}
			var de *checkpoint.DecodeError
			switch {
			case tt.wantIndex < 0 && errors.As(err, &de):
				t.Errorf("%s, %s: %v is a message error", mode, tt.name, err)
			case tt.wantIndex >= 0 && (!errors.As(err, &de) || de.Index != tt.wantIndex):
				t.Errorf("%s, %s: %v, want a *evidence.DecodeError for message %d", mode, tt.name, err, tt.wantIndex)
			}
			if tt.wantIndex >= 0 && strings.Contains(err.Error(), "secret text") {
				t.Errorf("%s, %s: the error quotes message text: %v", mode, tt.name, err)
			}
		}
	}
	// An append whose new message is bad publishes nothing either.
	p := newPublisher(t, b.js, publisher.WithMode(publisher.Append))
	if _, err := p.Publish(t.Context(), "u", "c", h[:3]); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(t.Context(), "u", "c", badMessage); err == nil {
		t.Error("append of a bad message: published")
	}
	if got := b.fetch(t); len(got) != 1 {
		t.Errorf("stream holds %d events, want 1", len(got))
	}
}

func TestDuplicateEventID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := newPublisher(t, b.js, publisher.WithEventIDs(func() string { return "same-id" }))
	h := testHistory()
	first, err := p.Publish(t.Context(), "u", "c", h[:2])
	if err != nil {
		t.Fatal(err)
	}
	second, err := p.Publish(t.Context(), "u", "c", h[:2])
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate || !second.Duplicate || second.Sequence != first.Sequence {
		t.Errorf("acks %+v and %+v: want the second to be a duplicate of the first", first, second)
	}
	if got := b.fetch(t); len(got) != 1 || got[0].msgID != "same-id" {
		t.Errorf("stream holds %d events, want 1 with id same-id", len(got))
	}
}

func TestPublishMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := newPublisher(t, b.js, publisher.WithSubject(testSubject))
	msgs := []publisher.Message{
		{ID: "m0", Role: "user", Content: "We must ship by Friday. <b>&</b>"},
		{ID: "m1", Role: "assistant", ToolCalls: []publisher.ToolCall{{ID: "t1", Name: "search"}}},
		{ID: "m2", Role: "tool", ToolCallID: "t1", Content: "{}", Artifact: raw(`{"rows":[]}`)},
		{ID: "m3", Role: "assistant", Type: "status", Content: "working"},
		{ID: "m4", Role: "user", Name: "ann", Content: "Next."},
	}
	equivalent := []json.RawMessage{
		raw(`{"id":"m0","role":"user","content":"We must ship by Friday. <b>&</b>"}`),
		raw(`{"id":"m1","role":"assistant","content":"","tool_calls":[{"id":"t1","name":"search","args":{}}]}`),
		raw(`{"id":"m2","role":"tool","tool_call_id":"t1","content":"{}","artifact":{"rows":[]}}`),
		raw(`{"id":"m3","role":"assistant","type":"status","content":"working"}`),
		raw(`{"id":"m4","role":"user","content":"Next."}`),
	}
	if _, err := p.PublishMessages(t.Context(), "u", "c", msgs); err != nil {
		t.Fatal(err)
	}
	got := b.fetch(t)
	if len(got) != 1 {
		t.Fatalf("%d events", len(got))
	}
	ev := got[0].event
	if d := chainDigests(checkpoint.ChainStart(), ev.Digests); d != prefixDigest(t, equivalent, len(equivalent)) {
		t.Error("the flat messages do not digest like their JSON equivalent")
	}
	if diff := cmp.Diff("We must ship by Friday. <b>&</b>", ev.Messages[0].Text); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
}

func TestNewAppend(t *testing.T) {
	t.Parallel()
	h := testHistory()
	for k := 0; k <= len(h); k++ {
		ev, err := publisher.NewAppend("u", "c", h, k)
		if err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		ev.EventID = "x"
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := checkpoint.ParseEvent(data, checkpoint.Limits{})
		if err != nil {
			t.Fatalf("k=%d: %v\n%s", k, err, data)
		}
		if parsed.Offset != k || parsed.PrefixDigest != prefixDigest(t, h, k) || len(parsed.Messages) != len(h)-k {
			t.Errorf("k=%d: offset %d, %d messages, wrong digest?", k, parsed.Offset, len(parsed.Messages))
		}
	}
	if _, err := publisher.NewAppend("u", "c", h, len(h)+1); err == nil {
		t.Error("offset past the history: no error")
	}
	if _, err := publisher.NewAppend("u", "c", h, -1); err == nil {
		t.Error("negative offset: no error")
	}
}

func TestNewOptions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name string
		opt  publisher.Option
	}{
		{"empty subject", publisher.WithSubject("")},
		{"wildcard subject", publisher.WithSubject("recall.>")},
		{"blank in subject", publisher.WithSubject("recall checkpoints")},
		{"nil id generator", publisher.WithEventIDs(nil)},
		{"unknown mode", publisher.WithMode(publisher.Mode(7))},
		{"no conversations", publisher.WithMaxConversations(0)},
		{"no attempts", publisher.WithAttempts(0)},
	}
	for _, tt := range tests {
		if _, err := publisher.New(b.js, tt.opt); !errors.Is(err, publisher.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", tt.name, err)
		}
	}
	if _, err := publisher.New(nil); !errors.Is(err, publisher.ErrInvalidOption) {
		t.Errorf("nil JetStream: %v", err)
	}
	p := newPublisher(t, b.js, publisher.WithEventIDs(func() string { return "" }))
	if _, err := p.Publish(t.Context(), "u", "c", testHistory()); err == nil {
		t.Error("empty event id: published")
	}
}

// Many conversations published at once in append mode, each turn by turn:
// every event is valid and every conversation's replica ends as its history.
func TestPublishConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := newPublisher(t, b.js, publisher.WithMode(publisher.Append), publisher.WithMaxConversations(4))
	h := testHistory()
	const conversations = 8
	var wg sync.WaitGroup
	errs := make(chan error, conversations)
	for c := range conversations {
		wg.Go(func() {
			for n := 1; n <= len(h); n++ {
				if _, err := p.Publish(t.Context(), "u", "c"+strconv.Itoa(c), h[:n]); err != nil {
					errs <- fmt.Errorf("conversation %d, %d messages: %w", c, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	replicas := map[string]*replica{}
	for _, ev := range b.fetch(t) {
		r := replicas[ev.event.ConversationID]
		if r == nil {
			r = &replica{}
			replicas[ev.event.ConversationID] = r
		}
		r.apply(t, ev.event)
	}
	want := prefixDigest(t, h, len(h))
	for c := range conversations {
		r := replicas["c"+strconv.Itoa(c)]
		if r == nil || len(r.digests) != len(h) || chainDigests(checkpoint.ChainStart(), r.digests) != want {
			t.Errorf("conversation %d does not end as its history", c)
		}
	}
}
