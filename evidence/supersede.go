package evidence

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/recallhq/recall/checkpoint"
)

// Corrections supersede. A later statement of the user about the same
// thing ("we need 11 buses instead of 8", "state bucket goes in eu-west-1
// instead") takes the place of the earlier one in the view; the archive
// keeps both. Among a view's candidates, a newer user entry that is not a
// question supersedes an older entry that names a number when
//   - it puts that number aside ("715 €, not 640", "instead of 30", "statt
//     8") and restates or puts aside every other number of the older one,
//     sharing a word with it unless the number has three digits or more; or
//   - it carries a correction cue ("instead", "actually", "statt", "改成", …)
//     and they share words (names and nouns, not numbers, and not words that
//     many candidates hold): two at least, and a third of the shorter one's
//     words, or, when the newer names a number, a fifth of the shorter one's
//     rare words; or
//   - it does not add to what was said ("also", "auch"), stands in a later
//     message, names a number the older one does not, shares words with it
//     as above, and a word stands next to a number in both ("8 buses", "11
//     buses"): two such words, or one and a cue. Within one message, sentences
//     that name the same things with other numbers (a schedule, an e-mail the
//     user pastes) list them; only a cue or a number put aside corrects there.
//
// And whether it names a number or not, an older entry that says a thing is
// not so yet ("the landlord hasn't signed yet", "noch nicht
// unterschrieben") is superseded by a newer user entry, in a later message,
// that says it without a negation and shares two rare words with it ("the
// landlord signed today"): a state that was expected to change has. A rule
// ("no charger in the garage") has no "yet", and a later mention of the thing
// leaves it be.
//
// A rare word is one few candidates hold, and few of those written in its
// script: in a conversation held in one script, the few sentences in another
// would otherwise make that language's commonest words ("से", "ज़्यादा") look
// rare.
//
// recall cannot see a correction in other words than the fact's ("we
// planned 180 patients" corrected by "arriviamo a 232 pazienti"), nor one
// that names no number and no cue ("Series S is the priority SKU", then
// "PS5 base is the priority SKU now"). In text written without spaces,
// where words cannot be told apart, character pairs stand for words and a
// number is read apart from the characters around it ("上限は15kg", then
// "上限は8kg"). A sentence that holds two facts goes as a whole when one of
// them is corrected.

// supersedeMaxShare: a word that more than this share of the candidates
// hold says nothing about which thing an entry is about.
const supersedeMaxShare = 0.02

// supersedeCommonShare: a word that more than this share of the candidates
// hold is not counted at all.
const supersedeCommonShare = 0.10

// supersedeOverlap: the share of the shorter entry's words the two must
// share.
const supersedeOverlap = 0.2

// slotOverlap: the share of the shorter entry's words, rare or not, the two
// must share when the rare ones alone are too few.
const slotOverlap = 0.35

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
	cueOK      bool                // cue, asks and adds have been read
	cue        bool                // a correction cue
	asks       bool                // it is a question
	adds       bool                // it adds to what was said ("also", "auch")
	revoked    []string            // numbers it names as no longer so ("instead of 30", "pas 640")
	notYetRead bool                // notYet has been read
	notYet     []string            // the terms it says are not so yet
}

// corrections finds, among a view's candidates, the entries a newer user
// entry corrects. It reads an entry's numbers, slots and cues only when it
// is asked about an entry that shares words with a newer one, so that a view
// pays for the entries it considers showing, not for every candidate.
type corrections struct {
	items   []*Item // in history order
	infos   []entryWords
	index   map[windowKey]int
	byWord  map[string][]int    // the user's entries of each word not too common, in history order
	byNum   map[string][]int    // the user's entries of each number, in history order
	rare    map[string]bool     // the words few candidates hold
	counts  []int               // scratch: shared words per newer entry
	rares   []int               // scratch: shared rare words per newer entry
	memo    map[windowKey]int   // find's answers
	follows map[windowKey]*Item // follow's answers
}

