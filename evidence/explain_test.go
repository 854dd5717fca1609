package evidence

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// explainFolded folds history and explains the view of its newest request
// within maxTokens, as the inspector does over the stored archive.
func explainFolded(tb testing.TB, history []checkpoint.Message, maxTokens int) (*Archive, *Explanation, View) {
	tb.Helper()
	s, _, err := Fold(NewState(), history, nil)
	if err != nil {
		tb.Fatalf("Fold: %v", err)
	}
	request := history[NewestRequest(history)]
	c, q := s.Candidates(RequestText(&request))
	return s.Archive, ExplainView(c, q, maxTokens), SelectView(c, q, maxTokens)
}

// TestExplainCorrection checks that the explanation names the entry that
// supersedes a corrected one and the class each shown entry was shown as.
func TestExplainCorrection(t *testing.T) {
	t.Parallel()
	h := []checkpoint.Message{
		checkpointtest.User("m0", "For the shuttle we plan 8 buses at the peak."),
		checkpointtest.Assistant("m1", "Noted."),
		checkpointtest.User("m2", "The venue on Harbour Road holds 120 people."),
		checkpointtest.Assistant("m3", "Noted."),
		checkpointtest.User("m4", "Correction: for the shuttle we need 11 buses at the peak instead of 8."),
		checkpointtest.Assistant("m5", "Updated."),
		checkpointtest.User("m6", "What is left to book?"),
	}
	a, x, _ := explainFolded(t, h, DefaultMaxTokens)
	var planned, corrected *Item
	for i, it := range a.Items() {
		switch {
		case strings.Contains(it.Excerpt, "we plan 8 buses"):
			planned = &a.Items()[i]
		case strings.Contains(it.Excerpt, "we need 11 buses"):
			corrected = &a.Items()[i]
		}
	}
	if planned == nil || corrected == nil {
		t.Fatal("the archive lacks the plan or its correction")
	}
	want := Decision{Why: WhySuperseded, Classes: []string{"user", "recent"},
		SupersededBy: &EntryRef{Index: corrected.Index, SpanStart: corrected.Span[0], MessageID: "m4"}}
	if diff := cmp.Diff(want, x.Decision(planned)); diff != "" {
		t.Errorf("the plan's decision (-want +got):\n%s", diff)
	}
	// "instead" is a correction cue: the correction is a candidate of the
	// corrections' class and the user's, and shown as one of them (which,
	// the fitted balance decides).
	if d := x.Decision(corrected); d.Why != WhyShown || d.As != "correction" && d.As != "user" || !slices.Contains(d.Classes, "correction") {
		t.Errorf("the correction's decision is %+v, want shown as a correction or the user's", d)
	}
}

// TestExplainMatchesView checks, over random histories and bounds, that
// ExplainView chooses the view SelectView does, that the entries it calls
// shown are the view's, and that every other entry has a reason.
func TestExplainMatchesView(t *testing.T) {
	t.Parallel()
	whys := make(map[Why]int)
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 25))
		h, _ := checkpointtest.RandomHistory(t, r, 20+r.IntN(200))
		h = append(h, checkpointtest.User("request", "what about the deadline and the budget?"))
		maxTokens := 100 + r.IntN(1500)
		a, x, v := explainFolded(t, h, maxTokens)
		if diff := cmp.Diff(v, x.View); diff != "" {
			t.Fatalf("seed %d: ExplainView's view differs from SelectView's (-select +explain):\n%s", seed, diff)
		}
		shown := make(map[windowKey]bool)
		for _, s := range v.Shown {
			shown[windowKey{s.Index, s.Span[0]}] = true
		}
		for i := range a.Items() {
			it := &a.Items()[i]
			d := x.Decision(it)
			whys[d.Why]++
			if (d.Why == WhyShown) != shown[windowKey{it.Index, it.Span[0]}] {
				t.Fatalf("seed %d: entry %d/%d is %s, but shown is %v", seed, it.Index, it.Span[0], d.Why, shown[windowKey{it.Index, it.Span[0]}])
			}
			if d.Why == WhyShown && d.As == "" || d.Why != WhyNotCandidate && len(d.Classes) == 0 {
				t.Fatalf("seed %d: entry %d/%d has an incomplete decision %+v", seed, it.Index, it.Span[0], d)
			}
		}
	}
	for _, w := range []Why{WhyShown, WhyNoRoom, WhyNotCandidate} {
		if whys[w] == 0 {
			t.Errorf("no entry of any history was %s: %v", w, whys)
		}
	}
}
