package evidence

import (
	"cmp"
	"context"
	"slices"
)

// Candidates are the items a focus view is chosen from: a bounded selection
// of the archive that an index finds without reading the whole archive
// (ReadCandidates).
type Candidates struct {
	// Total is the archive's size.
	Total int
	// Recent are the newest items, newest first, at most CandidateLimit.
	Recent []Item
	// Tiers hold, for every tier but TierContext, the union of its oldest
	// CandidateLimit/4 items, its newest CandidateLimit/4 and its heaviest
	// CandidateLimit/2 (the oldest first among equals), oldest first.
	Tiers [TierContext][]Item
	// Relevant are the items the query picked (QueryScans), oldest first.
	Relevant []Item
	// DF estimates, for each term of the request the index was asked for,
	// how many items of the archive hold it.
	DF map[string]float64
	// Carry is the fold's carry: the rarity of specific things that
	// stands now, by which the view weighs the candidates again.
	Carry Carry
	// Notes are the newest NoteCandidates model notes, in SortNotes's
	// order, of the NoteTotal the conversation has (notes.go); Total
	// counts the archive's items only.
	Notes     []Note
	NoteTotal int

	// Fixes are the later entries that may correct candidates, read for
	// them (FixScans); they are among Relevant too.
	Fixes []Item

	// chance, when set, is an entry's chance of being needed in place of
	// the one its weight holds (SetChance).
	chance func(*Item) float64
	// fixes are the entries FixScans asked for.
	fixes []windowKey
}

// SetChance makes chance the chance of being needed by which a view ranks
// c's entries, in place of the one each entry's weight holds: what a fit
// tries on candidates held fixed (package eval). nil restores the weights.
func (c *Candidates) SetChance(chance func(*Item) float64) { c.chance = chance }

// chanceNow returns it's chance of being needed: SetChance's, or as its
// weight holds it with the rarity rare that stands now (chanceNow).
func (c *Candidates) chanceNow(it *Item, rare *rarity, w *Weights) float64 {
	if c.chance != nil {
		return c.chance(it)
	}
	return chanceNow(it, rare, w)
}

// The bounds of a candidate selection.
const (
	// CandidateLimit bounds Candidates.Recent and each of Candidates.Tiers.
	CandidateLimit = 64
	// TermLimit bounds the candidates of each term of the request,
	// WindowLimit those that share a term with the window only.
	TermLimit   = 48
	WindowLimit = 64
	// StatementLimit bounds the candidates of a request that asks nothing
	// (QueryScans).
	StatementLimit = 192
	// RelevantLimit bounds the candidates a query picks.
	RelevantLimit = MaxQueryTerms*TermLimit + WindowLimit
	// WindowItems is how many of the newest items join the request's text
	// in the query: a request such as "yes, that one" refers back to them.
	WindowItems = 6
)

// StandingScans are the scans of the candidates no query picks: each
// tier's oldest, newest and heaviest items (list 3t+j: j 0 oldest, 1
// newest, 2 heaviest), then the newest items (list RecentList). They
// change only when the archive does, so a reader may keep their answer
// while it stays the same.
var StandingScans = func() []Scan {
	var scans []Scan
	for t := range TierContext {
		for j, order := range []Order{Oldest, Newest, Heaviest} {
			s := scanAll(order, CandidateLimit/4)
			if j == 2 {
				s.Limit = CandidateLimit / 2
			}
			s.Tier = t
			scans = append(scans, s)
		}
	}
	return append(scans, scanAll(Newest, CandidateLimit))
}()

// RecentList is the list of StandingScans that holds the newest items.
const RecentList = 3 * int(TierContext)

// Standing are the answers to StandingScans: the candidates of a view that
// no query picks, for an archive of Total items, with the fold's Carry.
type Standing struct {
	Total  int
	Recent []Item
	Tiers  [TierContext][]Item
	Carry  Carry
	// Notes are the newest NoteCandidates of the NoteTotal model notes
	// (notes.go), which no query picks either.
	Notes     []Note
	NoteTotal int
}

// NewStanding returns the standing candidates of an archive of total
// items, whose fold carries carry, from lists, the answers to
// StandingScans.
func NewStanding(total int, carry Carry, lists [][]Item) *Standing {
	s := &Standing{Total: total, Recent: lists[RecentList], Carry: carry}
	for t := range TierContext {
		s.Tiers[t] = MergeCandidates(lists[3*int(t)], lists[3*int(t)+1], lists[3*int(t)+2])
	}
	return s
}

// ReadStanding reads the standing candidates of an archive of total items
// whose fold carries carry.
func ReadStanding(ctx context.Context, ix Index, total int, carry Carry) (*Standing, error) {
	lists, err := ix.Scan(ctx, StandingScans)
	if err != nil {
		return nil, err
	}
	s := NewStanding(total, carry, lists)
	return s, s.readNotes(ctx, ix)
}

