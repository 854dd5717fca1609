package evidence

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// TestCorrectionSupersedes checks that a correction takes the place of what
// it corrects in the view while the archive keeps both, and that a later
// statement that only shares a word with an earlier fact does not.
func TestCorrectionSupersedes(t *testing.T) {
	t.Parallel()
	h := []checkpoint.Message{
		checkpointtest.User("m0", "For the shuttle we plan 8 buses at the peak."),
		checkpointtest.Assistant("m1", "Noted."),
		checkpointtest.User("m2", "The venue on Harbour Road holds 120 people."),
		checkpointtest.Assistant("m3", "Noted."),
		checkpointtest.User("m4", "The catering budget is 18,500 euros for all three days."),
		checkpointtest.Assistant("m5", "Noted."),
		checkpointtest.User("m6", "Correction: we need 11 buses at the peak instead of 8."),
		checkpointtest.Assistant("m7", "Updated."),
		checkpointtest.User("m8", "Harbour Road parking opens at 17:00."),
		checkpointtest.Assistant("m9", "Noted."),
		checkpointtest.User("m10", "What is left to book?"),
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

// TestCorrectionRules checks each way a newer statement of the user is
// told to correct an older one, and the statements that look like
// corrections but are not.
func TestCorrectionRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		older, newer string
		want         bool
	}{
		{"cue", "The state bucket lives in eu-central-1.", "The state bucket goes in eu-west-1 instead.", true},
		{"number put aside", "The agency wrote that he wants to keep 640 euros.", "So he withholds 715 euros, not 640, they added a cleaning fee.", true},
		{"small number put aside", "The check-out inspection was on 3 September.", "I was wrong: the check-out inspection was on Thursday 28 August, not 3 September.", true},
		{"new number in the same places", "We drive about 12,000 km per year, mostly to work.", "Count on about 19,000 km per year in total.", true},
		{"a number with separators of thousands put aside", "The landlord keeps 1,200 of the deposit.", "Hmm, 1,350 now, not 1,200.", true},
		{"a new number in the same places, written without spaces", "荷物は1人20kgまでにしよう。", "荷物は1人15kgまでに減らします。", true},
		{"a new number elsewhere, written without spaces", "荷物は1人20kgまでにしよう。", "駅までは徒歩15分です。", false},
		{"only one of its numbers put aside", "Pricing is 7.99 a month and 69 a year.", "The annual plan is 59 a year, not 69.", false},
		{"a question", "We drive about 12,000 km per year, mostly to work.", "Do we really drive 19,000 km per year now?", false},
		{"German also, which says so", "Wir planen 8 Busse für den Shuttle am Freitag.", "Also, wir brauchen 11 Busse für den Shuttle am Freitag.", true},
		{"a state not reached yet, then reached", "The landlord hasn't signed the lease extension yet.", "Good news: the landlord signed the lease extension today.", true},
		{"noch nicht, then done", "Den Antrag hat Papa noch nicht unterschrieben.", "Papa hat den Antrag heute unterschrieben!", true},
		{"not yet, then still not", "The landlord hasn't signed the lease extension yet.", "The landlord still hasn't signed the lease extension.", false},
		{"a rule, then the thing it rules out named", "There is no charger allowed in our garage.", "The charger in the office garage is free to use.", false},
		{"an addition", "The limit is 100 requests per minute per API key.", "Also, internal keys get 1000 requests per minute.", false},
		{"the same number named again", "The venue holds 120 people.", "The venue is on Harbour Road, 120 people standing.", false},
		{"a shared word only", "The catering budget is 18,500 euros.", "The catering tent goes up on Friday at 9.", false},
		{"a cue, no number and most words shared", "The kickoff dinner for 12 guests is at Casa Nova on Friday.", "The kickoff dinner is at Casa Verde instead, on Friday.", true},
		{"a cue, no number and two words shared", "We aim to keep the rent under 1,400 a month, as our friends who moved there did.",
			"Actually we no longer want a car, since our friends who moved there say the bus is fine.", false},
		{"a later line of the same message", "Poster session P4 is in Hall Rossio, Wednesday 15 October, 11:00 to 12:30.",
			"Presenters hang their poster in Hall Rossio by 09:45 and take it down after the session at 18:00.", false},
		{"a later line of the same message with a cue", "We book 8 rooms for the team.", "Correction: we book 11 rooms for the team instead of 8.", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := []checkpoint.Message{checkpointtest.User("m0", tc.older), checkpointtest.User("m1", tc.newer)}
			if strings.Contains(tc.name, "same message") {
				msgs = []checkpoint.Message{checkpointtest.User("m0", tc.older+"\n"+tc.newer)}
			}
			items := ExtractItems(msgs, 0, nil, nil)
			if len(items) != 2 {
				t.Fatalf("got %d items, want 2", len(items))
			}
			c := newCorrections(pointers(items))
			if got := c.superseded(&items[0]); got != tc.want {
				t.Errorf("%q superseded by %q: %v, want %v", tc.older, tc.newer, got, tc.want)
			}
			if c.superseded(&items[1]) {
				t.Error("the newer statement is superseded")
			}
		})
	}
}

