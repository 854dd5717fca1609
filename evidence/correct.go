package evidence

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/recallhq/recall/checkpoint"
)

// Corrections: one rule over named things. A statement is about some
// things, each named near a value: a number, an amount, a date, a day, a
// time, a person's or a place's name ("Zofia is 27", "the fire is the
// night of 9 January", "we go with Jase at ByteRight"). A later statement
// of the user that names one of the same things near another value ("make
// Zofia 33", "move the fire to the night of 2 February") gives the thing a
// new value: it is the current one, the older statement is history.
//
// When an extraction adds a user's statement that names values, it reads,
// through the archive's index on the things named near them, the newest
// earlier entries that name one of them (CorrectionLimit of them, across
// the whole archive), and weighs each pair by its features (pairFeatures:
// the things named in both with other values, those named with the same,
// the words the two share, a cue such as "instead", a number put aside,
// another day or name, …) with the fitted table's weights
// (Weights.Corrections). A pair whose chance reaches Corrections.Maybe links
// the older entry to the newer (Item.Fix): a view never shows the older one
// without the newer; from Corrections.Sure it shows the newer in its place.
// The newer entry's best chance is its feature FeatUpdate: a statement that
// gives a thing a new value is one a later request needs.
//
// The pairs are read once, when the newer entry is extracted, and kept with
// the older one, so a view needs no more reads than before, and what a view
// shows is still a function of the history alone.

// CorrectionLimit bounds the earlier entries an extraction reads for each
// new statement that names values.
const CorrectionLimit = 64

// maxSlotTerms bounds the things of one statement the index is asked for.
const maxSlotTerms = 12

// slotReach is how many words on each side of a value name what it is the
// value of.
const slotReach = 3

// Fix is, on an archive entry, the later entry of the user that may give
// what it says a new value (Index and Start name it: its message and the
// start of its span), and the chance that it does, in ten thousandths. The
// zero Fix is none: a correction is always in a later message, never
// message 0. A view reads the chance against the table's thresholds
// (CorrectionWeights), so that they are fitted without extracting again.
type Fix struct {
	Index  int `json:"index"`
	Start  int `json:"start"`
	Chance int `json:"chance"`
}

// linkFloor is the least chance of a pair that is kept as a Fix: below it
// no fitted threshold would read it.
const linkFloor = 0.3

// markFloor is the update chance from which a new statement is one of the
// user's corrections (traitsCorrection), which a view shows first within
// their share.
const markFloor = 0.7

// valued is what correction pairs compare of an entry, read once.
type valued struct {
	slots    map[string][]string // a term near a value, and the values
	terms    map[string]bool     // its terms without digits
	numbers  []string
	calendar map[string]bool
	names    map[string]bool
	ids      map[string]string // a word a number names a thing with ("shed 1"), and the number
	read     bool
}

// readValued reads what pairs compare of text.
func readValued(text string) valued {
	v := valued{read: true, terms: make(map[string]bool)}
	v.slots, v.names = valueSlots(text)
	for _, t := range Terms(text) {
		if !hasDigit(t) {
			v.terms[t] = true
		}
	}
	v.numbers = numbersOf(text)
	v.ids = identifiers(text)
	for _, w := range splitWords(text, nil) {
		if calendarWords[w] && len(w) > 3 {
			if v.calendar == nil {
				v.calendar = make(map[string]bool)
			}
			v.calendar[w] = true
		}
	}
	return v
}

// identifiers returns the things text names by a word and a number right
// after it ("Shed 1", "item 3", "room 12"), each word's term and its
// number: the number says which thing, not how much of it. A statement
// with one number names nothing by it: that number is its value ("we plan
// 8 buses", "we need 11 buses").
func identifiers(text string) map[string]string {
	var m map[string]string
	words := strings.Fields(text)
	numbers := 0
	for _, w := range words {
		if hasDigit(w) {
			numbers++
		}
	}
	if numbers < 2 {
		return nil
	}
	st := newStemmer(guessLanguage(splitWords(text, nil)))
	for i := 1; i < len(words); i++ {
		num := strings.TrimRight(words[i], ".,;:!?)")
		if num == "" || len(num) > 4 || strings.Trim(num, "0123456789") != "" {
			continue
		}
		prev := splitWords(words[i-1], nil)
		if len(prev) != 1 || strings.ContainsAny(words[i-1], ".,;:!?)") || calendarWords[prev[0]] {
			continue
		}
		if t := st.term(prev[0]); t != "" && !hasDigit(t) {
			if m == nil {
				m = make(map[string]string)
			}
			m[t] = num
		}
	}
	return m
}