// newCorrections indexes items, the candidates in history order.
func newCorrections(items []*Item) *corrections {
	c := &corrections{items: items, infos: make([]entryWords, len(items)),
		index: make(map[windowKey]int, len(items)), counts: make([]int, len(items)), rares: make([]int, len(items)),
		memo: make(map[windowKey]int)}
	df := make(map[string]int32, 4*len(items))
	// How many entries hold a word of each script: a rare word is rare
	// among all entries and among those written in its script, so that the
	// few sentences of one language in a conversation held in another do
	// not make its commonest words look rare.
	var inScript [numScripts]int32
	for i, it := range items {
		c.index[windowKey{it.Index, it.Span[0]}] = i
		var seen [numScripts]bool
		for _, t := range it.Terms {
			if !hasDigit(t) {
				c.infos[i].words = append(c.infos[i].words, t)
				df[t]++
				seen[scriptOf(t)] = true
			}
		}
		for s, ok := range seen {
			if ok {
				inScript[s]++
			}
		}
		if it.Role == checkpoint.RoleUser && strings.ContainsAny(it.Excerpt, "0123456789") {
			if c.byNum == nil {
				c.byNum = make(map[string][]int)
			}
			for _, v := range c.numbers(i).numbers {
				if l := c.byNum[v]; len(l) == 0 || l[len(l)-1] != i {
					c.byNum[v] = append(l, i)
				}
			}
		}
	}
	maxDF := int32(max(2, int(supersedeMaxShare*float64(len(items)))))
	maxCommon := int32(max(3, int(supersedeCommonShare*float64(len(items)))))
	var maxScriptDF [numScripts]int32
	for s, n := range inScript {
		maxScriptDF[s] = int32(max(2, int(supersedeMaxShare*float64(n))))
	}
	c.byWord = make(map[string][]int, len(df))
	c.rare = make(map[string]bool, len(df))
	for w, n := range df {
		if n <= maxDF && n <= maxScriptDF[scriptOf(w)] {
			c.rare[w] = true
		}
	}
	for i := range items {
		if items[i].Role != checkpoint.RoleUser {
			continue // only the user's entries correct
		}
		for _, w := range c.infos[i].words {
			if df[w] <= maxCommon {
				c.byWord[w] = append(c.byWord[w], i)
			}
		}
	}
	return c
}

// superseded reports whether a newer user entry among the candidates
// corrects it.
func (c *corrections) superseded(it *Item) bool { return c.by(it) != nil }

// by returns the newer user entry among the candidates that corrects it,
// or nil.
func (c *corrections) by(it *Item) *Item {
	k := windowKey{it.Index, it.Span[0]}
	y, ok := c.memo[k]
	if !ok {
		y = c.find(it)
		c.memo[k] = y
	}
	if y < 0 {
		return nil
	}
	return c.items[y]
}

// find returns the index of the newer entry that corrects it, or -1.
func (c *corrections) find(it *Item) int {
	x, ok := c.index[windowKey{it.Index, it.Span[0]}]
	if !ok {
		return -1
	}
	ix := c.numbers(x)
	numbered := len(ix.numbers) > 0
	if !numbered && len(c.notYet(x)) == 0 {
		return -1
	}
	// A newer entry that puts one of its numbers aside.
	for _, v := range ix.numbers {
		for _, y := range c.byNum[v] {
			if y == x || !c.items[y].Newer(it) {
				continue
			}
			if iy := c.cues(y); !iy.asks && contains(iy.revoked, v) && covered(ix.numbers, iy.numbers) &&
				(len(v) >= 3 || sharedWords(ix.words, iy.words) > 0) {
				return y
			}
		}
	}
	// Count the words, and the rare words, each newer user entry shares
	// with it.
	var touched []int
	for _, w := range ix.words {
		rare := c.rare[w]
		for _, y := range c.byWord[w] {
			if y == x || !c.items[y].Newer(it) {
				continue
			}
			if c.counts[y] == 0 {
				touched = append(touched, y)
			}
			c.counts[y]++
			if rare {
				c.rares[y]++
			}
		}
	}
	found := -1
	for _, y := range touched {
		n, rare := c.counts[y], c.rares[y]
		c.counts[y], c.rares[y] = 0, 0
		if found < 0 && (numbered && c.corrects(x, y, n, rare) || c.flipped(x, y, rare)) {
			found = y
		}
	}
	return found
}

