package store

// SetFoldedHook makes every extraction of s call f after its fold, before
// it takes the conversation's row lock to write.
func SetFoldedHook(s *Store, f func()) { s.foldedHook = f }