// capitalisedNames returns the words of text, lower-cased, written with a
// capital first and a small letter last, other than its first word: the
// names of people, places and things in scripts with capitals.
func capitalisedNames(text string) map[string]bool {
	var m map[string]bool
	first := true
	for i := 0; i < len(text); {
		start, end := nextWord(text, i)
		if start < 0 {
			break
		}
		i = end
		w := strings.Trim(text[start:end], "'’")
		if first {
			first = false
			continue
		}
		r, _ := utf8.DecodeRuneInString(w)
		last, _ := utf8.DecodeLastRuneInString(w)
		if utf8.RuneCountInString(w) >= 2 && unicode.IsUpper(r) && unicode.IsLower(last) {
			if m == nil {
				m = make(map[string]bool)
			}
			m[normaliseWord(w)] = true
		}
	}
	return m
}

// valueSlots returns, for each thing text names near a value, the values
// it stands by, and the names: a thing is a term, or a capitalised name; a
// value a number, a calendar word (a day, a month) or a name, and in text
// written without spaces a number; a thing stands by the values within
// slotReach things of it ("Zofia is 27": zofia by 27; "move the fire to the
// night of 2 February": fire and night by 2 and february).
func valueSlots(text string) (map[string][]string, map[string]bool) {
	text = joinThousands(text)
	names := capitalisedNames(text)
	type word struct {
		term         string
		thing, value bool
	}
	var ws []word
	words := splitWords(text, nil)
	st := newStemmer(guessLanguage(words))
	for _, w := range words {
		switch {
		case hasUnspaced(w):
			for _, p := range unspacedParts(w) {
				ws = append(ws, word{p.text, !p.number, p.number})
			}
		case hasDigit(w), calendarWords[w] && len(w) > 3:
			// A day or a month by its name ("may", "sun", "mar" are words
			// too).
			ws = append(ws, word{term: w, value: true})
		case names[w]:
			ws = append(ws, word{w, true, true})
		default:
			if t := st.term(w); t != "" {
				ws = append(ws, word{term: t, thing: true})
			}
		}
	}
	var slots map[string][]string
	for i, w := range ws {
		if !w.value {
			continue
		}
		for _, dir := range []int{-1, 1} {
			seen := 0
			for j := i + dir; j >= 0 && j < len(ws) && seen < slotReach; j += dir {
				if !ws[j].thing {
					continue
				}
				seen++
				if ws[j].term == w.term {
					continue
				}
				if slots == nil {
					slots = make(map[string][]string)
				}
				if !contains(slots[ws[j].term], w.term) {
					slots[ws[j].term] = append(slots[ws[j].term], w.term)
				}
			}
		}
	}
	return slots, names
}

// Slots returns the things text names near a value (valueSlots), at most
// maxSlotTerms of them, sorted: what the archive's index finds an entry by
// when a later statement may correct it.
func Slots(text string) []string {
	slots, _ := valueSlots(text)
	v := valued{slots: slots}
	return v.slotTerms()
}

// slotTerms returns the terms of v's slots, at most maxSlotTerms, in a
// fixed order: what the index is asked for.
func (v *valued) slotTerms() []string {
	out := make([]string, 0, len(v.slots))
	for t := range v.slots {
		out = append(out, t)
	}
	slices.Sort(out)
	if len(out) > maxSlotTerms {
		// The longest terms say most about which thing it is.
		slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
		out = out[:maxSlotTerms]
		slices.Sort(out)
	}
	return out
}

