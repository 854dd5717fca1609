package evidence

import (
	"strings"
	"unicode"
)

// Corrections supersede. A later statement of the user about the same
// thing ("we need 11 buses instead of 8", "state bucket goes in eu-west-1
// instead") takes the place of the earlier one in the view; the archive
// keeps both. Among a view's candidates, a newer user entry supersedes an
// older entry that names a number when they share words (names and nouns;
// not numbers, and not words that many candidates hold), at least a fifth
// of the shorter one's, and
//   - the newer one carries a correction cue ("instead", "actually",
//     "statt", "改成", …), or
//   - they share two such words, one of them stands next to a number in
//     both ("8 buses", "11 buses"), and the older one names a number the
//     newer one does not.
//
// recall cannot see a correction in other words than the fact's ("we
// planned 180 patients" corrected by "arriviamo a 232 pazienti"), nor one
// that names no number and no cue ("Series S is the priority SKU", then
// "PS5 base is the priority SKU now"). In text written without spaces,
// where words cannot be told apart, only a cue counts.

// supersedeMaxShare: a word that more than this share of the candidates
// hold says nothing about which thing an entry is about.
const supersedeMaxShare = 0.02

// supersedeOverlap: the share of the shorter entry's words the two must
// share.
const supersedeOverlap = 0.2

// slotReach is how many words on each side of a number name what it
// counts.
const slotReach = 2

// entryWords is what supersession compares of an entry.
type entryWords struct {
	words   []string            // terms without a digit
	numbers []string            // words with a digit
	slots   map[string][]string // a word next to numbers, and those numbers
}

// superseded returns the keys of the candidates that a newer candidate
// corrects.
func superseded(items []*Item) map[windowKey]bool {
	infos := make([]entryWords, len(items))
	df := make(map[string]int)
	for i, it := range items {
		for _, t := range it.Terms {
			if strings.IndexFunc(t, unicode.IsDigit) < 0 {
				infos[i].words = append(infos[i].words, t)
				df[t]++
			}
		}
	}
	// Numbers and slots are read only for the entries that share words
	// with a newer one, once each.
	read := make([]bool, len(items))
	numbers := func(i int) *entryWords {
		if !read[i] {
			read[i] = true
			if text := items[i].Excerpt; strings.ContainsAny(text, "0123456789") || hasUnspaced(text) {
				for _, w := range splitWords(text, nil) {
					if strings.IndexFunc(w, unicode.IsDigit) >= 0 {
						infos[i].numbers = append(infos[i].numbers, w)
					}
				}
			}
		}
		return &infos[i]
	}
	slotted := make([]bool, len(items))
	slots := func(i int) map[string][]string {
		if !slotted[i] {
			slotted[i] = true
			infos[i].slots = numberSlots(items[i].Excerpt)
		}
		return infos[i].slots
	}
	maxDF := max(2, int(supersedeMaxShare*float64(len(items))))
	byWord := make(map[string][]int)
	for i := range items {
		for _, w := range infos[i].words {
			if df[w] <= maxDF {
				byWord[w] = append(byWord[w], i)
			}
		}
	}
	out := make(map[windowKey]bool)
	shared := make(map[int]int)
	for y, newer := range items {
		if newer.Role != RoleUser || len(infos[y].words) == 0 {
			continue
		}
		clear(shared)
		for _, w := range infos[y].words {
			for _, x := range byWord[w] {
				if x != y && newer.Newer(items[x]) {
					shared[x]++
				}
			}
		}
		if len(shared) == 0 {
			continue
		}
		iy := numbers(y)
		cue, cueRead := false, false
		for x, n := range shared {
			older, ix := items[x], numbers(x)
			if len(ix.numbers) == 0 || float64(n) < supersedeOverlap*float64(min(len(ix.words), len(iy.words))) {
				continue
			}
			if !cueRead {
				cue, cueRead = correction(newer.Excerpt), true
			}
			switch {
			case cue:
			case n >= 2 && differ(ix.numbers, iy.numbers) && sharesSlot(slots(x), slots(y)):
			default:
				continue
			}
			out[windowKey{older.Index, older.Span[0]}] = true
		}
	}
	return out
}

// sharesSlot reports whether a word stands by a number in both.
func sharesSlot(older, newer map[string][]string) bool {
	for w := range newer {
		if _, ok := older[w]; ok {
			return true
		}
	}
	return false
}

// numberSlots returns, for each word within slotReach words of a number in
// text (stop words, days and months aside), the numbers it stands by.
func numberSlots(text string) map[string][]string {
	type word struct {
		term   string
		number bool
	}
	var ws []word
	words := splitWords(text, nil)
	st := newStemmer(guessLanguage(words))
	for _, w := range words {
		switch {
		case strings.IndexFunc(w, unicode.IsDigit) >= 0:
			ws = append(ws, word{w, true})
		case calendarWords[w] || hasUnspaced(w):
		default:
			if t := st.term(w); t != "" {
				ws = append(ws, word{t, false})
			}
		}
	}
	slots := make(map[string][]string)
	for i, w := range ws {
		if !w.number {
			continue
		}
		for _, dir := range []int{-1, 1} {
			seen := 0
			for j := i + dir; j >= 0 && j < len(ws) && seen < slotReach; j += dir {
				if ws[j].number {
					continue
				}
				seen++
				if !contains(slots[ws[j].term], w.term) {
					slots[ws[j].term] = append(slots[ws[j].term], w.term)
				}
			}
		}
	}
	return slots
}

// differ reports whether a, the older entry's numbers, holds one that b
// lacks, both being non-empty.
func differ(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	for _, x := range a {
		if !contains(b, x) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
