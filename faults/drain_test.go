package faults

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestRollingDrain sends SIGTERM to one of three workers every second or two
// while events flow, and restarts it once it has exited: every drain exits
// 0 within RECALL_SHUTDOWN_TIMEOUT, and no event acknowledged (or
// terminated) before a drain is delivered again after it.
func TestRollingDrain(t *testing.T) {
	t.Parallel()
	const shutdownTimeout = 5 * time.Second // the cluster's RECALL_SHUTDOWN_TIMEOUT
	var mu sync.Mutex
	var drains []time.Duration
	l := &faultLoop{name: "drain", sizes: killLoopSizes(), seed: 2,
		fault: func(t *testing.T, c *cluster, ws []*child, i int) *child {
			code, took, err := ws[i].term(shutdownTimeout + 5*time.Second)
			switch {
			case err != nil:
				t.Errorf("drain of %s: %v\n%s", ws[i].name, err, tail(ws[i].logPath, 20))
			case code != 0:
				t.Errorf("drain of %s exited %d, want 0\n%s", ws[i].name, code, tail(ws[i].logPath, 20))
			case took > shutdownTimeout+2*time.Second:
				// The timeout bounds the jobs; closing connections may add a little.
				t.Errorf("drain of %s took %s, more than RECALL_SHUTDOWN_TIMEOUT %s", ws[i].name, took, shutdownTimeout)
			}
			mu.Lock()
			drains = append(drains, took)
			mu.Unlock()
			return c.worker(fmt.Sprintf("w%d", i))
		}}
	l.sizes.converge = min(l.sizes.converge, 90*time.Second) // nothing waits for a rescue
	r := l.run(t)
	if r.logs.RedeliveredAfterAck > 0 {
		t.Errorf("%d events acknowledged before a drain were delivered again after it, e.g.:\n%v", r.logs.RedeliveredAfterAck, r.logs.RedeliveredExamples)
	}
	var longest time.Duration
	for _, d := range drains {
		longest = max(longest, d)
	}
	r.finish(t, "2 rolling drain (SIGTERM)", fmt.Sprintf("all exit 0, longest drain %s; %d acked events delivered again", longest.Round(10*time.Millisecond), r.logs.RedeliveredAfterAck))
}
