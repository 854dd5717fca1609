package evidence

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// TestValueSlots checks what things a statement names near which values.
func TestValueSlots(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		text  string
		thing string
		want  []string
	}{
		{"My heroine Zofia Lenartowicz is 27, a war widow.", "zofia", []string{"lenartowicz", "27"}},
		{"Make Zofia 33.", "zofia", []string{"33"}},
		{"The warehouse fire is the night of 9 January 1927.", "night", []string{"9", "january", "1927"}},
		{"Baner ki chaabi 12 March ko dega.", "chaabi", []string{"12", "march"}},
		{"1箱の上限は15kgくらいでいいかな", "上限", []string{"1", "15kg"}},
	} {
		slots, _ := valueSlots(tt.text)
		if got := slots[tt.thing]; !slices.Equal(got, tt.want) {
			t.Errorf("valueSlots(%q)[%q] = %q, want %q (all: %v)", tt.text, tt.thing, got, tt.want, slots)
		}
	}
	if slots, _ := valueSlots("We must keep the crate dry and away from the sun."); len(slots) != 0 {
		t.Errorf("a statement that names no value has slots %v", slots)
	}
}

// filler returns n messages of small talk that name nothing the test's
// statements name, a user's and the assistant's in turn.
func filler(n int) []checkpoint.Message {
	var out []checkpoint.Message
	for i := range n {
		text := fmt.Sprintf("Checklist step %c%c for the chapter is done and the editor signed it off.", 'a'+i/26%26, 'a'+i%26)
		if i%2 == 0 {
			out = append(out, checkpointtest.User(fmt.Sprintf("f%d", i), text))
		} else {
			out = append(out, checkpointtest.Assistant(fmt.Sprintf("f%d", i), "Noted."))
		}
	}
	return out
}

// shownExcerpts returns the excerpts a state's view shows.
func shownExcerpts(s *State) []string {
	var out []string
	for _, sh := range s.Shown {
		out = append(out, sh.Excerpt)
	}
	return out
}

func anyHolds(list []string, text string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, text) })
}

// TestCorrectionAcrossTheArchive checks that a correction found across the
// whole archive, hundreds of messages after what it corrects, never lets
// the view show the older value without the newer, however small the
// bound, while the archive keeps both.
func TestCorrectionAcrossTheArchive(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ older, newer, oldText, newText string }{
		{"My heroine Zofia Lenartowicz is 27, a war widow who works as a proofreader.", "Make Zofia 33, it fits the timeline better.", "is 27", "Make Zofia 33"},
		{"For the shuttle we plan 8 buses at the peak on Friday.", "Correction: we need 11 buses at the peak instead of 8.", "plan 8 buses", "we need 11 buses"},
		{"The warehouse fire is the night of 9 January 1927.", "So: move the fire to the night of 2 February 1927.", "9 January 1927", "2 February 1927"},
	} {
		h := []checkpoint.Message{checkpointtest.User("m0", tt.older), checkpointtest.Assistant("m1", "Noted.")}
		h = append(h, filler(300)...)
		h = append(h, checkpointtest.User("n", tt.newer), checkpointtest.Assistant("n1", "Updated."))
		h = append(h, filler(40)...)
		h = append(h, checkpointtest.User("last", "What is next?"))
		for _, maxTokens := range []int{150, 300, 600, DefaultMaxTokens} {
			s, _, err := Fold(NewState(), h, &Config{MaxTokens: maxTokens})
			if err != nil {
				t.Fatal(err)
			}
			shown := shownExcerpts(&s)
			if anyHolds(shown, tt.oldText) && !anyHolds(shown, tt.newText) {
				t.Errorf("%d tokens: %q shown without %q: %q", maxTokens, tt.oldText, tt.newText, shown)
			}
			if maxTokens == DefaultMaxTokens && !anyHolds(shown, tt.newText) {
				t.Errorf("the correction %q is not shown: %q", tt.newText, shown)
			}
			kept := slices.ContainsFunc(s.Archive.Items(), func(it Item) bool { return strings.Contains(it.Excerpt, tt.oldText) })
			if !kept {
				t.Errorf("the archive lost %q", tt.oldText)
			}
		}
	}
}

