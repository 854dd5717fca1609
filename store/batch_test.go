package store_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/store"
)

// batchGen makes random events over a few conversations: snapshots and
// appends of a main history or of forks that diverge from it, some with a
// wrong prefix_digest, some far ahead (gaps), and deletes.
type batchGen struct {
	rng   *rand.Rand
	keys  [][2]string
	hists map[[2]string][][]json.RawMessage // the main history, then forks
	seq   uint64
	clock time.Time
	// progress is how far each conversation's agent has got.
	progress map[[2]string]int
}

func newBatchGen(seed uint64) *batchGen {
	g := &batchGen{rng: rand.New(rand.NewPCG(seed, 1)), keys: [][2]string{{"u", "c1"}, {"u", "c2"}, {"v", "c1"}, {"v", "c3"}},
		hists: map[[2]string][][]json.RawMessage{}, progress: map[[2]string]int{}, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, k := range g.keys {
		g.hists[k] = [][]json.RawMessage{g.messages(k, "m", 0, 8)}
	}
	return g
}

func (g *batchGen) messages(k [2]string, tag string, from, to int) []json.RawMessage {
	var out []json.RawMessage
	for i := from; i < to; i++ {
		role := "user"
		if g.rng.IntN(2) == 1 {
			role = "assistant"
		}
		b, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("%s%d", tag, i), "role": role,
			"content": fmt.Sprintf("%s/%s we must keep point %s-%d", k[0], k[1], tag, i)})
		out = append(out, b)
	}
	return out
}

// event returns a random event and its payload.
func (g *batchGen) event(t *testing.T) (*checkpoint.Event, []byte) {
	t.Helper()
	k := g.keys[g.rng.IntN(len(g.keys))]
	g.seq++
	id := fmt.Sprintf("e%d", g.seq)
	w := map[string]any{"schema": checkpoint.Schema, "event_id": id, "user_id": k[0], "conversation_id": k[1]}
	if k == g.keys[len(g.keys)-1] && g.rng.IntN(60) == 0 { // one conversation is deleted now and then
		w["kind"] = checkpoint.KindDelete
		return g.parse(t, w)
	}
	g.progress[k] += g.rng.IntN(3)
	p := g.progress[k]
	hs := g.hists[k]
	if len(hs[0]) < p+4 { // the agent's history grows
		hs[0] = append(hs[0], g.messages(k, "m", len(hs[0]), p+8)...)
	}
	if g.rng.IntN(10) == 0 { // a fork of the main history from near its end
		at := max(0, p-g.rng.IntN(4))
		fork := append(append([]json.RawMessage{}, hs[0][:at]...), g.messages(k, fmt.Sprintf("f%d-", g.seq), at, p+8)...)
		hs = append(hs, fork)
		g.hists[k] = hs
	}
	h := hs[0]
	if g.rng.IntN(4) == 0 {
		h = hs[g.rng.IntN(len(hs))]
	}
	end := min(len(h), max(1, p+g.rng.IntN(3)))
	if g.rng.IntN(10) == 0 { // an old history
		end = 1 + g.rng.IntN(end)
	}
	off := 0
	switch g.rng.IntN(4) {
	case 0:
	case 1:
		off = g.rng.IntN(end)
	default: // an append of the last few messages
		off = max(0, end-1-g.rng.IntN(3))
	}
	w["offset"] = off
	w["messages"] = h[off:end]
	raw, _ := json.Marshal(h[:off])
	msgs, err := checkpoint.DecodeMessages(raw)
	if err != nil {
		t.Fatal(err)
	}
	d, err := checkpoint.PrefixDigest(msgs, off)
	if err != nil {
		t.Fatal(err)
	}
	if off > 0 && g.rng.IntN(15) == 0 {
		d = checkpoint.ChainStart().Next(d) // a wrong prefix_digest
	}
	w["prefix_digest"] = d.String()
	return g.parse(t, w)
}

func (g *batchGen) parse(t *testing.T, w map[string]any) (*checkpoint.Event, []byte) {
	t.Helper()
	b, _ := json.Marshal(w)
	ev, err := checkpoint.ParseEvent(b, checkpoint.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return ev, b
}

// TestIngestBatchMatchesIngest ingests the same random batches one event at
// a time into one database and with IngestBatch into another, extracting
// now and then in both: every result and every table must be the same.
func TestIngestBatchMatchesIngest(t *testing.T) {
	t.Parallel()
	seq, bat := setup(t, time.Minute), setup(t, time.Minute)
	g := newBatchGen(13)
	outcomes := map[string]int{}
	for round := range 60 {
		n := 1 + g.rng.IntN(24)
		batch := make([]store.BatchEvent, n)
		for i := range batch {
			ev, payload := g.event(t)
			g.clock = g.clock.Add(time.Duration(g.rng.IntN(3000)-1000) * time.Millisecond)
			published := g.clock
			if g.rng.IntN(10) == 0 {
				published = time.Time{} // an event with no publication time
			}
			batch[i] = store.BatchEvent{Event: ev, Meta: store.Meta{Stream: "S", StreamSeq: g.seq, PublishedAt: published, Payload: payload}}
		}
		want := make([]store.Result, n)
		for i, e := range batch {
			res, err := seq.store.Ingest(t.Context(), e.Event, e.Meta)
			if err != nil {
				t.Fatalf("round %d: ingest %s: %v", round, e.Event.EventID, err)
			}
			want[i] = res
			outcomes[res.Outcome.String()+string(res.Reason)]++
		}
		got, err := bat.store.IngestBatch(t.Context(), batch)
		if err != nil {
			t.Fatalf("round %d: IngestBatch: %v", round, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round %d: results differ (-Ingest +IngestBatch):\n%s", round, diff)
		}
		if g.rng.IntN(4) == 0 {
			k := g.keys[g.rng.IntN(len(g.keys))]
			for _, tb := range []*testBundle{seq, bat} {
				if _, err := tb.store.Extract(t.Context(), k[0], k[1]); err != nil {
					t.Fatalf("round %d: extract: %v", round, err)
				}
			}
		}
		if diff := cmp.Diff(tables(t, seq), tables(t, bat)); diff != "" {
			t.Fatalf("round %d: tables differ (-Ingest +IngestBatch):\n%s", round, diff)
		}
	}
	t.Logf("outcomes: %v", outcomes)
	for _, o := range []string{"accepted", "duplicate", "stale", "gap", "deleted", "rejectedprefix_mismatch", "rejecteddeleted"} {
		if outcomes[o] == 0 {
			t.Errorf("the random batches never had outcome %s: %v", o, outcomes)
		}
	}
}

// tables dumps what ingest writes, without the times it stamps with now().
func tables(t *testing.T, tb *testBundle) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT user_id, conversation_id, version, "cursor", message_count, encode(prefix_digest, 'hex'), md5(body),
    deleted_at IS NOT NULL, published_at, extract_requested_at IS NOT NULL, archive_count, md5(view::text)
FROM recall_conversation ORDER BY 1, 2`,
		`SELECT user_id, conversation_id, idx, encode(digest, 'hex'), encode(chain, 'hex'), role, evidential,
    encode(message_id, 'escape'), md5(text) FROM recall_message ORDER BY 1, 2, 3`,
		`SELECT reason, detail, event_id, user_id, conversation_id, stream_seq, md5(payload), payload_bytes
FROM recall_rejection ORDER BY stream_seq`,
		`SELECT user_id, conversation_id, count(*) FROM test_enqueued GROUP BY 1, 2 ORDER BY 1, 2`,
	} {
		rows, err := tb.pool.Query(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.TrimSpace(fmt.Sprint(vals...)))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
