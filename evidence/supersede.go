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

// entryWords is what supersession compares of an entry, read when first
// needed.
type entryWords struct {
	words      []string            // terms without a digit
	numbers    []string            // words with a digit
	slots      map[string][]string // a word next to numbers, and those numbers
	read       bool                // numbers has been read
	slotted    bool                // slots has been read
	cue, cueOK bool                // correction cue, and whether it was read
}

// corrections finds, among a view's candidates, the entries a newer user
// entry corrects. It reads an entry's numbers, slots and cues only when it
// is asked about an entry that shares words with a newer one, so that a view
// pays for the entries it considers showing, not for every candidate.
type corrections struct {
	items  []*Item // in history order
	infos  []entryWords
	index  map[windowKey]int
	byWord map[string][]int // the rare words' entries, in history order
	counts []int            // scratch: shared words per newer entry
	memo   map[windowKey]bool
}

// newCorrections indexes items, the candidates in history order.
func newCorrections(items []*Item) *corrections {
	c := &corrections{items: items, infos: make([]entryWords, len(items)),
		index: make(map[windowKey]int, len(items)), counts: make([]int, len(items)), memo: make(map[windowKey]bool)}
	df := make(map[string]int32, 4*len(items))
	for i, it := range items {
		c.index[windowKey{it.Index, it.Span[0]}] = i
		for _, t := range it.Terms {
			if !hasDigit(t) {
				c.infos[i].words = append(c.infos[i].words, t)
				df[t]++
			}
		}
	}
	maxDF := int32(max(2, int(supersedeMaxShare*float64(len(items)))))
	c.byWord = make(map[string][]int, len(df))
	for i := range items {
		if items[i].Role != RoleUser {
			continue // only the user's entries correct
		}
		for _, w := range c.infos[i].words {
			if df[w] <= maxDF {
				c.byWord[w] = append(c.byWord[w], i)
			}
		}
	}
	return c
}

// superseded reports whether a newer user entry among the candidates
// corrects it.
func (c *corrections) superseded(it *Item) bool {
	k := windowKey{it.Index, it.Span[0]}
	if v, ok := c.memo[k]; ok {
		return v
	}
	v := c.find(it)
	c.memo[k] = v
	return v
}

func (c *corrections) find(it *Item) bool {
	x, ok := c.index[windowKey{it.Index, it.Span[0]}]
	if !ok {
		return false
	}
	ix := c.numbers(x)
	if len(ix.numbers) == 0 {
		return false
	}
	// Count the rare words each newer user entry shares with it.
	var touched []int
	for _, w := range ix.words {
		for _, y := range c.byWord[w] {
			if y == x || !c.items[y].Newer(it) {
				continue
			}
			if c.counts[y] == 0 {
				touched = append(touched, y)
			}
			c.counts[y]++
		}
	}
	found := false
	for _, y := range touched {
		n := c.counts[y]
		c.counts[y] = 0
		if found {
			continue
		}
		iy := c.numbers(y)
		if float64(n) < supersedeOverlap*float64(min(len(ix.words), len(iy.words))) {
			continue
		}
		if !iy.cueOK {
			iy.cue, iy.cueOK = correction(c.items[y].Excerpt), true
		}
		found = iy.cue || n >= 2 && differ(ix.numbers, iy.numbers) && sharesSlot(c.slots(x), c.slots(y))
	}
	return found
}

// numbers returns entry i's words with their numbers read.
func (c *corrections) numbers(i int) *entryWords {
	e := &c.infos[i]
	if !e.read {
		e.read = true
		e.numbers = numbersOf(c.items[i].Excerpt)
	}
	return e
}

// slots returns entry i's number slots.
func (c *corrections) slots(i int) map[string][]string {
	e := &c.infos[i]
	if !e.slotted {
		e.slotted = true
		e.slots = numberSlots(c.items[i].Excerpt)
	}
	return e.slots
}

// numbersOf returns the words of text that hold a digit, lower-cased.
func numbersOf(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		start, end := nextWord(text, i)
		if start < 0 {
			break
		}
		i = end
		if w := text[start:end]; hasDigit(w) {
			out = append(out, normaliseWord(w))
		}
	}
	return out
}

func hasDigit(s string) bool { return strings.IndexFunc(s, unicode.IsDigit) >= 0 }

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
		case hasDigit(w):
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
