package evidence

import (
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
	// Relevant are the union of the newest RelevantLimit items that share
	// a term with the request and the newest WindowLimit items that share
	// one with the window only, oldest first.
	Relevant []Item
}

// The bounds of a candidate selection.
const (
	// CandidateLimit bounds Candidates.Recent and each of Candidates.Tiers.
	CandidateLimit = 64
	// RelevantLimit bounds the candidates that share a term with the
	// request, WindowLimit those that share one with the window only.
	RelevantLimit = 192
	WindowLimit   = 64
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
// no query picks, for an archive of Total items.
type Standing struct {
	Total  int
	Recent []Item
	Tiers  [TierContext][]Item
}

// NewStanding returns the standing candidates of an archive of total
// items from lists, the answers to StandingScans.
func NewStanding(total int, lists [][]Item) *Standing {
	s := &Standing{Total: total, Recent: lists[RecentList]}
	for t := range TierContext {
		s.Tiers[t] = MergeCandidates(lists[3*int(t)], lists[3*int(t)+1], lists[3*int(t)+2])
	}
	return s
}

// ReadStanding reads the standing candidates of an archive of total items.
func ReadStanding(ctx context.Context, ix Index, total int) (*Standing, error) {
	lists, err := ix.Scan(ctx, StandingScans)
	if err != nil {
		return nil, err
	}
	return NewStanding(total, lists), nil
}

// QueryScans returns the scans of the candidates query q picks.
func QueryScans(q *Query) []Scan {
	var scans []Scan
	if len(q.request) > 0 {
		s := scanAll(Newest, RelevantLimit)
		s.Terms = q.request
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
func (s *Standing) With(picked [][]Item) *Candidates {
	return &Candidates{Total: s.Total, Recent: s.Recent, Tiers: s.Tiers, Relevant: MergeCandidates(picked...)}
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
	return s.With(picked), q, nil
}

// ReadCandidates reads the candidates of a view for request from an
// archive of total items, and returns them with the query.
func ReadCandidates(ctx context.Context, ix Index, total int, request string) (*Candidates, *Query, error) {
	s, err := ReadStanding(ctx, ix, total)
	if err != nil {
		return nil, nil, err
	}
	return s.Candidates(ctx, ix, request)
}

// Candidates reads the candidates for request from the archive held in
// memory.
func (a *Archive) Candidates(request string) (*Candidates, *Query) {
	c, q, err := ReadCandidates(context.Background(), a, a.Len(), request)
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
	out := &Candidates{Total: c.Total, Recent: keep(c.Recent), Relevant: keep(c.Relevant)}
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
