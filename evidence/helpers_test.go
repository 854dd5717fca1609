package evidence

import (
	"fmt"
	"testing"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// seedConfig folds by the seed profile's rules, which most tests of this
// package pin; focus_test.go tests the focus profile.
var seedConfig = &Config{Profile: ProfileSeed}

// fold folds history into a new state or fails the test.
func fold(tb testing.TB, s State, history []checkpoint.Message) (State, checkpoint.Outcome) {
	tb.Helper()
	got, out, err := Fold(s, history, seedConfig)
	if err != nil {
		tb.Fatalf("Fold: %v", err)
	}
	return got, out
}

// foldAll folds history into a new state.
func foldAll(tb testing.TB, history []checkpoint.Message) State {
	tb.Helper()
	s, _ := fold(tb, NewState(), history)
	return s
}

// entry builds an expected entry.
func entry(role checkpoint.Role, id string, index int, excerpt string) Entry {
	return Entry{Role: role, MessageID: id, Index: index, Excerpt: excerpt}
}

// buckets builds expected buckets with non-nil slices.
func buckets(c, d, o, r []Entry) Buckets {
	return Buckets{Constraints: c, Decisions: d, OpenWork: o, RecentContext: r}.clone()
}

// talk is a conversation built turn by turn, each message numbered by its
// place.
type talk []checkpoint.Message

func (h *talk) add(role checkpoint.Role, text string) {
	id := fmt.Sprintf("m%d", len(*h))
	if role == checkpoint.RoleUser {
		*h = append(*h, checkpointtest.User(id, text))
	} else {
		*h = append(*h, checkpointtest.Assistant(id, text))
	}
}

// notShown folds h by the default (focus) profile and returns those of
// texts that no entry holds.
func notShown(tb testing.TB, h talk, texts []string) []string {
	tb.Helper()
	s, _, err := Fold(NewState(), h, nil)
	if err != nil {
		tb.Fatalf("Fold: %v", err)
	}
	var missing []string
	for _, text := range texts {
		if !shows(&s, text) {
			missing = append(missing, text)
		}
	}
	return missing
}
