package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// loopSizes are the sizes of the kill and drain loops.
type loopSizes struct {
	convs, turns int
	rate         float64       // events published per second
	every        time.Duration // a fault every every..2*every
	maxFaults    time.Duration // faults stop after this long at most
	converge     time.Duration // how long convergence may take after the last fault
}

func killLoopSizes() loopSizes {
	if long {
		// issue 7: 3 workers, 20,000 events for 500 conversations, a kill
		// every few seconds.
		return loopSizes{convs: 500, turns: 40, rate: 200, every: 3 * time.Second, maxFaults: 10 * time.Minute, converge: 5 * time.Minute}
	}
	return loopSizes{convs: 50, turns: 40, rate: 120, every: time.Second, maxFaults: 60 * time.Second, converge: 150 * time.Second}
}

// faultLoop publishes a workload to three workers and applies fault to one
// of them every few seconds while events flow, then lets the workers
// converge and compares every state with its oracle.
type faultLoop struct {
	name  string
	sizes loopSizes
	seed  uint64
	// fault hits worker ws[i] and returns its replacement.
	fault func(t *testing.T, c *cluster, ws []*child, i int) *child
}

type loopResult struct {
	c        *cluster
	w        *workload
	faults   int
	verdict  verdict
	converge time.Duration
	drained  time.Duration
	logs     logSummary
	// afterPublish is, for outages, how long convergence took after the
	// last event was published.
	afterPublish time.Duration
}

func (l *faultLoop) run(t *testing.T) loopResult {
	sz := l.sizes
	c := newCluster(t, "")
	ws := make([]*child, 3)
	for i := range ws {
		ws[i] = c.worker(fmt.Sprintf("w%d", i))
	}
	w := newWorkload(t, l.seed, l.name, sz.convs, sz.turns)
	t.Logf("%s: %d conversations, %d events (%d distinct) at %.0f/s", l.name, len(w.Convs), len(w.Events), distinctIDs(w.Events), sz.rate)

	ctx, cancel := context.WithTimeout(context.Background(), sz.maxFaults+10*time.Minute)
	defer cancel()
	var published atomic.Bool
	pubErr := make(chan error, 1)
	pubStart := time.Now()
	go func() {
		pubErr <- c.pub.run(ctx, w.Events, sz.rate, 8)
		published.Store(true)
	}()

	rng := rand.New(rand.NewPCG(l.seed, 7))
	start := time.Now()
	faults := 0
	for {
		time.Sleep(sz.every + time.Duration(rng.Int64N(int64(sz.every))))
		done := published.Load()
		if done {
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			pending, _, err := consumerPending(pctx, c.js)
			pcancel()
			// Stop once every event was delivered at least once.
			if err == nil && pending == 0 && faults >= 3 {
				break
			}
		}
		if time.Since(start) > sz.maxFaults {
			break
		}
		i := rng.IntN(len(ws))
		ws[i] = l.fault(t, c, ws, i)
		faults++
		if t.Failed() {
			break
		}
	}
	lastFault := time.Now()
	if err := <-pubErr; err != nil {
		t.Fatalf("publishing: %v", err)
	}
	t.Logf("%s: published in %s; %d faults over %s", l.name, time.Since(pubStart).Round(time.Second), faults, lastFault.Sub(start).Round(time.Second))

	v, took := waitConverged(t, c.pool, w.Convs, sz.converge)
	t.Logf("%s: %s, %s after the last fault", l.name, v, took.Round(100*time.Millisecond))
	drained, _ := waitStreamDone(t, c.js, 90*time.Second)
	drained += took
	for _, wk := range ws {
		if !wk.alive() {
			t.Errorf("%s exited: %v\n%s", wk.name, wk.waitErr, tail(wk.logPath, 20))
		}
	}
	logs := c.scanLogs()
	since := func(x time.Time) string {
		if x.IsZero() {
			return "never"
		}
		return fmt.Sprintf("%+.1fs", x.Sub(lastFault).Seconds())
	}
	t.Logf("%s: relative to the last fault: last redelivered event handled %s; River rescued %d stuck jobs, last %s",
		l.name, since(logs.LastRedelivery), logs.Rescued, since(logs.LastRescue))
	return loopResult{c: c, w: w, faults: faults, verdict: v, converge: took, drained: drained, logs: logs}
}

// finish runs the checks every loop shares and reports the row.
func (r *loopResult) finish(t *testing.T, scenario, note string) {
	t.Helper()
	ctx := context.Background()
	requireOracle(t, r.verdict)
	requireCleanLogs(t, r.logs)
	if n, err := rejectionCount(ctx, r.c.pool); err != nil || n != 0 {
		t.Errorf("rejections: %d (%v); every event of the workload is valid", n, err)
	}
	states, err := jobStates(ctx, r.c.pool)
	if err != nil {
		t.Error(err)
	}
	if states["discarded"] > 0 || states["cancelled"] > 0 {
		t.Errorf("extraction jobs given up: %v", states)
	}
	t.Logf("jobs by state: %v; outcomes logged: %v; redelivered after an ack: %d", states, r.logs.Outcomes, r.logs.RedeliveredAfterAck)
	results.add(t, row{
		Scenario: scenario, Published: distinctIDs(r.w.Events), Accepted: r.c.pub.accepted(),
		States: r.verdict.States, Matching: r.verdict.Matching, Dups: r.verdict.Dups, Lost: r.verdict.Lost,
		Recover: r.converge,
		Note:    r.note(note),
	})
}

func (r *loopResult) note(extra string) string {
	if r.afterPublish > 0 {
		return fmt.Sprintf("%s; recover = backlog of the fault handled; converged %s after the last publish, stream fully acked after %s",
			extra, r.afterPublish.Round(100*time.Millisecond), r.drained.Round(100*time.Millisecond))
	}
	return fmt.Sprintf("%d faults; %s; recover = converged after the last fault; stream fully acked after %s",
		r.faults, extra, r.drained.Round(100*time.Millisecond))
}

// TestKillLoop SIGKILLs one of three workers every second or two (every few
// seconds in the long run) while events flow, and restarts it.
func TestKillLoop(t *testing.T) {
	t.Parallel()
	l := &faultLoop{name: "kill", sizes: killLoopSizes(), seed: 1,
		fault: func(t *testing.T, c *cluster, ws []*child, i int) *child {
			ws[i].kill()
			return c.worker(fmt.Sprintf("w%d", i))
		}}
	r := l.run(t)
	r.finish(t, "1 kill loop (SIGKILL)", fmt.Sprintf("%d acked events delivered again", r.logs.RedeliveredAfterAck))
}