// follow returns the newest user entry among the candidates, in a later
// message, that may correct it where recall is not sure it does, or nil:
// one that is no question and adds nothing, shares two rare words with it,
// and names a new number beside a word both name ("Zofia is 27", then "make
// Zofia 33"), or carries a cue (also where neither names a number: a
// choice). The view shows the two together, the older marked as maybe
// changed by the newer.
func (c *corrections) follow(it *Item) *Item {
	k := windowKey{it.Index, it.Span[0]}
	if y, ok := c.follows[k]; ok {
		return y
	}
	var found *Item
	if x, ok := c.index[k]; ok && c.by(it) == nil {
		found = c.findFollow(x)
	}
	if c.follows == nil {
		c.follows = make(map[windowKey]*Item)
	}
	c.follows[k] = found
	return found
}

func (c *corrections) findFollow(x int) *Item {
	ix := c.numbers(x)
	var counts map[int]int // the rare words each later user entry shares with it
	for _, w := range ix.words {
		if !c.rare[w] {
			continue
		}
		for _, y := range c.byWord[w] {
			if c.items[y].Index > c.items[x].Index {
				if counts == nil {
					counts = make(map[int]int)
				}
				counts[y]++
			}
		}
	}
	found := -1
	for y, rare := range counts {
		if y <= found || rare < followRare {
			continue
		}
		iy := c.cues(y)
		if iy.asks || iy.adds || c.superseded(c.items[y]) {
			continue
		}
		if iy.cue || len(ix.numbers) > 0 && differ(ix.numbers, iy.numbers) && sharedSlots(c.slots(x), c.slots(y)) > 0 {
			found = y
		}
	}
	if found < 0 {
		return nil
	}
	return c.items[found]
}

// followRare is how many rare words a later entry that may correct an
// older one must share with it.
const followRare = 2

// corrects reports whether entry y corrects the older entry x, with which
// it shares n words, rare of them rare.
func (c *corrections) corrects(x, y, n, rare int) bool {
	ix, iy := c.numbers(x), c.cues(y)
	if iy.asks {
		return false // a question corrects nothing
	}
	shorter := float64(min(len(ix.words), len(iy.words)))
	rareShare := float64(rare) >= supersedeOverlap*shorter
	share := float64(n) >= slotOverlap*shorter
	switch {
	case iy.cue && (n >= 2 || shorter <= 2) && (share || rareShare && len(iy.numbers) > 0):
		// A cue, and enough words in common.
		return true
	case !differ(ix.numbers, iy.numbers) || iy.adds || c.items[y].Index == c.items[x].Index:
		// Nor does an addition, nor, without a cue, a later sentence of
		// the same message: one message that names the same things with
		// other numbers (a schedule, an e-mail the user pastes) lists
		// them, it does not revise itself.
		return false
	case rareShare && rare >= 2:
		// Rare words in common, and a new number in the same place.
		return sharedSlots(c.slots(x), c.slots(y)) > 0
	case share && rare >= 1:
		// Words in common, and a new number in two places, or in one with
		// a cue.
		s := sharedSlots(c.slots(x), c.slots(y))
		return s >= 2 || s >= 1 && iy.cue
	}
	return false
}

// flipped reports whether entry y, in a later message and without a
// negation, says of a thing what entry x said was not so yet ("Papa hat
// noch nicht unterschrieben", then "Dr. Sander telefoniert und
// unterschrieben!"), with two rare words in common.
func (c *corrections) flipped(x, y, rare int) bool {
	negated := c.notYet(x)
	if len(negated) == 0 || rare < 2 || c.items[y].Index == c.items[x].Index {
		return false
	}
	if iy := c.cues(y); iy.asks || iy.adds || anyWord(c.items[y].Excerpt, negationWords, pastNegations) {
		return false
	}
	for _, t := range negated {
		if contains(c.infos[y].words, t) {
			return true
		}
	}
	return false
}

