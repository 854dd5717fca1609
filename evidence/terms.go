package evidence

import (
	"sort"
	"strings"
	"unicode"
)

// Terms returns the distinct search terms of text, sorted: its words lower
// cased and stemmed by the Snowball stemmer of the language text is written
// in (guessLanguage), without stop words and one-letter words, and for text
// written without spaces (Han, Hiragana, Katakana, Hangul, Thai) its
// overlapping character bigrams, so that Japanese and Chinese text matches
// too. The archive is indexed by these terms and requests are ranked
// against them, in the service and in the offline evaluation alike.
func Terms(text string) []string {
	words := splitWords(text, nil)
	return sortedTerms(appendTerms(nil, words, newStemmer(guessLanguage(words))))
}

// requestTerms returns the search terms of a request or a search's text:
// its Terms, and when it is written in no language recall tells apart (a
// name, a few keywords: "deadline budget"), its words as every language's
// stemmer gives them besides, since each entry of the archive was stemmed
// in the language of the sentence it came from ("deadline" finds "the
// deadline is Friday", indexed as "deadlin").
func requestTerms(text string) []string {
	words := splitWords(text, nil)
	l := guessLanguage(words)
	terms := appendTerms(nil, words, newStemmer(l))
	if l == nil {
		for _, l := range languages {
			terms = appendTerms(terms, words, newStemmer(l))
		}
	}
	return sortedTerms(terms)
}

// appendTerms appends the terms of words by st.
func appendTerms(terms, words []string, st *stemmer) []string {
	for _, w := range words {
		if hasUnspaced(w) {
			terms = appendBigrams(terms, w, st)
			continue
		}
		if t := st.term(w); t != "" {
			terms = append(terms, t)
		}
	}
	return terms
}

// sortedTerms sorts terms and drops repeats.
func sortedTerms(terms []string) []string {
	sort.Strings(terms)
	out := terms[:0]
	for i, t := range terms {
		if i == 0 || t != terms[i-1] {
			out = append(out, t)
		}
	}
	return out
}

// unspaced reports whether r belongs to a script written without spaces
// between words.
func unspaced(r rune) bool {
	if r < 0x0e00 { // below Thai, the first of them
		return false
	}
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
func appendBigrams(terms []string, w string, st *stemmer) []string {
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
			if t := st.term(string(run)); t != "" {
				terms = append(terms, t)
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