// The features of a pair of entries, an older one and a newer statement of
// the user (pairFeatures). Each is a number in [0, 1].
const (
	PairBias      = iota // 1
	PairNumber           // a thing both name near numbers, with another number in the newer
	PairCalendar         // a thing both name near days or months, with another one in the newer
	PairName             // a thing both name near names, with another name in the newer
	PairSame             // things both name near the same values only
	PairKept             // a value both name: the same thing said again with another of its values
	PairThings           // the things both name near values
	PairCrowd            // how many of the newer's earlier entries name the changed thing near a value: a list, not a change
	PairShared           // the words they share
	PairRare             // the words they share that few of the newer's earlier entries read with it hold
	PairOverlap          // the share of the shorter one's words the two share
	PairCue              // the newer carries a correction cue ("instead", "statt", "改成")
	PairRevoked          // the newer puts a number of the older aside ("not 640")
	PairAdds             // the newer adds to what was said ("also")
	PairNotYet           // the older says a thing is not so yet, the newer says it without a negation
	PairAssistant        // the older is the assistant's
	PairDistance         // how many messages apart, on a log scale
	PairQuestion         // the older asks something
	NumPairFeatures
)

// pairNames are the pair features' names in the weight table.
var pairNames = [NumPairFeatures]string{PairBias: "bias", PairNumber: "number", PairCalendar: "calendar", PairName: "name",
	PairSame: "same", PairKept: "kept", PairThings: "things", PairCrowd: "crowd", PairShared: "shared", PairRare: "rare", PairOverlap: "overlap", PairCue: "cue",
	PairRevoked: "revoked", PairAdds: "adds", PairNotYet: "not_yet", PairAssistant: "assistant", PairDistance: "distance",
	PairQuestion: "question"}

// PairFeatureNames returns the names of the pair features, in order.
func PairFeatureNames() []string { return pairNames[:] }

// PairVector is a pair's features.
type PairVector [NumPairFeatures]float64

// Dot returns the sum of v's features weighed by w.
func (v *PairVector) Dot(w *[NumPairFeatures]float64) float64 {
	s := 0.0
	for i := range v {
		s += v[i] * w[i]
	}
	return s
}

// newer is what pairs read of the newer entry, once for all its pairs.
type newer struct {
	it      *Item
	v       valued
	cue     bool
	adds    bool
	revoked []string
	negated bool
}

func readNewer(it *Item) *newer {
	n := &newer{it: it, v: readValued(it.Excerpt)}
	n.cue, n.adds, n.revoked = correction(it.Excerpt), adds(it.Excerpt), revoked(it.Excerpt)
	n.negated = anyWord(it.Excerpt, negationWords, pastNegations)
	return n
}

// pairFeatures returns the features of the pair of o, older, and n; df
// counts, for each term, the earlier entries read with n that hold it, and
// crowd, for each thing, those that name it near a value.
func pairFeatures(o *Item, ov *valued, n *newer, df, crowd map[string]int) PairVector {
	var x PairVector
	x[PairBias] = 1
	things, same, crowded := 0, 0, 0
	var number, calendar, name bool
	for t, nv := range n.v.slots {
		vals, ok := ov.slots[t]
		if !ok {
			continue
		}
		things++
		changed := false
		for _, v := range nv {
			if contains(vals, v) {
				continue
			}
			kind := valueKind(v, n.v.names)
			for _, w := range vals {
				if valueKind(w, ov.names) == kind {
					changed = true
					number = number || kind == kindNumber
					calendar = calendar || kind == kindDate
					name = name || kind == kindName
				}
			}
		}
		if !changed {
			same++
		} else {
			crowded = max(crowded, crowd[t])
		}
	}
	x[PairCrowd] = float64(min(crowded, 8)) / 8
	set := func(f int, ok bool) {
		if ok {
			x[f] = 1
		}
	}
	set(PairNumber, number)
	set(PairCalendar, calendar)
	set(PairName, name)
	x[PairSame] = float64(min(same, 3)) / 3
	set(PairKept, sharesValue(ov.slots, n.v.slots))
	x[PairThings] = float64(min(things, 3)) / 3
	shared, rare := 0, 0
	for t := range ov.terms {
		if n.v.terms[t] {
			shared++
			if df[t] <= 2 {
				rare++
			}
		}
	}
	x[PairShared] = float64(min(shared, 5)) / 5
	x[PairRare] = float64(min(rare, 3)) / 3
	if m := min(len(ov.terms), len(n.v.terms)); m > 0 {
		x[PairOverlap] = float64(shared) / float64(m)
	}
	set(PairCue, n.cue)
	for _, v := range ov.numbers {
		if contains(n.revoked, v) {
			x[PairRevoked] = 1
		}
	}
	set(PairAdds, n.adds)
	if !n.negated && o.Index != n.it.Index {
		for _, t := range notYetTerms(o.Excerpt) {
			if n.v.terms[t] {
				x[PairNotYet] = 1
				break
			}
		}
	}
	set(PairAssistant, o.Role == checkpoint.RoleAssistant)
	x[PairDistance] = math.Min(1, math.Log1p(float64(n.it.Index-o.Index))/6)
	set(PairQuestion, question(o.Excerpt))
	return x
}