// notYet returns the terms entry i says are not so yet (notYetTerms).
func (c *corrections) notYet(i int) []string {
	e := &c.infos[i]
	if !e.notYetRead {
		e.notYetRead = true
		e.notYet = notYetTerms(c.items[i].Excerpt)
	}
	return e.notYet
}

// notYetTerms returns, when text says that something is not so yet ("not
// signed yet", "noch nicht unterschrieben", "pas encore signé"), the terms of
// the words a negation stands before: up to three words after it. A rule
// ("no own charger in the garage") is no state that changes; a thing not done
// yet is.
func notYetTerms(text string) []string {
	if !anyWord(text, yetWords) {
		return nil
	}
	words := splitWords(text, nil)
	st := newStemmer(guessLanguage(words))
	var terms []string
	for i, w := range words {
		if !negationWords[w] && !pastNegations[w] {
			continue
		}
		for j := i + 1; j < len(words) && j <= i+negationReach; j++ {
			if t := st.term(words[j]); t != "" && !contains(terms, t) {
				terms = append(terms, t)
			}
		}
	}
	return terms
}

// anyWord reports whether a word of text, lower-cased, is in one of sets
// (whose words are at most 16 bytes long). It lower-cases an ASCII word in
// place of its own, so that a sentence's every word costs no allocation.
func anyWord(text string, sets ...map[string]bool) bool {
	var buf [16]byte
	for i := 0; i < len(text); {
		start, end := nextWord(text, i)
		if start < 0 {
			return false
		}
		i = end
		if end-start > len(buf) {
			continue
		}
		b, ascii := buf[:end-start], true
		for k := range b {
			c := text[start+k]
			if c >= utf8.RuneSelf {
				ascii = false
				break
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b[k] = c
		}
		for _, set := range sets {
			if ascii && set[string(b)] || !ascii && set[normaliseWord(text[start:end])] {
				return true
			}
		}
	}
	return false
}

// yetWords say that a state may still change ("not yet", "noch nicht",
// "pas encore", "todavía no", "ancora", "ainda não", "nog niet", "ännu
// inte", "henüz", "ещё не").
var yetWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`yet noch encore todavía todavia aún aun ancora ainda nog ännu henüz ещё еще abhi`) {
		m[w] = true
	}
	return m
}()

// pastNegations are the negated auxiliaries of a state not reached
// ("hasn't signed yet") that negationWords leaves to salience.
var pastNegations = map[string]bool{"hasn't": true, "haven't": true, "hadn't": true, "wasn't": true, "weren't": true,
	"hasnt": true, "havent": true}

// negationReach is how many words after a negation it stands before.
const negationReach = 3

// numbers returns entry i's words with their numbers read.
func (c *corrections) numbers(i int) *entryWords {
	e := &c.infos[i]
	if !e.read {
		e.read = true
		e.numbers = numbersOf(c.items[i].Excerpt)
	}
	return e
}

// cues returns entry i's words with their numbers and cues read.
func (c *corrections) cues(i int) *entryWords {
	e := c.numbers(i)
	if !e.cueOK {
		text := c.items[i].Excerpt
		e.cueOK, e.cue, e.asks, e.adds = true, correction(text), question(text), adds(text)
		e.revoked = revoked(text)
	}
	return e
}

// revoked returns the numbers text names as no longer so: within three
// words after a negation or a word that puts a value aside ("11 buses
// instead of 8", "715 €, not 640", "statt 8", "не 20 минут, а 12").
func revoked(text string) []string {
	var out []string
	words := splitWords(joinThousands(text), nil)
	for i, w := range words {
		if !asideWords[w] && !(i+1 < len(words) && asidePhrases[w+" "+words[i+1]]) {
			continue
		}
		for j := i + 1; j < len(words) && j <= i+3; j++ {
			if hasDigit(words[j]) {
				out = append(out, words[j])
				break
			}
		}
	}
	return out
}

