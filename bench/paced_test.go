package bench

import (
	"testing"
	"time"

	"github.com/recallhq/recall/checkpoint"
)

// TestPacedLoad checks the paced scenario's events: each conversation's
// turns follow one another, append events carry the chain digest of the
// history they extend, every snapshotEvery-th turn is a whole snapshot, and
// the conversations are spread so that the rate holds.
func TestPacedLoad(t *testing.T) {
	e := &env{sz: sizes{pacedPeriod: 4 * time.Second}}
	l, err := e.pacedLoad("t", 25, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.convs != 100 {
		t.Fatalf("convs = %d, want 100 (25 events/s, a turn every 4s)", l.convs)
	}
	held := make(map[[2]string]checkpoint.Digest) // each conversation's chain digest
	lengths := make(map[[2]string]int)
	for j := range 6 * l.convs {
		u, c, turn, data := l.event("id", j)
		if want := j/l.convs + 1; turn != want {
			t.Fatalf("event %d: turn %d, want %d", j, turn, want)
		}
		ev, err := checkpoint.ParseEvent(data, checkpoint.Limits{})
		if err != nil {
			t.Fatalf("event %d: %v", j, err)
		}
		k := [2]string{u, c}
		if turn%snapshotEvery == 1 {
			if ev.Offset != 0 {
				t.Fatalf("event %d (turn %d): offset %d, want a whole snapshot", j, turn, ev.Offset)
			}
		} else if ev.Offset != lengths[k] || ev.PrefixDigest != held[k] {
			t.Fatalf("event %d (turn %d): offset %d, want %d, or a prefix digest that is not the history's", j, turn, ev.Offset, lengths[k])
		}
		if ev.End() != turnLength(turn) {
			t.Fatalf("event %d: ends at %d, want %d", j, ev.End(), turnLength(turn))
		}
		lengths[k], held[k] = ev.End(), l.chains[ev.End()]
	}
}
