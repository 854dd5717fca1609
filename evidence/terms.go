package evidence

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Terms returns the distinct search terms of text, sorted: its words lower
// cased (a plural's trailing "s" dropped, so that "chairs" finds "chair"),
// without stop words and one-letter words, and for text written without
// spaces (Han, Hiragana, Katakana, Hangul, Thai) its overlapping character
// bigrams, so that Japanese and Chinese text matches too. The archive is
// indexed by these terms and requests are ranked against them, in the
// service and in the offline evaluation alike.
func Terms(text string) []string {
	var terms []string
	for _, w := range splitWords(text, nil) {
		if hasUnspaced(w) {
			terms = appendBigrams(terms, w)
			continue
		}
		if stopWords[w] {
			continue
		}
		w = stem(w)
		if utf8.RuneCountInString(w) < 2 || stopWords[w] {
			continue
		}
		terms = append(terms, w)
	}
	sort.Strings(terms)
	out := terms[:0]
	for i, t := range terms {
		if i == 0 || t != terms[i-1] {
			out = append(out, t)
		}
	}
	return out
}

// stem drops an English possessive and a plural's "s".
func stem(w string) string {
	w = strings.TrimSuffix(w, "'s")
	if len(w) >= 4 && w[len(w)-1] == 's' {
		switch w[len(w)-2] {
		case 's', 'u', 'i', '\'':
			return w
		}
		return w[:len(w)-1]
	}
	return w
}

// unspaced reports whether r belongs to a script written without spaces
// between words.
func unspaced(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai)
}

func hasUnspaced(w string) bool {
	for _, r := range w {
		if unspaced(r) {
			return true
		}
	}
	return false
}

// appendBigrams appends the character bigrams of the runs of unspaced runes
// in w (a lone rune is a term of its own), and the other runs as words.
func appendBigrams(terms []string, w string) []string {
	runes := []rune(w)
	for i := 0; i < len(runes); {
		j := i
		cjk := unspaced(runes[i])
		for j < len(runes) && unspaced(runes[j]) == cjk {
			j++
		}
		run := runes[i:j]
		switch {
		case !cjk:
			if s := stem(string(run)); utf8.RuneCountInString(s) >= 2 && !stopWords[s] {
				terms = append(terms, s)
			}
		case len(run) == 1:
			terms = append(terms, string(run))
		default:
			for k := 0; k+1 < len(run); k++ {
				terms = append(terms, string(run[k:k+2]))
			}
		}
		i = j
	}
	return terms
}

// restatementKey is text as compared for restatements: case folded, with
// white space and punctuation collapsed into single spaces.
func restatementKey(text string) string {
	return strings.Join(splitWords(text, nil), " ")
}

// stopWords are words too common to rank by, in the languages the keyword
// lists cover; they are left out of terms.
var stopWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`
a an the and or but if then so of to in on at by for with from into onto about as is are was were be been being am
it its it's this that these those there here what which who whom whose when where why how
i me my mine we us our ours you your yours he him his she her they them their theirs one
do does did done doing have has had having will would shall should can could may might must
not no yes ok okay also just very too more most less much many some any all each every other
than up down out over under again further once same own only both few such nor
let let's i'm i've i'll i'd we're we've we'll we'd you're you'll you've that's there's what's
der die das und oder aber ist sind war wir ich sie er es ein eine einen dem den des zu mit von auf für nicht
le la les un une des et ou mais est sont nous vous je il elle ils pour avec dans sur pas du au aux ce cette
el los las unos unas y o pero es son somos yo tu él ella para con en por no del al lo que se
`) {
		m[w] = true
	}
	return m
}()
