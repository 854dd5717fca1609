package evidence

import (
	"strings"
	"testing"
)

// TestCorrectionSupersedes checks that a correction takes the place of what
// it corrects in the view while the archive keeps both, and that a later
// statement that only shares a word with an earlier fact does not.
func TestCorrectionSupersedes(t *testing.T) {
	t.Parallel()
	h := []Message{
		user("m0", "For the shuttle we plan 8 buses at the peak."),
		assistant("m1", "Noted."),
		user("m2", "The venue on Harbour Road holds 120 people."),
		assistant("m3", "Noted."),
		user("m4", "The catering budget is 18,500 euros for all three days."),
		assistant("m5", "Noted."),
		user("m6", "Correction: we need 11 buses at the peak instead of 8."),
		assistant("m7", "Updated."),
		user("m8", "Harbour Road parking opens at 17:00."),
		assistant("m9", "Noted."),
		user("m10", "What is left to book?"),
	}
	s, _, err := Fold(NewState(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	shown := func(text string) bool {
		for b := range numBuckets {
			for _, e := range *s.Buckets.Get(b) {
				if strings.Contains(e.Excerpt, text) {
					return true
				}
			}
		}
		return false
	}
	if shown("we plan 8 buses") {
		t.Error("the corrected plan is still shown")
	}
	for _, text := range []string{"we need 11 buses", "holds 120 people", "opens at 17:00", "18,500 euros"} {
		if !shown(text) {
			t.Errorf("%q is not shown", text)
		}
	}
	kept := false
	for _, it := range s.Archive.Items() {
		kept = kept || strings.Contains(it.Excerpt, "we plan 8 buses")
	}
	if !kept {
		t.Error("the archive lost the corrected plan")
	}
}
