package evidence

import "github.com/recallhq/recall/checkpoint"

// NewestRequest returns the index of the newest user message in msgs, or -1.
func NewestRequest(msgs []checkpoint.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].IsRequest() {
			return i
		}
	}
	return -1
}

// Fold applies a whole history to s: DecideLineage judges it as a snapshot
// against the summarised prefix (a history shorter than the cursor is stale;
// one whose chain over [0, Cursor) differs from PrefixDigest is a prefix
// mismatch); otherwise the messages between the cursor and the newest user
// message are summarised. The returned state shares nothing with s. The
// error is a *DecodeError for a message that cannot be canonicalised.
func Fold(s State, history []checkpoint.Message, cfg *Config) (State, checkpoint.Outcome, error) {
	s = s.Clone()
	prefix := s.PrefixDigest
	if s.Cursor == 0 {
		prefix = checkpoint.ChainStart() // the zero State folds like NewState()
	}
	k := NewestRequest(history)
	ev := &checkpoint.Event{Messages: history, PrefixDigest: checkpoint.ChainStart()}
	if len(history) >= s.Cursor {
		ds, err := checkpoint.Digests(history[:max(s.Cursor, k, 0)])
		if err != nil {
			return s, checkpoint.Stale, err
		}
		ev.Digests = ds
	}
	// Nothing past the cursor is held: a whole history is only checked
	// against the summarised prefix.
	lin, err := checkpoint.DecideLineage(checkpoint.Held{Cursor: s.Cursor, Count: s.Cursor, Prefix: prefix}, ev, nil, nil)
	if err != nil {
		return s, checkpoint.Stale, err
	}
	if lin.Outcome == checkpoint.Stale || lin.Outcome == checkpoint.PrefixMismatch {
		return s, lin.Outcome, nil
	}
	s.MessageCount = max(s.MessageCount, len(history))
	if k <= s.Cursor {
		s.PrefixDigest = prefix
		return s, checkpoint.NothingToSummarise, nil
	}
	c := prefix
	for _, d := range ev.Digests[s.Cursor:k] {
		c = c.Next(d)
	}
	s.Summarise(history[s.Cursor:k], c, &history[k], cfg)
	return s, checkpoint.Applied, nil
}