// TestJoinThousands checks that a number written with separators of
// thousands reads as one number, and that decimals, dates and versions
// keep their separators.
func TestJoinThousands(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ text, want string }{
		{"early bird 9,999 until 15 June", "early bird 9999 until 15 June"},
		{"aylık 8.000 TL, önce 6.500 TL", "aylık 8000 TL, önce 6500 TL"},
		{"1.000.000 de euros", "1000000 de euros"},
		{"15\u00a0000 € et 2\u202f500 €", "15000 € et 2500 €"},
		{"9,999.50 in total", "9999.50 in total"},
		{"0,46 per kWh, Python 3.11, on 15.06.2025", "0,46 per kWh, Python 3.11, on 15.06.2025"},
		{"12,3456 and 1,23 and a,123 and 1, 234", "12,3456 and 1,23 and a,123 and 1, 234"},
		{"no digits at all", "no digits at all"},
	} {
		if got := joinThousands(tc.text); got != tc.want {
			t.Errorf("joinThousands(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	if got, want := numbersOf("Make it 10,999, not 9,999."), []string{"10999", "9999"}; !slices.Equal(got, want) {
		t.Errorf("numbersOf: %q, want %q", got, want)
	}
}

// TestUnspacedParts checks that the numbers of text written without
// spaces are read apart from the words around them.
func TestUnspacedParts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ text, want string }{
		{"1箱の上限は15kgくらい", "1# 箱の の上 上限 限は 15kg# くら らい"},
		{"중간고사를 8주차", "중간 간고 고사 사를 8# 주차"},
		{"11月14日", "11# 月 14# 日"},
		{"卸は40%引き", "卸は 40# 引き"},
		{"上限は１５ｋｇ", "上限 限は 15kg#"},
	} {
		var got []string
		for _, w := range splitWords(tc.text, nil) {
			if !hasUnspaced(w) {
				continue
			}
			for _, p := range unspacedParts(w) {
				if p.number {
					p.text += "#"
				}
				got = append(got, p.text)
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("unspacedParts(%q) = %q, want %q", tc.text, strings.Join(got, " "), tc.want)
		}
	}
}

// TestCorrectionRareInItsScript checks that the few sentences of a
// conversation written in another script than the rest do not make that
// script's common words look rare: two sentences that share only them and
// stand by other numbers are two facts.
func TestCorrectionRareInItsScript(t *testing.T) {
	t.Parallel()
	msgs := []checkpoint.Message{checkpointtest.User("m0", "एक कमरे में 40 से ज़्यादा कुर्सियाँ नहीं आएंगी।")}
	for i, text := range []string{"हम दिल्ली की ट्रेन लेंगे और शाम तक पहुँचेंगे।", "बजट से ज़्यादा खर्च नहीं करना है।",
		"मौसम की चिंता कम है।", "खाना घर पर बनता है।"} {
		msgs = append(msgs, checkpointtest.User(fmt.Sprintf("h%d", i), text))
	}
	for i := range 160 {
		msgs = append(msgs, checkpointtest.User(fmt.Sprintf("e%d", i), fmt.Sprintf("Checklist item %d is done and signed off.", i)))
	}
	msgs = append(msgs, checkpointtest.User("last", "कल 90 से ज़्यादा मेहमान आए।"))
	items := ExtractItems(msgs, 0, nil, nil)
	c := newCorrections(pointers(items))
	if by := c.by(&items[0]); by != nil {
		t.Errorf("%q superseded by %q", items[0].Excerpt, by.Excerpt)
	}
}