// sharesValue reports whether two entries' slots name a value in common.
func sharesValue(a, b map[string][]string) bool {
	vals := make(map[string]bool)
	for _, vs := range a {
		for _, v := range vs {
			vals[v] = true
		}
	}
	for _, vs := range b {
		for _, v := range vs {
			if vals[v] {
				return true
			}
		}
	}
	return false
}

// valueKind returns the kind of a value valueSlots read: a number, a date
// (a calendar word) or a name.
func valueKind(v string, names map[string]bool) int {
	switch {
	case names[v]:
		return kindName
	case calendarWords[v]:
		return kindDate
	}
	return kindNumber
}

// candidatePair reports whether a pair with features x may be a
// correction at all: the newer names a thing of the older near another
// value, puts a number of the older aside, says a thing the older said was
// not so yet, or carries a cue and shares words with it. Other pairs that
// share a word are too many to weigh: in a long conversation most things
// are named again, with other values, without being changed.
func candidatePair(x *PairVector) bool {
	if x[PairAdds] > 0 {
		return false // "also": it adds to what was said
	}
	return x[PairNumber] > 0 || x[PairCalendar] > 0 || x[PairName] > 0 || x[PairRevoked] > 0 || x[PairNotYet] > 0 ||
		x[PairCue] > 0 && x[PairShared] >= 0.4
}

// otherThings reports whether two entries name a thing by the same word
// and different numbers ("Shed 1 holds 7 boxes", "Shed 3 holds 13 boxes"):
// they speak of two things, side by side, and neither corrects the other.
func otherThings(o, n *valued) bool {
	for w, num := range n.ids {
		if other, ok := o.ids[w]; ok && other != num {
			return true
		}
	}
	return false
}

// corrects reports whether n is a statement that may give something a new
// value: the user's, no question, no chatter, naming values. (An addition,
// "also", corrects nothing either: candidatePair.)
func corrects(it *Item, v *valued) bool {
	return it.Role == checkpoint.RoleUser && len(v.slots) > 0 && !question(it.Excerpt) && !chatterItem(it)
}

// A Pair is an older entry and a newer statement of the user an extraction
// read together, with the pair's features: what the correction table is
// fitted on (package eval).
type Pair struct {
	Older, Newer Item
	X            PairVector
}

// trace is what FoldTrace is told.
type trace struct {
	pairs func(Pair)
	items func(Item, Vector)
}

// FoldTrace folds history from a new state as Fold does, in the focus
// profile, and calls pairs (when not nil) with every pair of an older entry
// and a newer statement its extractions read, and items (when not nil) with
// every entry they extracted and its features: what the scorer's tables are
// fitted on (package eval).
func FoldTrace(history []checkpoint.Message, cfg *Config, pairs func(Pair), items func(Item, Vector)) error {
	c := cfg.withDefaults()
	c.Profile = ProfileFocus
	c.trace = &trace{pairs: pairs, items: items}
	_, _, err := Fold(NewState(), history, &c)
	return err
}

// A link is a Fix to set on an older entry.
type link struct {
	older Item
	fix   Fix
}

