package evidence

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bucket is one of the four evidence buckets.
type Bucket int

// The buckets, in the order they are tried by the classifier.
const (
	Constraints Bucket = iota
	Decisions
	OpenWork
	RecentContext
	numBuckets
)

var bucketNames = [numBuckets]string{"constraints", "decisions", "open_work", "recent_context"}

func (b Bucket) String() string {
	if b < 0 || b >= numBuckets {
		return "unknown"
	}
	return bucketNames[b]
}

// DefaultKeywords are the contract's keywords (§4.6) for the first three
// buckets; RecentContext takes everything else. Each entry is a word or a
// phrase of words, matched case-insensitively on whole words.
var DefaultKeywords = [3][]string{
	Constraints: {"must", "never", "always", "required", "cannot", "can't", "don't", "do not", "only", "at most", "at least", "deadline"},
	Decisions:   {"decided", "agreed", "confirmed", "chose", "approved", "go with", "we'll use", "settled"},
	OpenWork:    {"todo", "next step", "follow up", "pending", "still need", "need to", "tbd", "open question"},
}

// Classifier assigns text to a bucket by keywords. Build one with
// NewClassifier; the zero value classifies everything as RecentContext.
type Classifier struct {
	// byFirst maps a phrase's first word to the phrases starting with it.
	byFirst map[string][]phrase
}

type phrase struct {
	words  []string
	bucket Bucket
}

// NewClassifier compiles keyword lists for Constraints, Decisions and
// OpenWork. Words are split as the classifier splits text, so "follow-up"
// and "follow up" are the same phrase.
func NewClassifier(keywords [3][]string) *Classifier {
	c := &Classifier{byFirst: make(map[string][]phrase)}
	for b, list := range keywords {
		for _, kw := range list {
			words := splitWords(kw, nil)
			if len(words) == 0 {
				continue
			}
			c.byFirst[words[0]] = append(c.byFirst[words[0]], phrase{words: words, bucket: Bucket(b)})
		}
	}
	return c
}

var defaultClassifier = NewClassifier(DefaultKeywords)

// Classify returns the first bucket, in bucket order, that has a keyword
// anywhere in text; RecentContext when none has.
func (c *Classifier) Classify(text string) Bucket {
	if c == nil || len(c.byFirst) == 0 {
		return RecentContext
	}
	best := RecentContext
	var words []string
	words = splitWords(text, words)
	for i, w := range words {
		for _, p := range c.byFirst[w] {
			if p.bucket >= best || !hasPhrase(words[i:], p.words) {
				continue
			}
			best = p.bucket
			if best == Constraints {
				return best
			}
		}
	}
	return best
}

func hasPhrase(words, p []string) bool {
	if len(words) < len(p) {
		return false
	}
	for i := 1; i < len(p); i++ {
		if words[i] != p[i] {
			return false
		}
	}
	return true
}

// isWordRune reports whether r belongs to a word: letters, digits and
// apostrophes (so that "can't" is one word).
func isWordRune(r rune) bool {
	return r == '\'' || r == '’' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// splitWords appends the lower-cased words of s to dst. Typographic
// apostrophes become ASCII ones, and apostrophes that open or close a word
// (quotation marks) are dropped.
func splitWords(s string, dst []string) []string {
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := s[start:end]
		start = -1
		w = normaliseWord(w)
		if w != "" {
			dst = append(dst, w)
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			isWord := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '\''
			if isWord {
				if start < 0 {
					start = i
				}
			} else {
				flush(i)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
		} else {
			flush(i)
		}
		i += size
	}
	flush(len(s))
	return dst
}

func normaliseWord(w string) string {
	if strings.Contains(w, "’") {
		w = strings.ReplaceAll(w, "’", "'")
	}
	w = strings.Trim(w, "'")
	if w == "" {
		return ""
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return strings.ToLower(w)
		}
	}
	return w
}
