package evidence

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Span is a half-open range [start, end) of byte offsets into a message's
// text.
type Span [2]int

// Segment splits text into the pieces the focus profile keeps as entries:
// lines, and within a line its sentences. Each span covers a piece trimmed of
// surrounding white space; pieces with no letter or digit are left out. A
// sentence ends at '.', '!', '?', '…' or a danda (and their full-width
// forms) followed by white space or the end of the line; CJK sentence marks
// end a sentence wherever they stand. A period after an initial (a single
// letter of a script with capitals), a digit-less abbreviation such as
// "e.g." or "Dr." does not end a sentence.
func Segment(text string) []Span {
	var spans []Span
	lineStart := 0
	for i := 0; i <= len(text); i++ {
		if i < len(text) && text[i] != '\n' {
			continue
		}
		spans = appendSentences(spans, text, lineStart, i)
		lineStart = i + 1
	}
	return spans
}

// appendSentences appends the sentences of text[lo:hi], one line.
func appendSentences(spans []Span, text string, lo, hi int) []Span {
	start := lo
	for i := lo; i < hi; {
		r, size := utf8.DecodeRuneInString(text[i:hi])
		end := i + size
		switch {
		case isCJKStop(r):
			// Closing quotes and brackets stay with their sentence.
			for end < hi {
				r2, s2 := utf8.DecodeRuneInString(text[end:hi])
				if !isCloser(r2) {
					break
				}
				end += s2
			}
			spans = appendPiece(spans, text, start, end)
			start = end
		case r == '.' || r == '!' || r == '?' || r == '…' || isDanda(r):
			for end < hi {
				r2, s2 := utf8.DecodeRuneInString(text[end:hi])
				if r2 != '.' && r2 != '!' && r2 != '?' && !isCloser(r2) {
					break
				}
				end += s2
			}
			next, _ := utf8.DecodeRuneInString(text[end:hi])
			if end < hi && !unicode.IsSpace(next) {
				break // "3.5", "example.com", "a.b"
			}
			if r == '.' && end == i+1 && (abbreviation(text[start:i]) || ordinal(text[start:i], text[end:hi])) {
				break
			}
			spans = appendPiece(spans, text, start, end)
			start = end
		}
		i = end
	}
	return appendPiece(spans, text, start, hi)
}

// appendPiece appends text[lo:hi] trimmed, when it holds a letter or digit.
func appendPiece(spans []Span, text string, lo, hi int) []Span {
	for lo < hi {
		r, size := utf8.DecodeRuneInString(text[lo:hi])
		if !unicode.IsSpace(r) {
			break
		}
		lo += size
	}
	for hi > lo {
		r, size := utf8.DecodeLastRuneInString(text[lo:hi])
		if !unicode.IsSpace(r) {
			break
		}
		hi -= size
	}
	for _, r := range text[lo:hi] {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return append(spans, Span{lo, hi})
		}
	}
	return spans
}

// isDanda reports whether r ends a sentence in the scripts of India (the
// danda, "।", and double danda), or in Arabic script (the Arabic question
// mark and the Urdu full stop), as '.' does in Latin.
func isDanda(r rune) bool { return r == '।' || r == '॥' || r == '؟' || r == '۔' }

func isCJKStop(r rune) bool { return r == '。' || r == '！' || r == '？' || r == '｡' }

func isCloser(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '}', '»', '”', '’', '」', '』', '）', '】':
		return true
	}
	return false
}

// abbreviation reports whether the sentence so far ends in a word that a
// period does not end a sentence after: a single letter ("J. Smith", "e.g.")
// or a common abbreviation.
func abbreviation(before string) bool {
	end := len(before)
	start := end
	for start > 0 {
		r, size := utf8.DecodeLastRuneInString(before[:start])
		if !unicode.IsLetter(r) && r != '.' {
			break
		}
		start -= size
	}
	word := before[start:end]
	if word == "" {
		return false
	}
	if r, _ := utf8.DecodeRuneInString(word); utf8.RuneCountInString(word) == 1 && (unicode.IsUpper(r) || unicode.IsLower(r)) {
		// An initial. A letter of a script without capitals (Hangul,
		// kana, Han) is a word of its own ("굿. 그리고 …").
		return true
	}
	for i := 0; i < len(word); i++ {
		if word[i] == '.' {
			return true // "e.g", "i.e", "U.S"
		}
	}
	switch normaliseWord(word) {
	case "mr", "mrs", "ms", "dr", "prof", "st", "vs", "etc", "approx", "no", "nr", "ca", "bzw", "z", "usw", "sr", "jr", "inc", "ltd", "co":
		return true
	}
	return false
}

// ordinal reports whether a period ends a number that is no sentence's end:
// a list item's number at the start of a line ("3. third"), or a number of
// one or two digits that a month's name follows, as in the German "am 3.
// August".
func ordinal(before, after string) bool {
	n := 0
	for n < len(before) && '0' <= before[len(before)-1-n] && before[len(before)-1-n] <= '9' {
		n++
	}
	if n > 0 && strings.TrimSpace(before[:len(before)-n]) == "" {
		return true
	}
	if n == 0 || n > 2 || (n < len(before) && before[len(before)-1-n] != ' ') {
		return false
	}
	return months[firstWord(after)]
}

// firstWord returns the first word splitWords finds in s, reading no further
// than the white-space-separated field that holds it: a period is followed
// by the rest of its line, and reading all of it at every period would make
// a long line cost the square of its length.
func firstWord(s string) string {
	for s != "" {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		end := strings.IndexFunc(s, unicode.IsSpace)
		if end < 0 {
			end = len(s)
		}
		if words := splitWords(s[:end], nil); len(words) > 0 {
			return words[0]
		}
		s = s[end:]
	}
	return ""
}

var months = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`januar jänner februar märz april mai juni juli august september oktober november dezember
januari februari maart mei augustus oktober`) {
		m[w] = true
	}
	return m
}()