// asideWords and asidePhrases put the value after them aside: negations
// that no other language spells as a common word, and "instead of".
var asideWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`not statt anstatt nicht kein keine pas niet inte invece não не вместо`) {
		m[w] = true
	}
	return m
}()

var asidePhrases = map[string]bool{"instead of": true, "rather than": true, "no longer": true, "au lieu": true, "en lugar": true,
	"en vez": true, "em vez": true, "in plaats": true, "istället för": true}

// adds reports whether text adds to what was said rather than changing it
// ("Also, the limit for internal keys is 1000 per minute."). In German,
// "also" says "so" ("Korrektur also: 11 Busse statt 8"), and adds nothing.
func adds(text string) bool {
	words := splitWords(text, nil)
	for _, w := range words {
		if additiveWords[w] && (w != "also" || guessLanguage(words) != languageNamed("german")) {
			return true
		}
	}
	return false
}

var additiveWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`also too additionally auch ebenfalls zusätzlich aussi également
también además anche inoltre também ook eveneens också även dessutom ayrıca тоже также`) {
		m[w] = true
	}
	return m
}()

// slots returns entry i's number slots.
func (c *corrections) slots(i int) map[string][]string {
	e := &c.infos[i]
	if !e.slotted {
		e.slotted = true
		e.slots = numberSlots(c.items[i].Excerpt)
	}
	return e.slots
}

// numbersOf returns the words of text that hold a digit, lower-cased, a
// number written with separators of thousands as one ("9,999", "8.000").
func numbersOf(text string) []string {
	text = joinThousands(text)
	var out []string
	for i := 0; i < len(text); {
		start, end := nextWord(text, i)
		if start < 0 {
			break
		}
		i = end
		w := text[start:end]
		switch {
		case !hasDigit(w):
		case hasUnspaced(w):
			for _, p := range unspacedParts(w) {
				if p.number {
					out = append(out, p.text)
				}
			}
		default:
			out = append(out, normaliseWord(w))
		}
	}
	return out
}

// A part of a word written without spaces (unspacedParts).
type unspacedPart struct {
	text   string
	number bool
}

// unspacedParts splits a word that holds text written without spaces
// ("1箱の上限は15kgくらい", "7주차") into its numbers (digits and the Latin
// unit after them: "1", "15kg", "7") and, between them, the character
// bigrams of the unspaced runs (a lone rune on its own) and the other runs,
// lower-cased: the words around a number there, as spaces give them
// elsewhere. Full-width digits and letters ("１５ｋｇ") read as their ASCII
// forms.
func unspacedParts(w string) []unspacedPart {
	var out []unspacedPart
	runes := []rune(strings.ToLower(w))
	for i, r := range runes {
		if '！' <= r && r <= '～' { // the full-width forms of ASCII
			runes[i] = unicode.ToLower(r - '！' + '!')
		}
	}
	for i := 0; i < len(runes); {
		j := i + 1
		switch r := runes[i]; {
		case '0' <= r && r <= '9':
			for j < len(runes) && '0' <= runes[j] && runes[j] <= '9' {
				j++
			}
			for j < len(runes) && 'a' <= runes[j] && runes[j] <= 'z' {
				j++
			}
			out = append(out, unspacedPart{string(runes[i:j]), true})
		case unspaced(r):
			for j < len(runes) && unspaced(runes[j]) {
				j++
			}
			if j == i+1 {
				out = append(out, unspacedPart{text: string(runes[i])})
			}
			for k := i; k+1 < j; k++ {
				out = append(out, unspacedPart{text: string(runes[k : k+2])})
			}
		default:
			for j < len(runes) && !unspaced(runes[j]) && !('0' <= runes[j] && runes[j] <= '9') {
				j++
			}
			out = append(out, unspacedPart{text: string(runes[i:j])})
		}
		i = j
	}
	return out
}

