package evidence

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clauses. A long sentence that holds several statements ("she came out in
// hives all over her arms, and that's how we found out she can't have
// ibuprofen, which the GP has on file") is cut at its clause boundaries, so
// that one clause can be shown, or corrected, for the room of a clause and
// without the others: at a semicolon, a dash set off by spaces, a colon
// followed by a space, and a comma before a word that opens a clause (a
// conjunction, a subordinator or a relative pronoun: "and", "but",
// "because", "which", "weil", "qui", "porque", "который", …), in the
// languages recall reads; in Japanese after a comma that follows a clause's
// connective ending ("けど、", "ので、"), in Chinese before a connective
// after a comma ("，但是"), in Korean after a comma that follows one
// ("는데,", "지만,"). A cut is never made inside brackets or quotation
// marks, and never inside a word, so it never splits a number, a date, a
// URL, a name or a quoted string. A sentence shorter than clauseMinBytes is
// one entry, and a clause shorter than clauseMinPart stays with its
// neighbour.
const (
	clauseMinBytes = 200
	clauseMinPart  = 30
)

// clauseOpeners open a clause after a comma, by language (guessLanguage's
// names; "" for text in none of them): conjunctions, subordinators and
// relative pronouns. Words that are also articles or pronouns in a common
// use ("die", "que", "that") are left out: a cut there would more often
// split a noun phrase than end a clause.
var clauseOpeners = func() map[string]map[string]bool {
	m := make(map[string]map[string]bool)
	for name, words := range map[string]string{
		"english":    `and but or yet because although though while whereas unless which who whom whose where`,
		"german":     `und aber oder sondern denn weil obwohl während wobei sodass welche welcher welches`,
		"french":     `et mais ou donc car parce puisque quoique tandis qui dont où lequel laquelle`,
		"spanish":    `y pero porque aunque mientras pues quien quienes donde cuyo cuya`,
		"italian":    `e ma però perché poiché mentre quindi cui dove`,
		"portuguese": `e mas porém porque pois enquanto então onde cujo cuja`,
		"dutch":      `en maar want omdat terwijl waar`,
		"swedish":    `och men eftersom medan vilket vilken`,
		"turkish":    `ama fakat çünkü ancak`,
		"russian":    `и но или потому поэтому хотя который которая которое которые где`,
		// Polish, Czech, Hindi and Hinglish, Vietnamese, Greek.
		"": `ale bo ponieważ chociaż więc który która które gdzie nebo protože ačkoli takže kde
aur lekin kyunki toh और लेकिन क्योंकि वरना nhưng vì nên αλλά γιατί επειδή ενώ που`,
	} {
		m[name] = make(map[string]bool)
		for _, w := range strings.Fields(words) {
			m[name][w] = true
		}
	}
	return m
}()

// openers returns the words that open a clause after a comma in s's
// language.
func openers(s string) map[string]bool {
	if l := guessLanguage(splitWords(s, nil)); l != nil {
		return clauseOpeners[l.name]
	}
	return clauseOpeners[""]
}

// Japanese connective endings before "、" and Korean ones before ",": the
// clause before them is a clause of its own.
var (
	kanaConnectives   = []string{"けど", "けれど", "けれども", "ので", "のに", "から", "が", "し"}
	hangulConnectives = []string{"는데", "은데", "지만", "니까", "어서", "아서", "해서", "면서", "는데요", "거든요"}
	// hanOpeners open a clause after "，" in Chinese.
	hanOpeners = []string{"但是", "可是", "不过", "所以", "因为", "而且", "然后", "另外", "还有", "還有", "因為", "所以說", "但"}
)

// Clauses splits the sentence text[sp[0]:sp[1]] at its clause boundaries,
// each clause trimmed, and returns sp itself when it has none.
func Clauses(text string, sp Span) []Span {
	s := text[sp[0]:sp[1]]
	if len(s) < clauseMinBytes {
		return []Span{sp}
	}
	cuts := clauseCuts(s)
	if len(cuts) == 0 {
		return []Span{sp}
	}
	var out []Span
	start := 0
	for _, c := range append(cuts, len(s)) {
		if c-start < clauseMinPart && c < len(s) {
			continue // too short to stand alone: it stays with the next
		}
		if len(s)-c < clauseMinPart && c < len(s) {
			continue // the rest would be too short: it stays with this one
		}
		out = appendPiece(out, text, sp[0]+start, sp[0]+c)
		start = c
	}
	if len(out) == 0 {
		return []Span{sp}
	}
	return out
}

// clauseCuts returns where each clause of s after the first starts. The
// date and speaker label a transcript's line opens with ("[4:04 pm on 20
// January, 2023] Gina: …") are no clause of their own.
func clauseCuts(s string) []int {
	from := 0
	if body := statementBody(s); body != s {
		from = strings.Index(s, body)
	}
	var cuts []int
	var words map[string]bool // the openers of s's language, read when first needed
	var open []rune           // the brackets and quotation marks open
	for i := max(from, 0); i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		next := i + size
		if closes(open, r) {
			open = open[:len(open)-1]
			i = next
			continue
		}
		if opens(r) {
			if len(open) < 8 {
				open = append(open, r)
			}
			i = next
			continue
		}
		if len(open) > 0 {
			i = next
			continue
		}
		switch {
		case r == ';' || r == '；' || r == '：':
			cuts = append(cuts, next)
		case r == ':' && next < len(s) && s[next] == ' ':
			cuts = append(cuts, next)
		case r == ' ' && dashAt(s[next:]) > 0:
			cuts = append(cuts, next+dashAt(s[next:]))
		case r == ',' && next < len(s) && s[next] == ' ':
			if words == nil {
				words = openers(s)
			}
			if words[firstWord(s[next:])] || hangulEnding(s[:i]) {
				cuts = append(cuts, next)
			}
		case r == '、' || r == '，':
			if hasSuffixAny(s[:i], kanaConnectives) || hasPrefixAny(s[next:], hanOpeners) {
				cuts = append(cuts, next)
			}
		}
		i = next
	}
	return cuts
}

