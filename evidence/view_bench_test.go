package evidence

import (
	"fmt"
	"testing"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// BenchmarkSelectView chooses a view for a request from the candidates of
// an archive of 20,000 entries: the Go side of a search (the store reads
// the same candidates with one statement).
func BenchmarkSelectView(b *testing.B) {
	var h []checkpoint.Message
	for i := range 5000 {
		text := fmt.Sprintf("Kemal%d reviewed the budget for venue %d. The caterer %d holds %d people. We must keep ticket %d open. Thanks for the update on item %d.", i, i, i, i*3, i*7, i)
		if i%2 == 0 {
			h = append(h, checkpointtest.User(fmt.Sprint(i), text))
		} else {
			h = append(h, checkpointtest.Assistant(fmt.Sprint(i), text))
		}
	}
	h = append(h, checkpointtest.User("last", "How many people does the venue hold?"))
	s, _, err := Fold(NewState(), h, nil)
	if err != nil {
		b.Fatal(err)
	}
	c, q := s.Candidates("budget for the caterer and Kemal42")
	b.Logf("archive %d, candidates: relevant %d, tiers %d %d %d %d", s.Archive.Len(), len(c.Relevant), len(c.Tiers[0]), len(c.Tiers[1]), len(c.Tiers[2]), len(c.Tiers[3]))
	b.ReportAllocs()
	for b.Loop() {
		st := State{Cursor: 1}
		st.SetView(SelectView(c, q, DefaultMaxTokens))
		_ = AppendBody(nil, &st, 0)
	}
}
