package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/checkpoint"
)

// texts are the message texts conversations are made of: every bucket gets
// entries, and lengths vary from a line to a paragraph.
var texts = []string{
	"We must keep the p99 under fifty milliseconds for every tenant, whatever the load.",
	"Agreed: we'll use Postgres with one row per conversation and a notify channel for waiters.",
	"Next step: draft the schema and the migration for the evidence table, then review it with the team.",
	"Here is the draft of the schema with the primary key on both ids, as discussed this morning.",
	"The deadline is Friday; do not ship anything that has not passed the load test on the staging cluster.",
	"I looked at the logs from last night and the spike lines up with the nightly export job, not with user traffic.",
	"Decided: the exporter moves to its own replica so that it never competes with the read path again.",
	"Still need to confirm the retention policy with legal before we delete the old snapshots.",
	"Sounds good.",
	"The benchmark numbers from yesterday were taken on a laptop on battery, so treat them as a rough lower bound only; the real figures will come from the two-core runner once it is free again.",
}

// historyMessage returns message i of a benchmark conversation as raw JSON:
// even indices are user requests, odd ones assistant replies, and every
// fifth reply carries a tool call (its prose is never evidence).
func historyMessage(i int) json.RawMessage {
	text := texts[(i*7+i/3)%len(texts)]
	var b strings.Builder
	b.Grow(len(text) + 128)
	b.WriteString(`{"id":"m`)
	b.WriteString(strconv.Itoa(i))
	switch {
	case i%2 == 0:
		b.WriteString(`","role":"user","content":`)
	case i%10 == 9:
		b.WriteString(`","role":"assistant","tool_calls":[{"id":"t`)
		b.WriteString(strconv.Itoa(i))
		b.WriteString(`","name":"search","args":{"q":"schema"}}],"content":`)
	default:
		b.WriteString(`","role":"assistant","content":`)
	}
	q, _ := json.Marshal(text)
	b.Write(q)
	b.WriteString(`}`)
	return json.RawMessage(b.String())
}

// history returns messages [0, n) of a benchmark conversation.
func history(n int) []json.RawMessage {
	h := make([]json.RawMessage, n)
	for i := range h {
		h[i] = historyMessage(i)
	}
	return h
}

// bigHistory returns a history of at least size bytes of JSON, in messages
// of about 2 KiB, ending with a user request: one large snapshot.
func bigHistory(size int) []json.RawMessage {
	para := strings.Repeat("The export job moved to its own replica and the read path stayed under its latency budget all week. ", 20)
	var h []json.RawMessage
	total := 0
	for i := 0; total < size || i%2 == 0; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		q, _ := json.Marshal(fmt.Sprintf("%d: %s", i, para))
		m := json.RawMessage(fmt.Sprintf(`{"id":"m%d","role":%q,"content":%s}`, i, role, q))
		h = append(h, m)
		total += len(m) + 1
	}
	return h
}

// turnLength is the history length after turn t (1-based) of a benchmark
// conversation: each turn adds a reply and a new request.
func turnLength(t int) int { return 2*t - 1 }

// finalCursor is the cursor once turn t is summarised: the index of its
// request, the newest user message.
func finalCursor(t int) int { return turnLength(t) - 1 }

// encodeEvent encodes a checkpoint event. ids are plain ASCII, written as
// they are.
func encodeEvent(eventID, userID, conversationID string, offset int, prefix *checkpoint.Digest, msgs []json.RawMessage) []byte {
	size := 200
	for _, m := range msgs {
		size += len(m) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, `{"schema":"`+checkpoint.Schema+`","kind":"snapshot","event_id":"`...)
	b = append(b, eventID...)
	b = append(b, `","user_id":"`...)
	b = append(b, userID...)
	b = append(b, `","conversation_id":"`...)
	b = append(b, conversationID...)
	b = append(b, `","offset":`...)
	b = strconv.AppendInt(b, int64(offset), 10)
	b = append(b, `,"prefix_digest":`...)
	if prefix == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = append(b, prefix.String()...)
		b = append(b, '"')
	}
	b = append(b, `,"messages":[`...)
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, "]}"...)
}

// chains returns the chain digest of each prefix of h: chains[i] is c_i.
func chains(h []json.RawMessage) ([]checkpoint.Digest, error) {
	out := make([]checkpoint.Digest, len(h)+1)
	out[0] = checkpoint.ChainStart()
	for i, raw := range h {
		m, err := checkpoint.DecodeMessage(raw)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		d, err := m.Digest()
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out[i+1] = out[i].Next(d)
	}
	return out, nil
}

// eventIDs makes unique event ids for one benchmark run.
type eventIDs struct {
	prefix string
	n      atomic.Int64
}

func (e *eventIDs) next() string {
	return e.prefix + "-" + strconv.FormatInt(e.n.Add(1), 10)
}

// asyncPublisher publishes with JetStream's asynchronous publish and keeps
// the futures, so that a failed publish is reported rather than lost.
type asyncPublisher struct {
	js      jetstream.JetStream
	subject string
	futures []jetstream.PubAckFuture
}

// wait waits for every acknowledgement and returns the first failure.
func (p *asyncPublisher) wait(ctx context.Context) error {
	select {
	case <-p.js.PublishAsyncComplete():
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("JetStream did not acknowledge %d events within 2m", p.js.PublishAsyncPending())
	}
	for _, f := range p.futures {
		select {
		case err := <-f.Err():
			return fmt.Errorf("publish: %w", err)
		default:
		}
	}
	p.futures = p.futures[:0]
	return nil
}

// directMsg is a JetStream message handed to worker.Handle without NATS, for
// the cost scenario: it records how the worker ended it.
type directMsg struct {
	data []byte
	meta jetstream.MsgMetadata
	end  string
}

var _ jetstream.Msg = (*directMsg)(nil)

func (m *directMsg) Metadata() (*jetstream.MsgMetadata, error) { return &m.meta, nil }
func (m *directMsg) Data() []byte                              { return m.data }
func (m *directMsg) Headers() nats.Header                      { return nil }
func (m *directMsg) Subject() string                           { return "" }
func (m *directMsg) Reply() string                             { return "" }
func (m *directMsg) Ack() error                                { m.end = "ack"; return nil }
func (m *directMsg) DoubleAck(context.Context) error           { m.end = "ack"; return nil }
func (m *directMsg) Nak() error                                { m.end = "nak"; return nil }
func (m *directMsg) NakWithDelay(time.Duration) error          { m.end = "nak"; return nil }
func (m *directMsg) InProgress() error                         { return nil }
func (m *directMsg) Term() error                               { m.end = "term"; return nil }
func (m *directMsg) TermWithReason(string) error               { m.end = "term"; return nil }
