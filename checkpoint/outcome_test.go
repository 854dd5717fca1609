package checkpoint_test

import (
	"testing"

	"github.com/recallhq/recall/checkpoint"
)

func TestOutcomeString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		o    checkpoint.Outcome
		want string
	}{
		{checkpoint.Applied, "applied"},
		{checkpoint.Stale, "stale"},
		{checkpoint.NothingToSummarise, "nothing"},
		{checkpoint.PrefixMismatch, "prefix_mismatch"},
		{checkpoint.Accepted, "accepted"},
		{checkpoint.Duplicate, "duplicate"},
		{checkpoint.Gap, "gap"},
		{checkpoint.Deleted, "deleted"},
		{checkpoint.Rejected, "rejected"},
		{checkpoint.Retried, "retried"},
		{checkpoint.GapRetried, "gap_retried"},
		{checkpoint.Outcome(99), "unknown"},
		{checkpoint.Outcome(-1), "unknown"},
	}
	for _, tt := range tests {
		if got := tt.o.String(); got != tt.want {
			t.Errorf("Outcome(%d).String() = %q, want %q", tt.o, got, tt.want)
		}
	}
}
