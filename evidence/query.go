package evidence

import (
	"cmp"
	"slices"
	"unicode/utf8"
)

// Query is what a focus view is chosen for: the search terms of the request
// (or of a search's text), and of the newest items before it, which rank
// only among entries the request's own terms rank equally (a request such
// as "yes, that one" has none, and refers back to them).
type Query struct {
	// request and windowOnly are the request's terms and the window's
	// terms that are not the request's, each sorted.
	request, windowOnly []string
	// scanned are the request's terms the index is asked for one by one
	// (QueryScans), at most MaxQueryTerms of them, in that order.
	scanned []string
	// asks reports that the request asks for something (a question): its
	// view is chosen relevance first; when, that it asks when something
	// happened: its entries are shown with their dates.
	asks, when bool
	window     map[windowKey]bool
}

// MaxQueryTerms bounds the request's terms the index is asked for one by
// one: a long instruction ranks by its longest terms, the likeliest to be
// rare.
const MaxQueryTerms = 24

// NewQuery returns the query for request, the text of the current request,
// and window, the newest items of the archive (newest first; the first
// WindowItems count).
func NewQuery(request string, window []Item) *Query {
	q := &Query{request: requestTerms(request), asks: asks(request), window: make(map[windowKey]bool)}
	q.when = q.asks && asksWhen(request)
	var terms []string
	for i := range window[:min(len(window), WindowItems)] {
		it := &window[i]
		q.window[windowKey{it.Index, it.Span[0]}] = true
		for _, t := range it.Terms {
			if _, ok := slices.BinarySearch(q.request, t); !ok {
				terms = append(terms, t)
			}
		}
	}
	slices.Sort(terms)
	q.windowOnly = slices.Compact(terms)
	q.scanned = slices.Clone(q.request)
	if len(q.scanned) > MaxQueryTerms {
		slices.SortStableFunc(q.scanned, func(x, y string) int {
			return cmp.Compare(utf8.RuneCountInString(y), utf8.RuneCountInString(x))
		})
		q.scanned = q.scanned[:MaxQueryTerms]
	}
	return q
}

// RequestTerms returns the request's terms, sorted, and WindowTerms the
// window's terms that are not the request's.
func (q *Query) RequestTerms() []string { return q.request }

// WindowTerms: see RequestTerms.
func (q *Query) WindowTerms() []string { return q.windowOnly }

// asks reports whether request asks for something and nothing else: one
// sentence, a question ("When did she start the pottery class?"). A
// message that tells of things and then asks (a task) is not one: what it
// needs is the standing facts as much as what its words name.
func asks(request string) bool {
	segs := Segment(request)
	return len(segs) == 1 && question(request[segs[0][0]:segs[0][1]])
}

// asksWhen reports whether a question asks when something happened: "when
// did…", "what year…", "wann…", "いつ…".
func asksWhen(question string) bool {
	words := splitWords(question, nil)
	for i, w := range words {
		if whenWords[w] || i+1 < len(words) && whenPhrases[w+" "+words[i+1]] {
			return true
		}
		if hasUnspaced(w) && containsAny(w, unspacedWhen) {
			return true
		}
	}
	return false
}

var whenWords = map[string]bool{"when": true, "wann": true, "quand": true, "cuándo": true, "cuando": true, "quando": true,
	"wanneer": true, "när": true, "когда": true}

var whenPhrases = func() map[string]bool {
	m := make(map[string]bool)
	for _, first := range []string{"what", "which"} {
		for _, unit := range []string{"year", "month", "day", "date", "time", "week"} {
			m[first+" "+unit] = true
		}
	}
	m["how long"] = true
	m["ne zaman"] = true
	m["welches datum"] = true
	m["quelle date"] = true
	m["qué día"] = true
	m["que dia"] = true
	return m
}()

var unspacedWhen = []string{"いつ", "何時", "何日", "什么时候", "何时", "幾時", "언제", "며칠"}

// Asks reports whether the request asks something (a question), which
// picks the balance of its view (weights.go).
func (q *Query) Asks() bool { return q.asks }
