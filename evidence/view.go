package evidence

import (
	"cmp"
	"math"
	"slices"

	"github.com/recallhq/recall/checkpoint"
)

// Query is what a focus view is chosen for: the search terms of the request
// (or of a search's text), and of the newest items before it, which rank
// only among entries the request's own terms rank equally (a request such
// as "yes, that one" has none, and refers back to them).
type Query struct {
	// request and windowOnly are the request's terms and the window's
	// terms that are not the request's, each sorted, and as sets.
	request, windowOnly   []string
	requestSet, windowSet map[string]bool
	window                map[windowKey]bool
}

type windowKey struct{ index, start int }

// NewQuery returns the query for request, the text of the current request,
// and window, the newest items of the archive (newest first; the first
// WindowItems count).
func NewQuery(request string, window []Item) *Query {
	q := &Query{request: Terms(request), window: make(map[windowKey]bool)}
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
	q.requestSet, q.windowSet = set(q.request), set(q.windowOnly)
	return q
}

func set(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, t := range list {
		m[t] = true
	}
	return m
}

// RequestTerms returns the request's terms, sorted, and WindowTerms the
// window's terms that are not the request's: the index looks the relevant
// candidates up by each (Candidates.Relevant), so that a rare word of the
// request finds an old entry however many entries share the window's words.
func (q *Query) RequestTerms() []string { return q.request }

// WindowTerms: see RequestTerms.
func (q *Query) WindowTerms() []string { return q.windowOnly }

// View is a focus view: the entries shown for one request, within the token
// bound.
type View struct {
	// Shown are the entries shown, in the view's priority order (what
	// max_tokens drops last comes first).
	Shown []Shown
	// Buckets are the entries shown, by bucket, each in history order.
	Buckets Buckets
	// OmittedEntries counts the archive's items not shown.
	OmittedEntries int
}

// Shown is an entry of a view with its bucket.
type Shown struct {
	Bucket Bucket `json:"bucket"`
	Entry
}

// The view's classes, in order of precedence, and the share of the entry
// budget each may take before the others had theirs (what is left then
// goes to the classes in this order). The offline evaluation chose the
// order and the shares (eval/README.md).
type viewClass int

const (
	classUser viewClass = iota
	classRelevant
	classAssistant
	classRecent
	numClasses
)

var classShare = [numClasses]float64{
	classUser:      0.85,
	classRelevant:  0.10,
	classAssistant: 0.10,
	classRecent:    0.05,
}

// SelectView chooses the view for query q from the candidates c, within
// maxTokens estimated tokens for the rendered message. It is a function of
// its arguments alone.
func SelectView(c *Candidates, q *Query, maxTokens int) View {
	return selectView(c, q, maxTokens, nil)
}

// selectView is SelectView telling why, when why is not nil, what it
// considered and what it showed (explain.go).
func selectView(c *Candidates, q *Query, maxTokens int, why *viewTrace) View {
	var classes [numClasses][]*Item
	classes[classUser] = bySalience(c.Tiers[TierUserKey], c.Tiers[TierUserFact], c.Tiers[TierUserStatement])
	classes[classRelevant] = rankRelevant(c, q)
	classes[classAssistant] = bySalience(c.Tiers[TierAssistantRule])
	classes[classRecent] = pointers(c.Recent)
	// What a newer candidate corrects is not shown.
	var all []*Item
	for cl := range numClasses {
		all = append(all, classes[cl]...)
	}
	fixed := newCorrections(uniqueItems(all))
	why.considered(&classes, fixed)

	// The rendered size is the empty envelope's (with omitted_entries as
	// large as it can be), each entry's, and a comma between two entries of
	// a bucket.
	var empty Buckets
	size := newEnvelopeSize(&empty, true)
	maxBytes := 3 * (maxTokens - 4)
	base := size.total(c.Total, &empty)
	used, entryBudget := base, maxBytes-base
	var count [numBuckets]int
	shown := make(map[windowKey]bool)
	order := []Shown{}
	add := func(it *Item, cost int) bool {
		k := windowKey{it.Index, it.Span[0]}
		if count[it.Bucket] > 0 {
			cost++ // the comma
		}
		if shown[k] || used+cost > maxBytes || fixed.superseded(it) {
			return false
		}
		shown[k] = true
		used += cost
		count[it.Bucket]++
		order = append(order, Shown{Bucket: it.Bucket, Entry: it.Entry})
		return true
	}
	costs := make(map[*Item]int)
	costOf := func(it *Item) int {
		n, ok := costs[it]
		if !ok {
			n = modelLineLen(&it.Entry)
			costs[it] = n
		}
		return n
	}
	for cl := range numClasses {
		share := int(classShare[cl] * float64(entryBudget))
		spent := 0
		for _, it := range classes[cl] {
			cost := costOf(it) + 1
			if spent+cost > share {
				continue
			}
			if add(it, cost-1) {
				spent += cost
				why.shown(it, cl, false)
			}
		}
	}
	for cl := range numClasses {
		for _, it := range classes[cl] {
			if add(it, costOf(it)) {
				why.shown(it, cl, true)
			}
		}
	}
	why.room(maxBytes - used)
	var bs Buckets
	bs = bs.clone()
	for i := range order {
		l := bs.Get(order[i].Bucket)
		*l = append(*l, order[i].Entry)
	}
	for b := range numBuckets {
		slices.SortFunc(*bs.Get(b), func(x, y Entry) int {
			return cmp.Or(cmp.Compare(x.Index, y.Index), cmp.Compare(x.Span[0], y.Span[0]))
		})
	}
	return View{Shown: order, Buckets: bs, OmittedEntries: c.Total - len(order)}
}

