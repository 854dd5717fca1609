package evidence

import (
	"context"
	"fmt"
	"slices"

	"github.com/recallhq/recall/checkpoint"
)

// ArchiveStore is a conversation's archive as an extraction reads and
// changes it: Archive in memory, the store's in Postgres.
type ArchiveStore interface {
	Index
	ArchiveWriter
}

// An Extraction folds the messages of one extraction into a
// conversation's state, in chunks of any size: the seed profile into the
// state's own buckets, the focus profile into the archive, and then the
// view for the request. The pure fold (State.Summarise) and the store run
// this same code, over the archive each keeps.
type Extraction struct {
	cfg     Config
	state   State
	archive ArchiveStore
	count   int
	added   bool
}

// StateOf returns the state an extraction of the conversation whose stored
// evidence is rec starts from: in the seed profile its buckets, which the
// fold adds to; in the focus profile its scalars only, since the view is
// chosen anew from the archive.
func (c *Config) StateOf(rec *Record) (State, error) {
	if c.withDefaults().Profile == ProfileSeed {
		return rec.State()
	}
	s := State{Version: rec.Version, Cursor: rec.Cursor, MessageCount: rec.MessageCount, PrefixDigest: rec.PrefixDigest}
	if s.Cursor == 0 {
		s.PrefixDigest = checkpoint.ChainStart()
	}
	var err error
	if s.Carry, err = UnmarshalCarry(rec.Carry); err != nil {
		return State{}, fmt.Errorf("decode the fold's carry: %w", err)
	}
	return s, nil
}

// NewExtraction begins an extraction into s, whose archive a holds count
// items (a is not read in the seed profile and may be nil there).
func (c *Config) NewExtraction(s State, a ArchiveStore, count int) *Extraction {
	return &Extraction{cfg: c.withDefaults(), state: s, archive: a, count: count}
}

// Add folds msgs, the history's messages from the state's cursor on, in
// index order, and advances the cursor past them; prefix is the chain
// digest of the history up to the new cursor.
func (e *Extraction) Add(ctx context.Context, msgs []checkpoint.Message, prefix checkpoint.Digest) error {
	if len(msgs) == 0 {
		return nil
	}
	s := &e.state
	if e.cfg.Profile == ProfileSeed {
		if s.Buckets.Constraints == nil {
			s.Buckets = s.Buckets.clone()
		}
		size := newEnvelopeSize(&s.Buckets, false)
		for i := range msgs {
			s.add(&msgs[i], s.Cursor+i, &e.cfg, &size)
		}
	} else {
		// The entries of each message; one group for all of them, unless
		// the archive may reach its bound on the way: what an extraction
		// reads of the archive for a message (correct.go) must be what
		// the archive held after the messages before it, whatever the
		// extractions' sizes.
		var groups [][]Item
		var vectors [][]Vector
		total := 0
		for i := range msgs {
			var items []Item
			var vs []Vector
			if e.cfg.trace != nil {
				items, vs = ExtractFeatures(msgs[i:i+1], s.Cursor+i, &s.Carry, &e.cfg)
			} else {
				items = ExtractItems(msgs[i:i+1], s.Cursor+i, &s.Carry, &e.cfg)
			}
			groups, vectors, total = append(groups, items), append(vectors, vs), total+len(items)
		}
		if e.count+total <= e.cfg.MaxArchiveEntries {
			groups, vectors = [][]Item{slices.Concat(groups...)}, [][]Vector{slices.Concat(vectors...)}
		}
		for i := range groups {
			if err := e.addItems(ctx, groups[i], vectors[i]); err != nil {
				return err
			}
		}
		if err := promoteAccepted(ctx, e.archive, msgs, s.Cursor); err != nil {
			return err
		}
	}
	s.Cursor += len(msgs)
	s.PrefixDigest = prefix
	s.MessageCount = max(s.MessageCount, s.Cursor)
	e.added = true
	return nil
}

// addItems adds the entries of one or more messages to the archive, with
// the corrections they make (correct.go); vs are their features when the
// extraction is traced.
func (e *Extraction) addItems(ctx context.Context, items []Item, vs []Vector) error {
	var pairs func(Pair)
	if t := e.cfg.trace; t != nil {
		pairs = t.pairs
	}
	links, updates, err := linkCorrections(ctx, e.archive, items, weightsOr(e.cfg.Weights), pairs)
	if err != nil {
		return err
	}
	if t := e.cfg.trace; t != nil && t.items != nil {
		for i := range items {
			if updates != nil {
				vs[i][FeatUpdate] = updates[i]
			}
			t.items(items[i], vs[i])
		}
	}
	// The links of archived entries go first: adding the items may evict
	// them, or replace them with a restatement.
	if archived := setLinks(items, links); len(archived) > 0 {
		keys := make([]string, len(archived))
		for i := range archived {
			keys[i] = archived[i].Key
		}
		if _, err := e.archive.Replace(ctx, keys, archived); err != nil {
			return err
		}
	}
	e.count, err = AddToArchive(ctx, e.archive, items, e.count, e.cfg.MaxArchiveEntries)
	return err
}

// Finish ends the extraction: in the focus profile it chooses the view for
// request, the message after those added (the current request). It
// returns the state, its version one higher when messages were added, and
// the archive's size.
func (e *Extraction) Finish(ctx context.Context, request *checkpoint.Message) (State, int, error) {
	s := e.state
	if !e.added {
		return s, e.count, nil
	}
	if e.cfg.Profile != ProfileSeed {
		c, q, err := ReadCandidates(ctx, e.archive, e.count, s.Carry, RequestText(request))
		if err != nil {
			return State{}, 0, err
		}
		s.SetView(SelectViewWith(c, q, e.cfg.MaxTokens, e.cfg.Weights))
	}
	s.Version++
	return s, e.count, nil
}