// dashAt returns the length of a dash set off by spaces at the start of s
// (" - ", "– ", "— ", "-- "), counting the space after it, or 0.
func dashAt(s string) int {
	for _, d := range []string{"- ", "-- ", "– ", "— "} {
		if strings.HasPrefix(s, d) {
			return len(d)
		}
	}
	return 0
}

// hangulEnding reports whether s ends in a Korean word whose ending joins
// clauses ("다니는데", "비싸지만").
func hangulEnding(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return unicode.Is(unicode.Hangul, r) && hasSuffixAny(s, hangulConnectives)
}

func hasSuffixAny(s string, list []string) bool {
	for _, x := range list {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

func hasPrefixAny(s string, list []string) bool {
	for _, x := range list {
		if strings.HasPrefix(s, x) {
			return true
		}
	}
	return false
}

// opens reports whether r opens a bracket or a quotation.
func opens(r rune) bool {
	switch r {
	case '(', '[', '{', '«', '“', '„', '「', '『', '（', '【', '"':
		return true
	}
	return false
}

// closes reports whether r closes the innermost of open.
func closes(open []rune, r rune) bool {
	if len(open) == 0 {
		return false
	}
	top := open[len(open)-1]
	var want []rune
	switch top {
	case '(':
		want = []rune{')'}
	case '[':
		want = []rune{']'}
	case '{':
		want = []rune{'}'}
	case '«':
		want = []rune{'»'}
	case '“':
		want = []rune{'”'}
	case '„':
		want = []rune{'“', '”'}
	case '「':
		want = []rune{'」'}
	case '『':
		want = []rune{'』'}
	case '（':
		want = []rune{'）'}
	case '【':
		want = []rune{'】'}
	case '"':
		want = []rune{'"'}
	}
	for _, w := range want {
		if r == w {
			return true
		}
	}
	return false
}
