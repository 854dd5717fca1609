package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/testutil/natstest"
)

// Marker is carried inside every message the suite publishes (content, tool
// arguments, artifacts, ids of tool calls): it must appear in no log line,
// no metric and no error body.
const Marker = "ZQXMARKER7731"

const (
	subject = "recall.checkpoints"
	stream  = "RECALL_CHECKPOINTS"
	durable = "recall-worker"
)

// conversation is one synthetic conversation and its oracle.
type conversation struct {
	User, Conv string
	History    []json.RawMessage
	// Snapshots are the lengths of the prefixes published: each ends with
	// a user message.
	Snapshots []int
	Oracle    evidence.State
}

// event is one event to publish.
type event struct {
	ID   string
	Data []byte
	Conv int // index in the workload's conversations; -1 for none
}

// workload is a set of conversations and the order their events are
// published in.
type workload struct {
	Convs  []*conversation
	Events []event
	// Resent counts events that are published twice: under the same id
	// (the stream deduplicates them) or under a new one (recall must).
	Resent int
}

var sentences = []string{
	// constraints
	"We must keep the %s budget under control.",
	"Never deploy %s on a Friday.",
	"The %s deadline is the end of the month.",
	"Do not touch the %s tables during business hours.",
	// decisions
	"We decided to move %s to Postgres.",
	"Agreed: go with the %s plan.",
	"Confirmed, we'll use %s for the queue.",
	// open work
	"TODO: write the %s runbook.",
	"Next step: benchmark %s on the staging box.",
	"We still need to size the %s cluster.",
	// recent context
	"Here is the %s report from yesterday.",
	"The %s dashboard looks fine this morning.",
	"Thanks, that answers the %s question.",
	"Ça marche, le rapport %s est prêt — 日本語も大丈夫です.",
}

var words = []string{"billing", "crm", "archive", "search", "ingest", "payments", "ledger", "auth", "mailer", "reports"}