// linkCorrections reads, for each new item of one extraction (items, in
// history order, not yet in the archive a) that may give something a new
// value, the newest earlier entries that name one of the same things, in
// one read of a, and weighs each pair by w. It sets each such item's
// update chance (FeatUpdate, in its weight) and marks it a correction
// when a pair reaches w's Maybe; it returns the links to set on the older
// entries, by their restatement keys (the newest correction of each), and
// each item's update chance. with, when not nil, is called with every pair
// read.
func linkCorrections(ctx context.Context, a Index, items []Item, w *Weights, with func(Pair)) (map[string]link, []float64, error) {
	var news []int
	var nvs []*newer
	var scans []Scan
	for i := range items {
		it := &items[i]
		n := readNewer(it)
		if !corrects(it, &n.v) || it.Index == 0 {
			continue
		}
		s := scanAll(Newest, CorrectionLimit+len(items))
		s.Slots = n.v.slotTerms()
		s.Before = it.Index
		news, nvs, scans = append(news, i), append(nvs, n), append(scans, s)
	}
	if len(scans) == 0 {
		return nil, nil, nil
	}
	lists, err := a.Scan(ctx, scans)
	if err != nil {
		return nil, nil, err
	}
	updates := make([]float64, len(items))
	links := make(map[string]link)
	read := make(map[*Item]*valued)
	valuedOf := func(it *Item) *valued {
		v, ok := read[it]
		if !ok {
			r := readValued(it.Excerpt)
			v = &r
			read[it] = v
		}
		return v
	}
	cw := &w.Corrections
	for k, i := range news {
		n := nvs[k]
		// The earlier entries as the archive held them when n's message
		// was extracted: those of this extraction's earlier messages, and
		// the archive's that none of them restates.
		olders := earlierItems(items, i, lists[k], s0(scans[k].Slots))
		df, crowd := make(map[string]int), make(map[string]int)
		for _, o := range olders {
			v := valuedOf(o)
			for t := range v.terms {
				df[t]++
			}
			for t := range v.slots {
				crowd[t]++
			}
		}
		best := 0.0
		for _, o := range olders {
			if o.Index == n.it.Index {
				continue // one message lists things, it does not correct itself
			}
			ov := valuedOf(o)
			x := pairFeatures(o, ov, n, df, crowd)
			if !candidatePair(&x) || otherThings(ov, &n.v) {
				continue
			}
			if with != nil {
				with(Pair{Older: *o, Newer: *n.it, X: x})
			}
			p := sigmoid(x.Dot(&cw.Features))
			best = max(best, p)
			// An entry keeps the pair it is likeliest to be corrected by,
			// the newest among equals: a view never shows it without that
			// one, which is shown with its own in turn.
			key := restatementKey(o.Excerpt)
			fix := Fix{Index: n.it.Index, Start: n.it.Span[0], Chance: weightOfChance(p)}
			cur := o.Fix
			if l, ok := links[key]; ok && l.older.Index == o.Index && l.older.Span[0] == o.Span[0] {
				cur = l.fix // an earlier copy of a restatement is gone with its link
			}
			if p >= linkFloor && fix.Chance >= cur.Chance {
				links[key] = link{older: *o, fix: fix}
			}

		}
		updateItem(&items[i], best, w)
		updates[i] = best
	}
	return links, updates, nil
}

// s0 returns terms as a set.
func s0(terms []string) map[string]bool {
	m := make(map[string]bool, len(terms))
	for _, t := range terms {
		m[t] = true
	}
	return m
}

// earlierItems returns, newest first and at most CorrectionLimit, the
// entries an archive held when the message of items[i] was extracted that
// name one of things near a value: those of items' earlier messages (the
// last copy of each restatement) and those of archived, the answer of the
// archive from before the extraction, that none of them restates.
func earlierItems(items []Item, i int, archived []Item, things map[string]bool) []*Item {
	msg := items[i].Index
	restated := make(map[string]bool)
	var out []*Item
	seen := make(map[string]bool)
	for j := i - 1; j >= 0; j-- {
		it := &items[j]
		if it.Index >= msg {
			continue
		}
		restated[it.Key] = true
		if seen[it.Key] {
			continue // an older copy of a restatement
		}
		seen[it.Key] = true
		if holdsAny(it.Slots, things) {
			out = append(out, it)
		}
	}
	for j := range archived {
		if len(out) == CorrectionLimit {
			break
		}
		it := &archived[j]
		if !restated[restatementKey(it.Excerpt)] {
			out = append(out, it)
		}
	}
	return out[:min(len(out), CorrectionLimit)]
}

