package evidence

import (
	"cmp"
	"math"
	"slices"
)

// How the relevant candidates are ranked against a request: BM25 over the
// entries' terms, with each term's rarity estimated over the whole archive
// (Candidates.DF), and the sense an entry takes from its neighbours: the
// other entries of its message, and the message before it (a reply takes
// its sense from the question it answers). The window's terms rank only
// among entries the request's terms rank equally.
const (
	// bm25K1 and bm25B are BM25's usual parameters.
	bm25K1 = 1.2
	bm25B  = 0.75
	// messageShare is the share of the idf of a request term that an
	// entry lacks and another entry of its message holds; previousShare
	// the share for one that the message before holds (a reply takes its
	// sense from the question it answers).
	messageShare  = 0.6
	previousShare = 0.5
	// questionShare scales an entry that is itself a question: it asks
	// what the request asks, and answers nothing.
	questionShare = 0.5
	// sameMessageFree entries of one message rank by their score alone;
	// each further one is scaled by sameMessageDecay once more, so that a
	// request that needs several facts is shown several messages, not one
	// long message's every sentence.
	sameMessageFree  = 3
	sameMessageDecay = 0.7
)

// rankRelevant orders the relevant candidates that are not in the query's
// window by how well they match the request, then the window; best first,
// newer first on ties.
func rankRelevant(c *Candidates, q *Query, rare *rarity, w *Weights) ([]*Item, []float64) {
	total := float64(max(c.Total, 1))
	idf := c.idf(q)
	windowDF := make(map[string]int, len(q.windowOnly))
	for i := range c.Relevant {
		for _, t := range c.Relevant[i].Terms {
			if _, ok := slices.BinarySearch(q.windowOnly, t); ok {
				windowDF[t]++
			}
		}
	}
	avg := 0.0
	for i := range c.Relevant {
		avg += float64(len(c.Relevant[i].Terms))
	}
	avg = max(avg/float64(max(len(c.Relevant), 1)), 1)
	held := make(map[int][]string)
	for _, m := range messageTerms(c.Relevant, idf) {
		held[m.index] = m.terms
	}

	type scored struct {
		it              *Item
		request, window float64
	}
	var ss []scored
	for i := range c.Relevant {
		it := &c.Relevant[i]
		if q.window[windowKey{it.Index, it.Span[0]}] {
			continue
		}
		sc := scored{it: it}
		norm := (bm25K1 + 1) / (1 + bm25K1*(1-bm25B+bm25B*float64(len(it.Terms))/avg))
		for _, t := range it.Terms {
			if w := idf[t]; w > 0 {
				sc.request += w * norm
			} else if n := windowDF[t]; n > 0 {
				sc.window += math.Log(1 + total/float64(n))
			}
		}
		for _, t := range held[it.Index] {
			if _, own := slices.BinarySearch(it.Terms, t); !own {
				sc.request += messageShare * idf[t]
			}
		}
		for _, t := range held[it.Index-1] {
			if _, own := slices.BinarySearch(it.Terms, t); !own {
				sc.request += previousShare * idf[t]
			}
		}
		if sc.request == 0 && sc.window == 0 {
			continue
		}
		// A relevant candidate's score grows with its chance of being
		// needed: a sure fact scores twice what the same match in a
		// sentence nothing needs would (set by hand: it orders equal
		// matches, and the balance's shares are fitted around it).
		f := 1 + c.chanceNow(it, rare, w)
		if question(it.Excerpt) {
			f *= questionShare
		}
		sc.request *= f
		sc.window *= f
		ss = append(ss, sc)
	}
	order := func(x, y scored) int {
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
	}
	slices.SortFunc(ss, order)
	// Each further entry of a message counts less.
	seen := make(map[int]int)
	for i := range ss {
		n := seen[ss[i].it.Index]
		seen[ss[i].it.Index] = n + 1
		d := math.Pow(sameMessageDecay, float64(max(0, n-sameMessageFree+1)))
		ss[i].request *= d
		ss[i].window *= d
	}
	slices.SortStableFunc(ss, order)
	out := make([]*Item, len(ss))
	scores := make([]float64, len(ss))
	for i := range ss {
		out[i], scores[i] = ss[i].it, ss[i].request
	}
	return out, scores
}

// countHolding counts the items that hold term t.
func countHolding(items []Item, t string) int {
	n := 0
	for i := range items {
		if _, ok := slices.BinarySearch(items[i].Terms, t); ok {
			n++
		}
	}
	return n
}

// idf returns the inverse document frequency of each of q's request terms
// that an archive item holds, by Candidates.DF.
func (c *Candidates) idf(q *Query) map[string]float64 {
	total := float64(max(c.Total, 1))
	idf := make(map[string]float64, len(q.request))
	for _, t := range q.request {
		df, ok := c.DF[t]
		if !ok {
			// A term the index was not asked for (a long request's
			// shortest): counted among the candidates.
			df = float64(countHolding(c.Relevant, t))
		}
		if df > 0 {
			idf[t] = math.Log(1 + (total-df+0.5)/(df+0.5))
		}
	}
	return idf
}

// namesOnce reports whether it holds a request term that at most
// onceHolders entries of the archive hold: a name, a number or a word said
// once.
func (c *Candidates) namesOnce(it *Item, q *Query) bool {
	for _, t := range q.request {
		if _, ok := slices.BinarySearch(it.Terms, t); !ok {
			continue
		}
		if df, ok := c.DF[t]; ok && df <= onceHolders || !ok && countHolding(c.Relevant, t) <= onceHolders {
			return true
		}
	}
	return false
}

// onceHolders is how many entries may hold a term said once: the entry
// and, say, its restatement.
const onceHolders = 2

// heldTerms are the terms of a query that the items of one message hold.
type heldTerms struct {
	index int
	terms []string // sorted
}

// messageTerms returns, for each message of items (in history order), the
// terms of idf its items hold.
func messageTerms(items []Item, idf map[string]float64) []heldTerms {
	var out []heldTerms
	for i := range items {
		it := &items[i]
		if len(out) == 0 || out[len(out)-1].index != it.Index {
			out = append(out, heldTerms{index: it.Index})
		}
		m := &out[len(out)-1]
		for _, t := range it.Terms {
			if idf[t] > 0 {
				m.terms = append(m.terms, t)
			}
		}
	}
	for i := range out {
		slices.Sort(out[i].terms)
		out[i].terms = slices.Compact(out[i].terms)
	}
	return out
}
