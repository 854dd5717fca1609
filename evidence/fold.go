package evidence

// NewestRequest returns the index of the newest user message in msgs, or -1.
func NewestRequest(msgs []Message) int {
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
func Fold(s State, history []Message, cfg *Config) (State, Outcome, error) {
	s = s.Clone()
	prefix := s.PrefixDigest
	if s.Cursor == 0 {
		prefix = chainStart // the zero State folds like NewState()
	}
	k := NewestRequest(history)
	ev := &Event{Messages: history, PrefixDigest: chainStart}
	if len(history) >= s.Cursor {
		ev.Digests = make([]Digest, max(s.Cursor, k, 0))
		for i := range ev.Digests {
			d, err := history[i].Digest()
			if err != nil {
				return s, Stale, digestError(i, err)
			}
			ev.Digests[i] = d
		}
	}
	// Nothing past the cursor is held: a whole history is only checked
	// against the summarised prefix.
	lin, err := DecideLineage(Held{Cursor: s.Cursor, Count: s.Cursor, Prefix: prefix}, ev, nil, nil)
	if err != nil {
		return s, Stale, err
	}
	if lin.Outcome == Stale || lin.Outcome == PrefixMismatch {
		return s, lin.Outcome, nil
	}
	s.MessageCount = max(s.MessageCount, len(history))
	if k <= s.Cursor {
		s.PrefixDigest = prefix
		return s, NothingToSummarise, nil
	}
	c := prefix
	for _, d := range ev.Digests[s.Cursor:k] {
		c = c.Next(d)
	}
	s.Summarise(history[s.Cursor:k], c, &history[k], cfg)
	return s, Applied, nil
}
