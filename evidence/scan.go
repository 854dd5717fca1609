package evidence

import (
	"cmp"
	"context"
	"slices"

	"github.com/recallhq/recall/checkpoint"
)

// The core decides which archive entries a view is chosen from and how an
// extraction changes the archive; an archive only answers and applies.
// What the core asks of an archive is a Scan (a filter, an order and a
// limit), so that the same rules run over the archive this package keeps in
// memory (Archive, for the offline evaluation and the tests) and over the
// one the store keeps in Postgres, where each scan is one index read.

// Order is the order a Scan reads items in.
type Order int8

const (
	// Oldest reads items in history order: by message index, then span.
	Oldest Order = iota
	// Newest reads items newest first.
	Newest
	// Heaviest reads items by weight, heaviest first, then oldest first.
	Heaviest
)

// Any matches every tier or bucket in a Scan.
const Any = -1

// Scan selects archive items: those that pass every filter, in Order, at
// most Limit of them.
type Scan struct {
	// Tier keeps the items of one tier; Any keeps all.
	Tier Tier
	// Bucket keeps the items of one bucket; Any keeps all.
	Bucket Bucket
	// Role keeps the items of one role; "" keeps all.
	Role checkpoint.Role
	// After keeps the items of messages after this index; -1 keeps all.
	After int
	// Before keeps the items of messages before this index; 0 keeps all.
	Before int
	// Terms keeps the items that hold one of these terms; nil keeps all.
	Terms []string
	// Slots keeps the items that name one of these things near a value
	// (Item.Slots); nil keeps all.
	Slots []string
	// Indexes keeps the items of these messages; nil keeps all.
	Indexes []int
	// Order is the order items are read in.
	Order Order
	// Limit bounds the items read.
	Limit int
}

// scanAll returns a Scan that keeps every item, in order, at most limit.
func scanAll(order Order, limit int) Scan {
	return Scan{Tier: Any, Bucket: Any, After: -1, Order: order, Limit: limit}
}

// Matches reports whether it passes the filters of s.
func (s *Scan) Matches(it *Item) bool {
	return (s.Tier == Any || it.Tier == s.Tier) &&
		(s.Bucket == Any || it.Bucket == s.Bucket) &&
		(s.Role == "" || it.Role == s.Role) &&
		it.Index > s.After && (s.Before <= 0 || it.Index < s.Before) &&
		(s.Terms == nil || sharesTerm(s.Terms, it.Terms)) &&
		(s.Slots == nil || sharesTerm(s.Slots, it.Slots)) &&
		(s.Indexes == nil || slices.Contains(s.Indexes, it.Index))
}

// sharesTerm reports whether terms (any order) and sorted share a term.
func sharesTerm(terms, sorted []string) bool {
	for _, t := range terms {
		if _, ok := slices.BinarySearch(sorted, t); ok {
			return true
		}
	}
	return false
}

// Index reads a conversation's archive by scans. The store's reads each
// scan through an index; Archive reads its slice.
type Index interface {
	// Scan returns the items of each scan, in its order, in one
	// consistent read of the archive.
	Scan(ctx context.Context, scans []Scan) ([][]Item, error)
}

// ArchiveWriter changes a conversation's archive as the core decides
// (AddToArchive).
type ArchiveWriter interface {
	// Replace deletes the items whose restatement key is one of keys and
	// adds items, and returns how many it deleted.
	Replace(ctx context.Context, keys []string, items []Item) (int, error)
	// Delete deletes the items s selects and returns how many.
	Delete(ctx context.Context, s Scan) (int, error)
}

// AddToArchive adds the items of one extraction, in history order, to an
// archive of count items and returns its new size: an item replaces the
// items of its restatement key (an older copy, or an earlier one of the
// same extraction), and while the archive holds more than max items the
// oldest recent_context items go, then the oldest.
func AddToArchive(ctx context.Context, w ArchiveWriter, items []Item, count, max int) (int, error) {
	items = LatestByKey(items)
	if len(items) == 0 {
		return count, nil
	}
	keys := make([]string, len(items))
	for i := range items {
		keys[i] = items[i].Key
	}
	deleted, err := w.Replace(ctx, keys, items)
	if err != nil {
		return 0, err
	}
	count += len(items) - deleted
	for _, bucket := range []Bucket{RecentContext, Any} {
		over := count - max
		if over <= 0 {
			break
		}
		s := scanAll(Oldest, over)
		s.Bucket = bucket
		n, err := w.Delete(ctx, s)
		if err != nil {
			return 0, err
		}
		count -= n
	}
	return count, nil
}

// Scan implements Index over the items held in memory.
func (a *Archive) Scan(_ context.Context, scans []Scan) ([][]Item, error) {
	out := make([][]Item, len(scans))
	for i := range scans {
		out[i] = a.scan(&scans[i])
	}
	return out, nil
}

// scan returns the items s selects.
func (a *Archive) scan(s *Scan) []Item {
	if a == nil || s.Limit <= 0 {
		return nil
	}
	var out []Item
	switch s.Order {
	case Newest:
		for i := len(a.items) - 1; i >= 0 && len(out) < s.Limit; i-- {
			if s.Matches(&a.items[i]) {
				out = append(out, a.items[i])
			}
		}
	case Oldest:
		for i := range a.items {
			if len(out) == s.Limit {
				break
			}
			if s.Matches(&a.items[i]) {
				out = append(out, a.items[i])
			}
		}
	case Heaviest:
		for i := range a.items {
			if s.Matches(&a.items[i]) {
				out = append(out, a.items[i])
			}
		}
		slices.SortStableFunc(out, func(x, y Item) int { return cmp.Compare(y.Weight, x.Weight) })
		out = out[:min(len(out), s.Limit)]
	}
	return out
}

// Replace implements ArchiveWriter.
func (a *Archive) Replace(_ context.Context, keys []string, items []Item) (int, error) {
	gone := make(map[string]bool, len(keys))
	for _, k := range keys {
		gone[k] = true
	}
	n := len(a.items)
	a.items = slices.DeleteFunc(a.items, func(it Item) bool { return gone[it.Key] })
	deleted := n - len(a.items)
	inOrder := len(a.items) == 0 || len(items) == 0 || items[0].Newer(&a.items[len(a.items)-1])
	for i := 1; inOrder && i < len(items); i++ {
		inOrder = items[i].Newer(&items[i-1])
	}
	a.items = append(a.items, items...)
	if !inOrder {
		// Items of older messages (an entry weighed again): the archive
		// stays in history order.
		slices.SortStableFunc(a.items, func(x, y Item) int {
			return cmp.Or(cmp.Compare(x.Index, y.Index), cmp.Compare(x.Span[0], y.Span[0]))
		})
	}
	return deleted, nil
}

// Delete implements ArchiveWriter.
func (a *Archive) Delete(_ context.Context, s Scan) (int, error) {
	gone := make(map[windowKey]bool)
	for _, it := range a.scan(&s) {
		gone[windowKey{it.Index, it.Span[0]}] = true
	}
	a.items = slices.DeleteFunc(a.items, func(it Item) bool { return gone[windowKey{it.Index, it.Span[0]}] })
	return len(gone), nil
}