// joinThousands returns text with the separators of thousands taken out of
// its numbers ("9,999" and "9.999" read 9999, "1 500" with a no-break space
// 1500), so that a number is one word: a separator between a digit and
// three digits that no digit follows. Decimals ("0,46", "3.11") and dates
// ("15.06.2025") keep theirs.
func joinThousands(text string) string {
	var b []byte
	last := 0
	for i := 1; i < len(text); i++ {
		if !isDigitByte(text[i-1]) {
			continue
		}
		sep := 0
		switch {
		case text[i] == ',' || text[i] == '.':
			sep = 1
		case strings.HasPrefix(text[i:], "\u00a0"):
			sep = 2
		case strings.HasPrefix(text[i:], "\u202f"):
			sep = 3
		}
		j := i + sep
		if sep == 0 || j+3 > len(text) || !isDigitByte(text[j]) || !isDigitByte(text[j+1]) || !isDigitByte(text[j+2]) ||
			j+3 < len(text) && isDigitByte(text[j+3]) {
			continue
		}
		b = append(b, text[last:i]...)
		last = j
		i = j
	}
	if b == nil {
		return text
	}
	return string(append(b, text[last:]...))
}

func isDigitByte(c byte) bool { return '0' <= c && c <= '9' }

// The scripts words are counted in (scriptOf).
const (
	scriptLatin = iota
	scriptCyrillic
	scriptGreek
	scriptArabic
	scriptHebrew
	scriptIndic
	scriptThai
	scriptHangul
	scriptHanKana
	scriptOther
	numScripts
)

// scriptOf returns the script of a word's first letter.
func scriptOf(w string) int {
	r, _ := utf8.DecodeRuneInString(w)
	switch {
	case r < 0x250:
		return scriptLatin // ASCII, Latin-1 and Latin Extended
	case unicode.Is(unicode.Cyrillic, r):
		return scriptCyrillic
	case unicode.Is(unicode.Greek, r):
		return scriptGreek
	case unicode.Is(unicode.Arabic, r):
		return scriptArabic
	case unicode.Is(unicode.Hebrew, r):
		return scriptHebrew
	case 0x900 <= r && r < 0xD80: // Devanagari to Malayalam
		return scriptIndic
	case unicode.Is(unicode.Thai, r):
		return scriptThai
	case unicode.Is(unicode.Hangul, r):
		return scriptHangul
	case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
		return scriptHanKana
	case unicode.Is(unicode.Latin, r):
		return scriptLatin
	}
	return scriptOther
}

func hasDigit(s string) bool { return strings.IndexFunc(s, unicode.IsDigit) >= 0 }

// sharedSlots counts the words that stand by a number in both.
func sharedSlots(older, newer map[string][]string) int {
	n := 0
	for w := range newer {
		if _, ok := older[w]; ok {
			n++
		}
	}
	return n
}

// numberSlots returns, for each word within slotReach words of a number in
// text (stop words, days and months aside), the numbers it stands by.
func numberSlots(text string) map[string][]string {
	text = joinThousands(text)
	type word struct {
		term   string
		number bool
	}
	var ws []word
	words := splitWords(text, nil)
	st := newStemmer(guessLanguage(words))
	for _, w := range words {
		switch {
		case hasUnspaced(w):
			for _, p := range unspacedParts(w) {
				ws = append(ws, word{p.text, p.number})
			}
		case hasDigit(w):
			ws = append(ws, word{w, true})
		case calendarWords[w]:
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

// sharedWords counts the words of a that b holds.
func sharedWords(a, b []string) int {
	n := 0
	for _, w := range a {
		if contains(b, w) {
			n++
		}
	}
	return n
}

// covered reports whether every number of a, the older entry's, is in b.
func covered(a, b []string) bool {
	for _, x := range a {
		if !contains(b, x) {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