// text returns a message text with the marker inside it, sometimes long
// enough to be truncated.
func text(rng *rand.Rand, i int) string {
	s := fmt.Sprintf(sentences[rng.IntN(len(sentences))], words[rng.IntN(len(words))])
	s = fmt.Sprintf("%s (%s #%d)", s, Marker, i)
	if rng.IntN(25) == 0 {
		s += " " + strings.Repeat("Lorem ipsum "+Marker+" dolor sit amet. ", 40)
	}
	return s
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// newConversation builds a history of turns user requests with the
// assistant's replies between them, in the three message forms.
func newConversation(rng *rand.Rand, user, conv string, turns int) *conversation {
	c := &conversation{User: user, Conv: conv}
	add := func(v any) { c.History = append(c.History, raw(v)) }
	if rng.IntN(3) == 0 {
		add(map[string]any{"id": "sys", "role": "system", "content": "You are helpful. " + Marker})
	}
	for turn := range turns {
		n := len(c.History)
		id := fmt.Sprintf("m%d", n)
		switch rng.IntN(4) {
		case 0: // LangChain stored
			add(map[string]any{"type": "human", "data": map[string]any{"content": text(rng, n), "id": id}})
		case 1: // LangChain constructor
			add(map[string]any{"lc": 1, "type": "constructor", "id": []string{"langchain_core", "messages", "HumanMessage"},
				"kwargs": map[string]any{"content": text(rng, n), "id": id}})
		default:
			add(map[string]any{"id": id, "role": "user", "content": text(rng, n)})
		}
		c.Snapshots = append(c.Snapshots, len(c.History))
		if turn == turns-1 {
			break // the newest request is never summarised: end on it
		}
		switch rng.IntN(6) {
		case 0: // a tool call, its result, then the answer
			n = len(c.History)
			call := fmt.Sprintf("call-%d", n)
			add(map[string]any{"id": fmt.Sprintf("m%d", n), "role": "assistant", "content": "Let me check. " + Marker,
				"tool_calls": []any{map[string]any{"id": call, "name": "search", "args": map[string]any{"q": Marker}}}})
			add(map[string]any{"id": fmt.Sprintf("m%d", n+1), "role": "tool", "tool_call_id": call,
				"content": `{"rows":["` + Marker + `"]}`, "artifact": map[string]any{"rows": []string{Marker}}})
		case 1: // off the conversation channel
			add(map[string]any{"id": fmt.Sprintf("m%d", len(c.History)), "role": "assistant", "type": "thinking", "content": "Hmm. " + Marker})
		}
		n = len(c.History)
		if rng.IntN(5) == 0 {
			add(map[string]any{"type": "ai", "data": map[string]any{"content": text(rng, n), "id": fmt.Sprintf("m%d", n)}})
		} else {
			add(map[string]any{"id": fmt.Sprintf("m%d", n), "role": "assistant", "content": text(rng, n)})
		}
	}
	return c
}

// oracle folds the longest history published with the pure core.
func (c *conversation) oracle(t testing.TB) evidence.State {
	t.Helper()
	longest := slices.Max(c.Snapshots)
	msgs, err := checkpoint.DecodeMessages(raw(c.History[:longest]))
	if err != nil {
		t.Fatalf("%s: %v", c.Conv, err)
	}
	s, _, err := evidence.Fold(evidence.NewState(), msgs, nil)
	if err != nil {
		t.Fatalf("%s: %v", c.Conv, err)
	}
	return s
}

// snapshotEvent encodes a snapshot event of msgs.
func snapshotEvent(id, user, conv string, msgs []json.RawMessage) []byte {
	return raw(map[string]any{
		"schema": checkpoint.Schema, "kind": "snapshot", "event_id": id,
		"user_id": user, "conversation_id": conv, "offset": 0, "prefix_digest": nil,
		"messages": msgs,
	})
}

// newWorkload builds convs conversations of turns requests each, and the
// order of their growing snapshots: conversations interleaved, each mostly
// in order, with neighbours swapped and some events published twice.
func newWorkload(t testing.TB, seed uint64, prefix string, convs, turns int) *workload {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	w := &workload{}
	queues := make([][]event, convs)
	for i := range convs {
		c := newConversation(rng, fmt.Sprintf("%s-u%d", prefix, i%7), fmt.Sprintf("%s-c%d", prefix, i), turns)
		c.Oracle = c.oracle(t)
		w.Convs = append(w.Convs, c)
		for j, n := range c.Snapshots {
			id := fmt.Sprintf("%s-c%d-e%d", prefix, i, j)
			queues[i] = append(queues[i], event{ID: id, Data: snapshotEvent(id, c.User, c.Conv, c.History[:n]), Conv: i})
		}
	}
	live := make([]int, convs)
	for i := range live {
		live[i] = i
	}
	for len(live) > 0 {
		k := rng.IntN(len(live))
		i := live[k]
		q := queues[i]
		if len(q) > 1 && rng.IntN(10) == 0 {
			q[0], q[1] = q[1], q[0] // reordered
		}
		ev := q[0]
		queues[i] = q[1:]
		w.Events = append(w.Events, ev)
		switch rng.IntN(40) {
		case 0: // the same event again, same id
			w.Events = append(w.Events, ev)
			w.Resent++
		case 1: // the same history under another id
			id := ev.ID + "-again"
			var m map[string]any
			_ = json.Unmarshal(ev.Data, &m)
			m["event_id"] = id
			w.Events = append(w.Events, event{ID: id, Data: raw(m), Conv: i})
			w.Resent++
		}
		if len(queues[i]) == 0 {
			live = slices.Delete(live, k, k+1)
		}
	}
	return w
}

// publisher publishes events with Nats-Msg-Id and retries until JetStream
// acknowledges them, across server restarts.
type publisher struct {
	js jetstream.JetStream

	mu       sync.Mutex
	seq      map[string]uint64    // event id → stream sequence of its first ack
	ackedAt  map[string]time.Time // event id → when it was first acknowledged
	attempts int
	failures int
	sent     atomic.Int64
	maxSeq   atomic.Uint64 // highest stream sequence acknowledged
}

func newPublisher(t *testing.T, url string) *publisher {
	t.Helper()
	_, js := natstest.Connect(t, url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.Name("faults-publisher"))
	return &publisher{js: js, seq: map[string]uint64{}, ackedAt: map[string]time.Time{}}
}

// publish sends one event until it is acknowledged or ctx ends.
func (p *publisher) publish(ctx context.Context, id string, data []byte) (uint64, error) {
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ack, err := p.js.PublishMsg(pctx, &nats.Msg{Subject: subject, Data: data, Header: nats.Header{"Nats-Msg-Id": []string{id}}})
		cancel()
		p.mu.Lock()
		p.attempts++
		if err == nil {
			if _, ok := p.ackedAt[id]; !ok {
				p.ackedAt[id] = time.Now()
			}
			if _, ok := p.seq[id]; !ok && !ack.Duplicate {
				p.seq[id] = ack.Sequence
			} else if !ok {
				// A retry whose first attempt was stored but whose ack was
				// lost: the stream holds it under a sequence we did not see.
				p.seq[id] = 0
			}
			p.mu.Unlock()
			p.sent.Add(1)
			for {
				m := p.maxSeq.Load()
				if ack.Sequence <= m || p.maxSeq.CompareAndSwap(m, ack.Sequence) {
					break
				}
			}
			return ack.Sequence, nil
		}
		p.failures++
		p.mu.Unlock()
		if ctx.Err() != nil {
			return 0, fmt.Errorf("publish %s: %w (last error: %v)", id, ctx.Err(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// run publishes events with workers goroutines at about rate events per
// second (0: as fast as they go). Events of one conversation keep their
// relative order only roughly, as with many publishers.
func (p *publisher) run(ctx context.Context, events []event, rate float64, workers int) error {
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				k := next.Add(1) - 1
				if int(k) >= len(events) {
					return
				}
				if rate > 0 {
					time.Sleep(time.Until(start.Add(time.Duration(float64(k) / rate * float64(time.Second)))))
				}
				if _, err := p.publish(ctx, events[k].ID, events[k].Data); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// accepted returns how many distinct events the stream acknowledged.
func (p *publisher) accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seq)
}

func distinctIDs(events []event) int {
	ids := map[string]bool{}
	for _, e := range events {
		ids[e.ID] = true
	}
	return len(ids)
}

// verdict compares what Postgres holds with the oracles.
type verdict struct {
	States   int
	Matching int
	Dups     int // entries whose place (index, span) appears more than once in a state
	Lost     int
	Diffs    []string
}

func (v verdict) String() string {
	return fmt.Sprintf("%d/%d states equal their oracle, %d duplicated entries, %d lost", v.Matching, v.States, v.Dups, v.Lost)
}

// check reads every conversation's state and compares it, all but version,
// with the fold of its longest history.
func check(ctx context.Context, pool *pgxpool.Pool, convs []*conversation) (verdict, error) {
	rows, err := pool.Query(ctx, `
SELECT user_id, conversation_id, version, "cursor", message_count, prefix_digest, body
FROM recall_conversation WHERE deleted_at IS NULL`)
	if err != nil {
		return verdict{}, err
	}
	type key struct{ u, c string }
	recs := map[key]evidence.Record{}
	for rows.Next() {
		var r evidence.Record
		var prefix []byte
		if err := rows.Scan(&r.UserID, &r.ConversationID, &r.Version, &r.Cursor, &r.MessageCount, &prefix, &r.Body); err != nil {
			rows.Close()
			return verdict{}, err
		}
		copy(r.PrefixDigest[:], prefix)
		recs[key{r.UserID, r.ConversationID}] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return verdict{}, err
	}
	v := verdict{States: len(convs)}
	for _, r := range recs {
		s, err := r.State()
		if err != nil {
			return v, fmt.Errorf("%s/%s: decode state: %w", r.UserID, r.ConversationID, err)
		}
		v.Dups += duplicates(&s)
	}
	for _, c := range convs {
		r, ok := recs[key{c.User, c.Conv}]
		if !ok {
			v.Lost++
			v.Diffs = append(v.Diffs, fmt.Sprintf("%s/%s: no state", c.User, c.Conv))
			continue
		}
		if d := diffState(&r, c); d != "" {
			v.Lost++
			v.Diffs = append(v.Diffs, fmt.Sprintf("%s/%s: %s", c.User, c.Conv, d))
			continue
		}
		v.Matching++
	}
	return v, nil
}

// duplicates counts the entries of s that repeat another's place: its
// message index and, in the focus profile, whose entries are sentences of a
// message, its span.
func duplicates(s *evidence.State) int {
	type place struct {
		index int
		span  evidence.Span
	}
	seen := map[place]int{}
	for _, b := range [][]evidence.Entry{s.Buckets.Constraints, s.Buckets.Decisions, s.Buckets.OpenWork, s.Buckets.RecentContext} {
		for _, e := range b {
			seen[place{e.Index, e.Span}]++
		}
	}
	n := 0
	for _, k := range seen {
		n += k - 1
	}
	return n
}

// diffState says how a stored record differs from the oracle ("" when it
// does not).
func diffState(r *evidence.Record, c *conversation) string {
	got, err := r.State()
	if err != nil {
		return err.Error()
	}
	want := c.Oracle
	longest := slices.Max(c.Snapshots)
	switch {
	case got.Cursor != want.Cursor:
		return fmt.Sprintf("cursor %d, want %d", got.Cursor, want.Cursor)
	case got.PrefixDigest != want.PrefixDigest:
		return "prefix_digest differs"
	case got.OmittedEntries != want.OmittedEntries:
		return fmt.Sprintf("omitted_entries %d, want %d", got.OmittedEntries, want.OmittedEntries)
	case r.MessageCount != longest:
		return fmt.Sprintf("message_count %d, want %d", r.MessageCount, longest)
	}
	gb, _ := json.Marshal(got.Buckets)
	wb, _ := json.Marshal(want.Buckets)
	if string(gb) != string(wb) {
		return "buckets differ"
	}
	return ""
}

// waitConverged polls until every conversation equals its oracle or the
// timeout passes, and returns the last verdict and how long it took.
func waitConverged(t *testing.T, pool *pgxpool.Pool, convs []*conversation, timeout time.Duration) (verdict, time.Duration) {
	t.Helper()
	start := time.Now()
	var v verdict
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var err error
		v, err = check(ctx, pool, convs)
		cancel()
		if err == nil && v.Matching == v.States {
			return v, time.Since(start)
		}
		if time.Since(start) > timeout {
			if err != nil {
				t.Errorf("reading states: %v", err)
			}
			return v, time.Since(start)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// consumerPending returns the consumer's undelivered and unacknowledged
// counts.
func consumerPending(ctx context.Context, js jetstream.JetStream) (pending uint64, ackPending int, err error) {
	c, err := js.Consumer(ctx, stream, durable)
	if err != nil {
		return 0, 0, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	return info.NumPending, info.NumAckPending, nil
}

// waitStreamDone waits until every event was delivered and acknowledged
// (or terminated).
func waitStreamDone(t *testing.T, js jetstream.JetStream, timeout time.Duration) (time.Duration, bool) {
	t.Helper()
	start := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		p, ap, err := consumerPending(ctx, js)
		cancel()
		if err == nil && p == 0 && ap == 0 {
			return time.Since(start), true
		}
		if time.Since(start) > timeout {
			t.Logf("stream not drained after %s: pending %d, ack pending %d (%v)", timeout, p, ap, err)
			return time.Since(start), false
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// rejectionCount returns the rows of recall_rejection.
func rejectionCount(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM recall_rejection`).Scan(&n)
	return n, err
}

// jobStates counts River's jobs by state.
func jobStates(ctx context.Context, pool *pgxpool.Pool) (map[string]int, error) {
	rows, err := pool.Query(ctx, `SELECT state::text, count(*) FROM river_job WHERE kind = 'recall_extract' GROUP BY 1`)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			rows.Close()
			return nil, err
		}
		out[s] = n
	}
	rows.Close()
	return out, rows.Err()
}

var _ = pgx.ErrNoRows
