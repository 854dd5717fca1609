package checkpoint_test

import (
	"fmt"
	"testing"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// TestDecideLineage pins every outcome of the lineage decision against a
// held history of six messages, three of them summarised.
func TestDecideLineage(t *testing.T) {
	t.Parallel()
	msgs := func(prefix string, n int) []checkpoint.Message {
		var out []checkpoint.Message
		for i := range n {
			out = append(out, checkpointtest.User(fmt.Sprintf("%s%d", prefix, i), fmt.Sprintf("text %s %d", prefix, i)))
		}
		return out
	}
	held := msgs("a", 6)
	digests := make([]checkpoint.Digest, len(held))
	chains := make([]checkpoint.Digest, len(held)) // chains[i] = c_(i+1)
	c := checkpoint.ChainStart()
	for i := range held {
		d, err := held[i].Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests[i] = d
		c = c.Next(d)
		chains[i] = c
	}
	h := checkpoint.Held{Cursor: 3, Count: 6, Prefix: chains[2]}
	event := func(offset int, ms []checkpoint.Message) *checkpoint.Event {
		ev := &checkpoint.Event{Offset: offset, Messages: ms, PrefixDigest: checkpoint.ChainStart()}
		if offset > 0 && offset <= len(chains) {
			ev.PrefixDigest = chains[offset-1]
		}
		for i := range ms {
			d, _ := ms[i].Digest()
			ev.Digests = append(ev.Digests, d)
		}
		return ev
	}
	with := func(base []checkpoint.Message, tail ...checkpoint.Message) []checkpoint.Message {
		return append(append([]checkpoint.Message(nil), base...), tail...)
	}
	other := msgs("b", 4)
	badPrefix := event(4, held[4:5])
	badPrefix.PrefixDigest = chains[0]
	tests := []struct {
		name     string
		ev       *checkpoint.Event
		want     checkpoint.Outcome
		wantFrom int
	}{
		{"shorter than the cursor", event(0, held[:2]), checkpoint.Stale, 0},
		{"append past the held history", event(7, other[:1]), checkpoint.Gap, 0},
		{"another summarised prefix", event(0, with(other[:3], held[3:6]...)), checkpoint.PrefixMismatch, 0},
		{"wrong prefix_digest at the offset", badPrefix, checkpoint.PrefixMismatch, 0},
		{"the same history", event(0, held), checkpoint.Duplicate, 0},
		{"a part of the held tail", event(4, held[4:5]), checkpoint.Duplicate, 0},
		{"a different tail, not longer", event(0, with(held[:4], other[:2]...)), checkpoint.Stale, 0},
		{"a different, longer tail", event(0, with(held[:4], other[:3]...)), checkpoint.Accepted, 4},
		{"an extension by snapshot", event(0, with(held, other[:1]...)), checkpoint.Accepted, 6},
		{"an extension by append", event(6, other[:2]), checkpoint.Accepted, 6},
		{"an append overlapping the tail", event(5, with(held[5:6], other[:1]...)), checkpoint.Accepted, 6},
	}
	for _, tt := range tests {
		lo, hi := h.Range(tt.ev)
		lin, err := checkpoint.DecideLineage(h, tt.ev, digests[lo:hi], chains[lo:hi])
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if lin.Outcome != tt.want || (tt.want == checkpoint.Accepted && lin.From != tt.wantFrom) {
			t.Errorf("%s: %s from %d, want %s from %d", tt.name, lin.Outcome, lin.From, tt.want, tt.wantFrom)
		}
		if lin.Outcome == checkpoint.Accepted && lin.From > 0 && lin.Chain != chains[lin.From-1] {
			t.Errorf("%s: chain at %d is not the held one", tt.name, lin.From)
		}
		if lin.Outcome == checkpoint.PrefixMismatch && lin.Detail == "" {
			t.Errorf("%s: no detail", tt.name)
		}
	}
	if _, err := checkpoint.DecideLineage(h, event(0, held), nil, nil); err == nil {
		t.Error("DecideLineage accepted fewer held digests than Range names")
	}
}
