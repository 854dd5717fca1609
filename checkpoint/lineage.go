package checkpoint

import "fmt"

// Held describes the history recall holds of a conversation: what lineage
// decisions are made against.
type Held struct {
	// Cursor is how many leading messages are summarised.
	Cursor int
	// Count is the length of the longest history accepted.
	Count int
	// Prefix is the chain digest of messages [0, Cursor).
	Prefix Digest
}

// Range returns [lo, hi): the held, unsummarised messages whose digests and
// chain digests DecideLineage needs for ev, the ones it overlaps and the one
// before its offset. It is empty when the decision needs none.
func (h *Held) Range(ev *Event) (lo, hi int) {
	lo, hi = h.Cursor, min(ev.End(), h.Count)
	if ev.Offset > h.Cursor {
		lo = ev.Offset - 1
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// Lineage is the decision about an event against the history recall holds.
type Lineage struct {
	// Outcome is Accepted, Duplicate, Stale, Gap or PrefixMismatch.
	Outcome Outcome
	// Detail says why, for PrefixMismatch; it never quotes message text.
	Detail string
	// From is, when Accepted, the first index to write: the event's
	// messages from it on are stored, and held messages from it on replaced.
	From int
	// Chain is, when Accepted, the chain digest of messages [0, From).
	Chain Digest
}

// DecideLineage decides what an event does to the history recall holds: a
// history shorter than the cursor is stale; an append starting past the held
// history has a gap; one whose chain over the summarised prefix, or whose
// prefix_digest at its offset, differs from what recall holds is a prefix
// mismatch; one that adds nothing is a duplicate; a different tail that is
// not longer than the held one is stale (the longer history wins, and on a
// tie the first accepted stays); anything else is accepted from the first
// index where it differs. digests and chains are the message and chain
// digests of the held messages Range names, in index order.
func DecideLineage(h Held, ev *Event, digests, chains []Digest) (Lineage, error) {
	cursor, held := h.Cursor, h.Count
	off, n := ev.Offset, ev.End()
	if n < cursor {
		return Lineage{Outcome: Stale}, nil
	}
	if off > held {
		return Lineage{Outcome: Gap}, nil
	}
	// The event's history must agree with the summarised prefix [0, cursor).
	if off <= cursor {
		c := ev.PrefixDigest
		for i := 0; i < cursor-off; i++ {
			c = c.Next(ev.Digests[i])
		}
		if c != h.Prefix {
			return Lineage{Outcome: PrefixMismatch, Detail: fmt.Sprintf("the chain digest of messages [0, %d) differs from the summarised history", cursor)}, nil
		}
	}
	lo, hi := h.Range(ev)
	if len(digests) != hi-lo || len(chains) != hi-lo {
		return Lineage{}, fmt.Errorf("lineage: have %d digests and %d chains of held messages [%d, %d)", len(digests), len(chains), lo, hi)
	}
	chainAt := func(i int) Digest { // the chain digest of [0, i), cursor <= i <= hi
		switch {
		case i == cursor:
			return h.Prefix
		case i == off:
			return ev.PrefixDigest
		default:
			return chains[i-1-lo]
		}
	}
	if off > cursor && ev.PrefixDigest != chains[off-1-lo] {
		return Lineage{Outcome: PrefixMismatch, Detail: fmt.Sprintf("prefix_digest does not match the history recall holds at offset %d", off)}, nil
	}
	d := hi // the first index where the event differs from what recall holds
	for i := max(cursor, off); i < hi; i++ {
		if ev.Digests[i-off] != digests[i-lo] {
			d = i
			break
		}
	}
	if n <= held {
		if d == hi {
			return Lineage{Outcome: Duplicate}, nil
		}
		return Lineage{Outcome: Stale}, nil
	}
	return Lineage{Outcome: Accepted, From: d, Chain: chainAt(d)}, nil
}
