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

// Fold applies a whole history to s by the rules of §4: a history shorter
// than the cursor is stale; one whose chain over [0, Cursor) differs from
// PrefixDigest is a prefix mismatch; otherwise the messages between the
// cursor and the newest user message are summarised. The returned state
// shares nothing with s. The error is a *DecodeError for a message that
// cannot be canonicalised.
func Fold(s State, history []Message, cfg *Config) (State, Outcome, error) {
	s = s.Clone()
	if len(history) < s.Cursor {
		return s, Stale, nil
	}
	c := chainStart
	for i := 0; i < s.Cursor; i++ {
		m, err := history[i].Digest()
		if err != nil {
			return s, Stale, digestError(i, err)
		}
		c = c.Next(m)
	}
	if c != s.PrefixDigest && !(s.Cursor == 0 && s.PrefixDigest == Digest{}) {
		return s, PrefixMismatch, nil
	}
	s.MessageCount = max(s.MessageCount, len(history))
	k := NewestRequest(history)
	if k <= s.Cursor {
		if s.Cursor == 0 {
			s.PrefixDigest = chainStart
		}
		return s, NothingToSummarise, nil
	}
	for i := s.Cursor; i < k; i++ {
		m, err := history[i].Digest()
		if err != nil {
			return s, Stale, digestError(i, err)
		}
		c = c.Next(m)
	}
	s.Summarise(history[s.Cursor:k], c, &history[k], cfg)
	return s, Applied, nil
}