// QueryScans returns the scans of the candidates query q picks. For a
// question, for each of its scanned terms the newest TermLimit items that
// hold it (each term's rarity is estimated from its own scan: a question
// is answered relevance first); for a request that asks nothing, whose
// view gives relevance a tenth of the room, the newest StatementLimit items
// that hold any of them, in one scan (a common term's scan reads every
// item that holds it on a large archive). Then the newest WindowLimit
// items that share a term with the window only.
func QueryScans(q *Query) []Scan {
	scans := make([]Scan, 0, len(q.scanned)+1)
	switch {
	case q.asks:
		for _, t := range q.scanned {
			s := scanAll(Newest, TermLimit)
			s.Terms = []string{t}
			scans = append(scans, s)
		}
	case len(q.scanned) > 0:
		s := scanAll(Newest, StatementLimit)
		s.Terms = q.scanned
		scans = append(scans, s)
	}
	if len(q.windowOnly) > 0 {
		s := scanAll(Newest, WindowLimit)
		s.Terms = q.windowOnly
		scans = append(scans, s)
	}
	return scans
}

// Query returns the query for request (a request's or a search's text),
// whose window is s's newest items.
func (s *Standing) Query(request string) *Query { return NewQuery(request, s.Recent) }

// With returns the candidates of a view for q: s's, and picked, the
// answers to QueryScans(q).
func (s *Standing) With(q *Query, picked [][]Item) *Candidates {
	c := &Candidates{Total: s.Total, Recent: s.Recent, Tiers: s.Tiers, Relevant: MergeCandidates(picked...),
		DF: make(map[string]float64, len(q.scanned)), Carry: s.Carry, Notes: s.Notes, NoteTotal: s.NoteTotal}
	newest := 0
	if len(s.Recent) > 0 {
		newest = s.Recent[0].Index
	}
	switch {
	case q.asks:
		for i, t := range q.scanned {
			items := picked[i]
			c.DF[t] = estimateDF(len(items), oldestIndex(items), newest, s.Total, len(items) >= TermLimit)
		}
	case len(q.scanned) > 0:
		items := picked[0]
		for _, t := range q.scanned {
			c.DF[t] = estimateDF(countHolding(items, t), oldestIndex(items), newest, s.Total, len(items) >= StatementLimit)
		}
	}
	return c
}

// oldestIndex returns the message index of the last of items, which a scan
// of the newest returns newest first, or 0.
func oldestIndex(items []Item) int {
	if len(items) == 0 {
		return 0
	}
	return items[len(items)-1].Index
}

// estimateDF estimates how many items of an archive of total items, whose
// newest message has index newest, hold a term that n items of a scan of
// the newest hold, the scan reaching back to message oldest: n where the
// scan read all it could (not full), else n in proportion to the share of
// the history the scan spans.
func estimateDF(n, oldest, newest, total int, full bool) float64 {
	if !full || n == 0 {
		return float64(n)
	}
	span := newest - oldest + 1
	return min(float64(total), float64(n)*float64(newest+1)/float64(max(span, 1)))
}

// Candidates returns the candidates of a view for request with s's
// standing ones, reading those request picks from ix, and the query.
func (s *Standing) Candidates(ctx context.Context, ix Index, request string) (*Candidates, *Query, error) {
	q := s.Query(request)
	var picked [][]Item
	if scans := QueryScans(q); len(scans) > 0 {
		var err error
		if picked, err = ix.Scan(ctx, scans); err != nil {
			return nil, nil, err
		}
	}
	c := s.With(q, picked)
	if scans := c.NeighbourScans(q); len(scans) > 0 {
		more, err := ix.Scan(ctx, scans)
		if err != nil {
			return nil, nil, err
		}
		c.AddNeighbours(more)
	}
	if scans := c.FixScans(); len(scans) > 0 {
		more, err := ix.Scan(ctx, scans)
		if err != nil {
			return nil, nil, err
		}
		c.AddFixes(more)
	}
	return c, q, nil
}

// FixLimit bounds the items of the messages of the candidates' later
// entries (Item.Fix) a view reads.
const FixLimit = 256

// FixScans returns the scan of the messages of the later entries that may
// correct the candidates (Item.Fix) and are not candidates themselves: a
// view shows an older entry only beside the later one.
func (c *Candidates) FixScans() []Scan {
	have := make(map[windowKey]bool)
	var want []windowKey
	c.each(func(it *Item) { have[windowKey{it.Index, it.Span[0]}] = true })
	c.each(func(it *Item) {
		if it.Fix == (Fix{}) {
			return
		}
		if k := (windowKey{it.Fix.Index, it.Fix.Start}); !have[k] {
			have[k] = true
			want = append(want, k)
		}
	})
	if len(want) == 0 {
		return nil
	}
	var idx []int
	for _, k := range want {
		idx = append(idx, k.index)
	}
	slices.Sort(idx)
	s := scanAll(Oldest, FixLimit)
	s.Indexes = slices.Compact(idx)
	c.fixes = want
	return []Scan{s}
}