// TestListsAreNoCorrections checks that statements listing things side by
// side, each with its own values, do not hide one another.
func TestListsAreNoCorrections(t *testing.T) {
	t.Parallel()
	var h []checkpoint.Message
	for i := range 12 {
		h = append(h,
			checkpointtest.User(fmt.Sprintf("u%d", i), fmt.Sprintf("Shed %d by the north gate holds %d boxes of tiles.", i+1, 3*i+7)),
			checkpointtest.Assistant(fmt.Sprintf("a%d", i), "Noted."))
	}
	h = append(h, checkpointtest.User("last", "Where are the tiles?"))
	s, _, err := Fold(NewState(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	shown := shownExcerpts(&s)
	for i := range 12 {
		if text := fmt.Sprintf("Shed %d by", i+1); !anyHolds(shown, text) {
			t.Errorf("%q is not shown: %q", text, shown)
		}
	}
}

// TestNeverShownWithoutItsCorrection checks the view's promise on random
// conversations of statements about a few things with changing values,
// folded in random batches: an entry a later one may correct (Item.Fix,
// from the table's Maybe) is never shown without that later one, at any
// bound, and a question or an addition corrects nothing.
func TestNeverShownWithoutItsCorrection(t *testing.T) {
	t.Parallel()
	things := []string{"the shuttle", "the rehearsal", "Zofia's age", "the deposit", "the flight", "la fecha de entrega", "die Anreise"}
	w := FittedWeights()
	for seed := range uint64(25) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var h []checkpoint.Message
		for i := range 60 + rng.IntN(100) {
			th := things[rng.IntN(len(things))]
			var text string
			switch rng.IntN(5) {
			case 0:
				text = fmt.Sprintf("%s is on %d March at %d.", th, 1+rng.IntN(28), 7+rng.IntN(12))
			case 1:
				text = fmt.Sprintf("Actually %s moves to %d April instead.", th, 1+rng.IntN(28))
			case 2:
				text = fmt.Sprintf("Is %s still %d euros?", th, 100+rng.IntN(900))
			case 3:
				text = fmt.Sprintf("Also, %s costs %d euros.", th, 100+rng.IntN(900))
			default:
				text = fmt.Sprintf("Thanks, that works for %s.", th)
			}
			if i%2 == 0 {
				h = append(h, checkpointtest.User(fmt.Sprint(i), text))
			} else {
				h = append(h, checkpointtest.Assistant(fmt.Sprint(i), text))
			}
		}
		h = append(h, checkpointtest.User("last", "What do we know about the dates?"))
		cfg := &Config{MaxTokens: 100 + rng.IntN(1700)}
		s := NewState()
		for end := 1; end <= len(h); end += 1 + rng.IntN(9) {
			var err error
			if s, _, err = Fold(s, h[:end], cfg); err != nil {
				t.Fatal(err)
			}
			if s.Archive == nil {
				continue
			}
			at := make(map[[2]int]bool)
			for _, sh := range s.Shown {
				at[[2]int{sh.Index, sh.Span[0]}] = true
			}
			for _, it := range s.Archive.Items() {
				if it.Fix == (Fix{}) || chanceOf(it.Fix.Chance) < w.Corrections.Maybe || !at[[2]int{it.Index, it.Span[0]}] {
					continue
				}
				if !at[[2]int{it.Fix.Index, it.Fix.Start}] {
					t.Fatalf("seed %d, %d messages: %q shown without the later entry #%d that may correct it", seed, end, it.Excerpt, it.Fix.Index)
				}
				later := h[it.Fix.Index].Text
				if question(later) || adds(later) {
					t.Fatalf("seed %d: %q linked to %q, which asks or adds", seed, it.Excerpt, later)
				}
			}
		}
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

// TestOneNumberIsAValue checks that a statement's only number is its value,
// not the name of a thing: "we plan 8 buses" and "we plan 11 buses" speak
// of one thing, and the later may correct the earlier ("Shed 1 holds 7
// boxes" and "Shed 3 holds 13 boxes" speak of two: TestListsAreNoCorrections).
func TestOneNumberIsAValue(t *testing.T) {
	t.Parallel()
	for _, newer := range []string{
		"Change of plan: for the shuttle we plan 11 buses at the peak instead of 8.",
		"Correction: for the shuttle we plan 11 buses at the peak, not 8.",
	} {
		h := []checkpoint.Message{
			checkpointtest.User("m0", "For the shuttle we plan 8 buses at the peak."),
			checkpointtest.Assistant("m1", "Noted."),
			checkpointtest.User("m2", newer),
			checkpointtest.Assistant("m3", "Updated."),
			checkpointtest.User("m4", "What is left to book?"),
		}
		s, _, err := Fold(NewState(), h, nil)
		if err != nil {
			t.Fatal(err)
		}
		if fix := s.Archive.Items()[0].Fix; fix.Index != 2 || fix.Chance == 0 {
			t.Errorf("%q: the plan's correction is %+v, want message 2 with a chance", newer, fix)
		}
	}
}
