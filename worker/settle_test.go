package worker

import (
	"errors"
	"testing"
	"time"

	"github.com/recallhq/recall/evidence"
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
		outcome evidence.Outcome
		err     error
		age     time.Duration
		want    settlement
	}{
		{"store failed", evidence.Applied, failed, 0, settleRetry},
		{"store failed on a gap", evidence.Gap, failed, time.Hour, settleRetry},
		{"rejected", evidence.Rejected, nil, 0, settleTerm},
		{"young gap", evidence.Gap, nil, gapTimeout - time.Millisecond, settleGapWait},
		{"gap as old as the timeout", evidence.Gap, nil, gapTimeout, settleGapReject},
		{"old gap", evidence.Gap, nil, time.Hour, settleGapReject},
		{"applied", evidence.Applied, nil, 0, settleAck},
		{"accepted", evidence.Accepted, nil, 0, settleAck},
		{"duplicate", evidence.Duplicate, nil, 0, settleAck},
		{"stale", evidence.Stale, nil, time.Hour, settleAck},
		{"deleted", evidence.Deleted, nil, 0, settleAck},
		{"nothing to summarise", evidence.NothingToSummarise, nil, 0, settleAck},
	} {
		if got := settle(store.Result{Outcome: tc.outcome}, tc.err, tc.age, gapTimeout); got != tc.want {
			t.Errorf("%s: settle = %d, want %d", tc.name, got, tc.want)
		}
	}
}
