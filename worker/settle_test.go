package worker

import (
	"errors"
	"testing"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/store"
)

// TestSettle checks how each answer of the store ends a message: an error
// is redelivered, a rejection terminated, a young gap waited for, an old
// one recorded, and everything else acknowledged.
func TestSettle(t *testing.T) {
	t.Parallel()
	const gapTimeout = 5 * time.Second
	failed := errors.New("connection refused")
	for _, tc := range []struct {
		name    string
		outcome checkpoint.Outcome
		err     error
		age     time.Duration
		want    settlement
	}{
		{"store failed", checkpoint.Applied, failed, 0, settleRetry},
		{"store failed on a gap", checkpoint.Gap, failed, time.Hour, settleRetry},
		{"rejected", checkpoint.Rejected, nil, 0, settleTerm},
		{"young gap", checkpoint.Gap, nil, gapTimeout - time.Millisecond, settleGapWait},
		{"gap as old as the timeout", checkpoint.Gap, nil, gapTimeout, settleGapReject},
		{"old gap", checkpoint.Gap, nil, time.Hour, settleGapReject},
		{"applied", checkpoint.Applied, nil, 0, settleAck},
		{"accepted", checkpoint.Accepted, nil, 0, settleAck},
		{"duplicate", checkpoint.Duplicate, nil, 0, settleAck},
		{"stale", checkpoint.Stale, nil, time.Hour, settleAck},
		{"deleted", checkpoint.Deleted, nil, 0, settleAck},
		{"nothing to summarise", checkpoint.NothingToSummarise, nil, 0, settleAck},
	} {
		if got := settle(store.Result{Outcome: tc.outcome}, tc.err, tc.age, gapTimeout); got != tc.want {
			t.Errorf("%s: settle = %d, want %d", tc.name, got, tc.want)
		}
	}
}
