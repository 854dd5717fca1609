package evidence

import (
	"context"
	"fmt"

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
		var err error
		e.count, err = AddToArchive(ctx, e.archive, ExtractItems(msgs, s.Cursor, &s.Carry, &e.cfg), e.count, e.cfg.MaxArchiveEntries)
		if err != nil {
			return err
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