// AddFixes adds, of the answer to FixScans, the later entries it asked for
// to the relevant candidates.
func (c *Candidates) AddFixes(more [][]Item) {
	want := make(map[windowKey]bool, len(c.fixes))
	for _, k := range c.fixes {
		want[k] = true
	}
	var found []Item
	for _, it := range more[0] {
		if want[windowKey{it.Index, it.Span[0]}] {
			found = append(found, it)
		}
	}
	c.Relevant = MergeCandidates(c.Relevant, found)
	c.Fixes = append(c.Fixes, found...)
}

// each calls f with every candidate of c's lists.
func (c *Candidates) each(f func(*Item)) {
	for i := range c.Recent {
		f(&c.Recent[i])
	}
	for t := range c.Tiers {
		for i := range c.Tiers[t] {
			f(&c.Tiers[t][i])
		}
	}
	for i := range c.Relevant {
		f(&c.Relevant[i])
	}
}

// NeighbourMessages is how many of the messages that match a query best
// are read whole, with the message after each (the reply to a question
// takes its sense from it): the sentence that answers a request need not
// repeat its words. NeighbourLimit bounds the items read.
const (
	NeighbourMessages = 16
	NeighbourLimit    = 256
)

// NeighbourScans returns the scan of the messages, and the message after
// each, whose relevant candidates match q best: by the rarity of the
// request's terms they hold together.
func (c *Candidates) NeighbourScans(q *Query) []Scan {
	if !q.asks {
		return nil
	}
	idf := c.idf(q)
	scores := make(map[int]float64)
	for _, m := range messageTerms(c.Relevant, idf) {
		for _, t := range m.terms {
			scores[m.index] += idf[t]
		}
	}
	if len(scores) == 0 {
		return nil
	}
	msgs := make([]int, 0, len(scores))
	for m := range scores {
		msgs = append(msgs, m)
	}
	slices.SortFunc(msgs, func(x, y int) int { return cmp.Or(cmp.Compare(scores[y], scores[x]), cmp.Compare(y, x)) })
	msgs = msgs[:min(len(msgs), NeighbourMessages)]
	var idx []int
	for _, m := range msgs {
		idx = append(idx, m, m+1)
	}
	slices.Sort(idx)
	s := scanAll(Oldest, NeighbourLimit)
	s.Indexes = slices.Compact(idx)
	return []Scan{s}
}

// AddNeighbours adds the answers to NeighbourScans to the relevant
// candidates.
func (c *Candidates) AddNeighbours(more [][]Item) {
	c.Relevant = MergeCandidates(append(more, c.Relevant)...)
}

// ReadCandidates reads the candidates of a view for request from an
// archive of total items whose fold carries carry, and returns them with
// the query.
func ReadCandidates(ctx context.Context, ix Index, total int, carry Carry, request string) (*Candidates, *Query, error) {
	s, err := ReadStanding(ctx, ix, total, carry)
	if err != nil {
		return nil, nil, err
	}
	return s.Candidates(ctx, ix, request)
}

// Candidates reads the candidates for request from the archive s holds in
// memory (a state the pure fold folded).
func (s *State) Candidates(request string) (*Candidates, *Query) {
	c, q, err := ReadCandidates(context.Background(), s.Archive, s.Archive.Len(), s.Carry, request)
	if err != nil {
		panic(err) // an archive in memory answers every scan
	}
	return c, q
}

// Recent returns the newest n items, newest first.
func (a *Archive) Recent(n int) []Item {
	return a.scan(&Scan{Tier: Any, Bucket: Any, After: -1, Order: Newest, Limit: n})
}

// Before returns the candidates of entries of messages before index
// before: a view chosen from them leaves out what the messages from before
// on say (context assembly keeps those whole beside it). before <= 0 means
// every message. Total stays the archive's size.
func (c *Candidates) Before(before int) *Candidates {
	if before <= 0 {
		return c
	}
	keep := func(items []Item) []Item {
		return slices.DeleteFunc(slices.Clone(items), func(it Item) bool { return it.Index >= before })
	}
	out := &Candidates{Total: c.Total, Recent: keep(c.Recent), Relevant: keep(c.Relevant), Fixes: keep(c.Fixes), DF: c.DF, Carry: c.Carry, NoteTotal: c.NoteTotal,
		Notes: slices.DeleteFunc(slices.Clone(c.Notes), func(n Note) bool { return n.Index >= before })}
	for t := range c.Tiers {
		out.Tiers[t] = keep(c.Tiers[t])
	}
	return out
}

// MergeCandidates returns the union of lists of items, oldest first.
func MergeCandidates(lists ...[]Item) []Item {
	var out []Item
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.SortFunc(out, func(x, y Item) int {
		if x.Newer(&y) {
			return 1
		}
		if y.Newer(&x) {
			return -1
		}
		return 0
	})
	return slices.CompactFunc(out, func(x, y Item) bool { return x.Index == y.Index && x.Span[0] == y.Span[0] })
}