// uniqueItems returns items without repeats of an entry, in history order.
func uniqueItems(items []*Item) []*Item {
	seen := make(map[windowKey]bool, len(items))
	out := make([]*Item, 0, len(items))
	for _, it := range items {
		k := windowKey{it.Index, it.Span[0]}
		if !seen[k] {
			seen[k] = true
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(x, y *Item) int {
		return cmp.Or(cmp.Compare(x.Index, y.Index), cmp.Compare(x.Span[0], y.Span[0]))
	})
	return out
}

func pointers(items []Item) []*Item {
	out := make([]*Item, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// bySalience orders the candidates of tiers by weight (their salience for
// the room they take), the oldest first among equals.
func bySalience(tiers ...[]Item) []*Item {
	var out []*Item
	for _, t := range tiers {
		out = append(out, pointers(t)...)
	}
	slices.SortStableFunc(out, func(x, y *Item) int {
		if c := cmp.Compare(y.Weight, x.Weight); c != 0 {
			return c
		}
		if x.Newer(y) {
			return 1
		}
		if y.Newer(x) {
			return -1
		}
		return 0
	})
	return out
}

// rankRelevant orders the relevant candidates that are not in the query's
// window by how well they match the request, then the window: for each, the
// sum over shared terms of the term's rarity among the candidates
// (log(1 + total/df)); best first, newer first on ties.
// relevantWeightScale: a relevant candidate's score grows by its weight
// over this, so that a relevant fact goes before relevant chatter.
const relevantWeightScale = 200.0

func rankRelevant(c *Candidates, q *Query) []*Item {
	// Each query term has a slot: the request's 1 to len(q.request), the
	// window's after them; 0 is none. One lookup per term of an item.
	nReq := int32(len(q.request))
	slot := make(map[string]int32, len(q.request)+len(q.windowOnly))
	for i, t := range q.request {
		slot[t] = int32(i) + 1
	}
	for i, t := range q.windowOnly {
		slot[t] = nReq + int32(i) + 1
	}
	df := make([]int, len(q.request)+len(q.windowOnly)+1)
	var slots []int32 // of every term of every candidate, in order
	for i := range c.Relevant {
		for _, t := range c.Relevant[i].Terms {
			s := slot[t]
			slots = append(slots, s)
			df[s]++
		}
	}
	total := float64(max(c.Total, 1))
	idf := make([]float64, len(df))
	for s := 1; s < len(df); s++ {
		if df[s] > 0 {
			idf[s] = math.Log(1 + total/float64(df[s]))
		}
	}
	type scored struct {
		it              *Item
		request, window float64
	}
	var ss []scored
	next := 0
	for i := range c.Relevant {
		it := &c.Relevant[i]
		mine := slots[next : next+len(it.Terms)]
		next += len(it.Terms)
		if q.window[windowKey{it.Index, it.Span[0]}] {
			continue
		}
		sc := scored{it: it}
		for _, s := range mine {
			switch {
			case s == 0:
			case s <= nReq:
				sc.request += idf[s]
			default:
				sc.window += idf[s]
			}
		}
		if sc.request > 0 || sc.window > 0 {
			// A relevant fact before relevant chatter.
			f := 1 + float64(it.Weight)/relevantWeightScale
			sc.request *= f
			sc.window *= f
			ss = append(ss, sc)
		}
	}
	slices.SortFunc(ss, func(x, y scored) int {
		if c := cmp.Or(cmp.Compare(y.request, x.request), cmp.Compare(y.window, x.window)); c != 0 {
			return c
		}
		if x.it.Newer(y.it) {
			return -1
		}
		if y.it.Newer(x.it) {
			return 1
		}
		return 0
	})
	out := make([]*Item, len(ss))
	for i := range ss {
		out[i] = ss[i].it
	}
	return out
}

// RenderView renders the entries of shown (a view's priority order) that
// fit within maxTokens, in priority order, as the evidence message: the view
// as max_tokens asks for it. omitted is the view's OmittedEntries; entries
// left out add to it. It returns nil where even an empty envelope does not
// fit.
func RenderView(shown []Shown, omitted, maxTokens int) *EvidenceMessage {
	var bs Buckets
	bs = bs.clone()
	size := newEnvelopeSize(&bs, true)
	total := omitted + len(shown)
	maxBytes := 3 * (maxTokens - 4)
	n := 0
	for i := range shown {
		s := &shown[i]
		l := bs.Get(s.Bucket)
		*l = append(*l, s.Entry)
		size.added(s.Bucket, &s.Entry)
		if size.total(total, &bs) > maxBytes {
			size.removed(s.Bucket, &s.Entry)
			*l = (*l)[:len(*l)-1]
			continue
		}
		n++
	}
	if size.total(total, &bs) > maxBytes {
		return nil
	}
	for b := range numBuckets {
		slices.SortFunc(*bs.Get(b), func(x, y Entry) int {
			return cmp.Or(cmp.Compare(x.Index, y.Index), cmp.Compare(x.Span[0], y.Span[0]))
		})
	}
	return &EvidenceMessage{Role: checkpoint.RoleAssistant, Content: string(appendEnvelopeAs(nil, total-n, &bs, true))}
}