// TestMaybeChanged checks that where recall is not sure a later entry
// corrects an earlier one, the view shows the two together, the earlier
// marked with the later's index, or neither: never the earlier alone.
func TestMaybeChanged(t *testing.T) {
	t.Parallel()
	older := "In the first draft Zofia Lenartowicz is 27, a seamstress from Kazimierz who hides smuggled letters in the hems of winter coats."
	newer := "Zofia Lenartowicz should probably be 33 so that her brother's legion years and the tram strike both fit before the story starts."
	h := []checkpoint.Message{checkpointtest.User("m0", older), checkpointtest.Assistant("m1", "Noted.")}
	for i := range 120 {
		h = append(h, checkpointtest.User(fmt.Sprintf("f%d", i), fmt.Sprintf("Checklist item %d for the chapter is done and we signed it off with the editor.", i)))
	}
	h = append(h, checkpointtest.User("m-newer", newer), checkpointtest.Assistant("a", "Noted."), checkpointtest.User("last", "What do we know about Zofia Lenartowicz?"))
	newerIndex := len(h) - 3
	s, _, err := Fold(NewState(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, q := s.Candidates(h[len(h)-1].Text)
	for _, maxTokens := range []int{120, 160, 200, 300, 600, DefaultMaxTokens} {
		v := SelectView(c, q, maxTokens)
		var old *Entry
		shownNewer := false
		for i := range v.Shown {
			switch e := &v.Shown[i].Entry; {
			case strings.HasPrefix(older, e.Excerpt) || strings.Contains(older, e.Excerpt) && strings.Contains(e.Excerpt, "27"):
				old = e
			case strings.Contains(e.Excerpt, "should probably be 33"):
				shownNewer = true
			}
		}
		if old == nil {
			if maxTokens == DefaultMaxTokens {
				t.Fatalf("%d tokens: the earlier entry is not shown", maxTokens)
			}
			continue
		}
		if !shownNewer || old.MaybeChangedBy != newerIndex {
			t.Errorf("%d tokens: %q shown with maybe_changed_by %d, the later entry shown: %v; want %d and true",
				maxTokens, old.Excerpt, old.MaybeChangedBy, shownNewer, newerIndex)
		}
		if line := ModelLine(old); !strings.Contains(line, fmt.Sprintf("user #0 (maybe changed by #%d): ", newerIndex)) {
			t.Errorf("model line %q does not name the later entry", line)
		}
		if b := appendEntry(nil, old); !strings.Contains(string(b), fmt.Sprintf(`"maybe_changed_by":%d}`, newerIndex)) || len(b) != entryLen(old) {
			t.Errorf("entry JSON %s (len %d, entryLen %d)", b, len(b), entryLen(old))
		}
		// Rendered for a smaller max_tokens, the two still go together.
		for _, renderTokens := range []int{60, 80, 100, 120, 150, 200} {
			msg := RenderView(v.Shown, v.OmittedEntries, renderTokens)
			if msg == nil {
				continue
			}
			hasOld := strings.Contains(msg.Content, "(maybe changed by #")
			hasNewer := strings.Contains(msg.Content, fmt.Sprintf("user #%d: ", newerIndex))
			if hasOld && !hasNewer {
				t.Errorf("view at %d tokens rendered at %d: the earlier entry without the later", maxTokens, renderTokens)
			}
		}
	}
}

// TestMaybeChangedChoice checks that a choice named without a number, and
// a later statement with a cue about the same things, are a pair recall is
// not sure of; a later statement without a cue is none.
func TestMaybeChangedChoice(t *testing.T) {
	t.Parallel()
	older := "For the cover we picked the linocut of the Wawel dragon by Agata Nowicka, printed in two colours on cream paper."
	for _, tc := range []struct {
		newer string
		want  bool
	}{
		{"Actually Agata Nowicka thinks the Wawel dragon works better as a woodcut for the cover.", true},
		{"Agata Nowicka sent a photo of the Wawel dragon from her studio window.", false},
	} {
		msgs := []checkpoint.Message{checkpointtest.User("m0", older)}
		for i := range 120 {
			msgs = append(msgs, checkpointtest.User(fmt.Sprintf("f%d", i), fmt.Sprintf("Checklist item %d for the chapter is done and we signed it off with the editor.", i)))
		}
		msgs = append(msgs, checkpointtest.User("m-newer", tc.newer))
		items := ExtractItems(msgs, 0, nil, nil)
		c := newCorrections(pointers(items))
		if c.superseded(&items[0]) {
			t.Errorf("%q: superseded, want at most a pair", tc.newer)
		}
		if got := c.follow(&items[0]) != nil; got != tc.want {
			t.Errorf("%q: may change the choice: %v, want %v", tc.newer, got, tc.want)
		}
	}
}
