package evidence

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// What a correction pair reads of its two entries besides their things and
// values (correct.go): a thing said to be not so yet, a number put aside,
// an addition, and the numbers a sentence names, read alike however they are
// grouped or whatever script surrounds them.

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

func hasDigit(s string) bool { return strings.IndexFunc(s, unicode.IsDigit) >= 0 }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