func holdsAny(sorted []string, terms map[string]bool) bool {
	for _, t := range sorted {
		if terms[t] {
			return true
		}
	}
	return false
}

// updateItem sets the update chance p of a new item: its weight and tier
// as its features say with FeatUpdate at p, and the correction mark when
// p reaches the table's Maybe.
func updateItem(it *Item, p float64, w *Weights) {
	if p <= 0 {
		return
	}
	c := chanceOf(it.Weight)
	c = sigmoid(logit(c) + p*w.Features[FeatUpdate])
	it.Weight = weightOfChance(c)
	switch {
	case p >= markFloor && it.Tier != TierContext:
		it.Tier = TierUserKey
		it.Traits |= traitsCorrection
	case it.Tier == TierUserStatement && c >= keyChance, it.Tier == TierUserFact && c >= keyChance:
		it.Tier = TierUserKey
	case it.Tier == TierUserStatement && c >= factChance:
		it.Tier = TierUserFact
	}
}

// setLinks sets the links on the older entries: those of items, the
// extraction's, before they are added to the archive, and, once they are,
// those of the archive a (by Replace, as an accepted proposal is raised).
// A link is set only on the entry it was read from: an entry of the same
// words said again later is another statement.
func setLinks(items []Item, links map[string]link) (archived []Item) {
	if len(links) == 0 {
		return nil
	}
	inItems := make(map[string]bool)
	for i := range items {
		it := &items[i]
		l, ok := links[it.Key]
		if !ok {
			continue
		}
		inItems[it.Key] = true
		if it.Index == l.older.Index && it.Span[0] == l.older.Span[0] {
			it.Fix = l.fix
		}

	}
	for key, l := range links {
		if inItems[key] {
			continue // said again in this extraction: the archive's copy is gone
		}
		o := l.older
		o.Key, o.Fix = key, l.fix
		archived = append(archived, o)
	}
	slices.SortFunc(archived, func(x, y Item) int {
		return cmp.Or(cmp.Compare(x.Index, y.Index), cmp.Compare(x.Span[0], y.Span[0]))
	})
	return archived
}

// links are the corrections among a view's candidates: each candidate's
// later entry (Item.Fix), where the view has it.
type links struct {
	at map[windowKey]*Item
	w  *CorrectionWeights
}

// newLinks indexes items, a view's candidates, read by the thresholds of w.
func newLinks(items []*Item, w *CorrectionWeights) *links {
	l := &links{at: make(map[windowKey]*Item, len(items)), w: w}
	for _, it := range items {
		l.at[windowKey{it.Index, it.Span[0]}] = it
	}
	return l
}

// superseded reports whether a view shows it neither alone nor beside its
// later entry: recall is sure the later one corrects it, or the later one
// that may is not among the candidates (the older is then never shown
// without it).
func (l *links) superseded(it *Item) bool {
	p := chanceOf(it.Fix.Chance)
	if it.Fix == (Fix{}) || p < l.w.Maybe {
		return false
	}
	return p >= l.w.Sure || l.at[windowKey{it.Fix.Index, it.Fix.Start}] == nil
}

// follow returns the later entry that may correct it, which a view shows
// beside it or not at all; nil when there is none, or recall is sure.
func (l *links) follow(it *Item) *Item {
	if p := chanceOf(it.Fix.Chance); p >= l.w.Sure {
		return nil
	}
	return l.by(it)
}

// by returns the later entry that corrects it, or may, when it is among
// the candidates.
func (l *links) by(it *Item) *Item {
	if it.Fix == (Fix{}) || chanceOf(it.Fix.Chance) < l.w.Maybe {
		return nil
	}
	return l.at[windowKey{it.Fix.Index, it.Fix.Start}]
}
