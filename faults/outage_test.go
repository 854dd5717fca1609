package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recallhq/recall/testutil/pgtest"
)

// outage publishes a workload to workers and, once a share of it is
// published, runs fault (which returns when the fault is over); the
// workers must recover without a restart.
type outage struct {
	name         string
	seed         uint64
	convs, turns int
	rate         float64
	workers      int
	at           float64 // share of the events published before the fault
	fault        func(t *testing.T, c *cluster)
	converge     time.Duration
}

func outageSizes(name string, seed uint64) outage {
	if long {
		return outage{name: name, seed: seed, convs: 200, turns: 30, rate: 200, workers: 2, at: 0.3, converge: 3 * time.Minute}
	}
	return outage{name: name, seed: seed, convs: 30, turns: 30, rate: 100, workers: 2, at: 0.3, converge: 2 * time.Minute}
}

func (o *outage) run(t *testing.T, c *cluster) loopResult {
	ws := make([]*child, o.workers)
	for i := range ws {
		ws[i] = c.worker(fmt.Sprintf("w%d", i))
	}
	w := newWorkload(t, o.seed, o.name, o.convs, o.turns)
	t.Logf("%s: %d conversations, %d events at %.0f/s", o.name, len(w.Convs), len(w.Events), o.rate)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pubErr := make(chan error, 1)
	go func() { pubErr <- c.pub.run(ctx, w.Events, o.rate, 8) }()
	for c.pub.sent.Load() < int64(o.at*float64(len(w.Events))) {
		time.Sleep(20 * time.Millisecond)
	}
	faultStart := time.Now()
	o.fault(t, c)
	lastFault := time.Now()
	seqAtEnd := c.pub.maxSeq.Load()
	t.Logf("%s: fault from %d events published, lasted %s", o.name, int(o.at*float64(len(w.Events))), lastFault.Sub(faultStart).Round(100*time.Millisecond))
	if err := <-pubErr; err != nil {
		t.Fatalf("publishing: %v", err)
	}
	if pending, ackPending, err := consumerPending(ctx, c.js); err == nil {
		t.Logf("%s: when the last event was published, %d were not yet delivered and %d not yet acknowledged", o.name, pending, ackPending)
	}
	v, took := waitConverged(t, c.pool, w.Convs, o.converge)
	t.Logf("%s: %s, %s after the last event was published", o.name, v, took.Round(100*time.Millisecond))
	drained, _ := waitStreamDone(t, c.js, 90*time.Second)
	for _, wk := range ws {
		if !wk.alive() {
			t.Errorf("%s exited during the outage (%v): the workers must recover without a restart\n%s", wk.name, wk.waitErr, tail(wk.logPath, 20))
		}
	}
	logs := c.scanLogs()
	// Recovery: from the end of the fault until every event published
	// before it ended was handled. Convergence is then bounded by the
	// publishing that goes on.
	recovered, missing := logs.backlogCleared(lastFault, seqAtEnd)
	if missing > 0 {
		t.Errorf("%d of the first %d stream messages were never handled", missing, seqAtEnd)
	}
	t.Logf("%s: every event published before the fault ended (stream_seq <= %d) was handled %s after it; River rescued %d stuck jobs",
		o.name, seqAtEnd, recovered.Round(10*time.Millisecond), logs.Rescued)
	return loopResult{c: c, w: w, faults: 1, verdict: v, converge: recovered, drained: drained + took, logs: logs, afterPublish: took}
}

// TestPostgresOutage stops the private Postgres cluster the test owns
// (pg_ctl stop -m immediate, like a crash) for 5 s (10 s in the long run)
// mid-stream and starts it again.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	pg, err := newPGCluster("max_connections=200", "fsync=off")
	if err != nil {
		t.Fatalf("private Postgres cluster: %v", err)
	}
	t.Cleanup(pg.Remove)
	c := newCluster(t, pg.URL("recall")) // recall migrate creates the database
	down := 5 * time.Second
	if long {
		down = 10 * time.Second
	}
	o := outageSizes("pgdown", 3)
	o.fault = func(t *testing.T, c *cluster) {
		if err := pg.Stop("immediate"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(down)
		if err := pg.Start(); err != nil {
			t.Fatal(err)
		}
	}
	r := o.run(t, c)
	if r.logs.Outcomes["retried"] == 0 {
		t.Errorf("no event was nak'd during the outage: the fault was not felt (outcomes %v)", r.logs.Outcomes)
	}
	r.finish(t, fmt.Sprintf("3a Postgres down %s", down), fmt.Sprintf("%d events nak'd and retried", r.logs.Outcomes["retried"]))
}

// TestPostgresTerminateBackends terminates every connection of the workers
// (pg_terminate_backend) on the shared server, five times a second apart,
// mid-stream.
func TestPostgresTerminateBackends(t *testing.T) {
	t.Parallel()
	// The machine's server is shared with other packages' tests: keep the
	// workers' pools small.
	c := newCluster(t, pgtest.NewDatabase(t), "RECALL_CONCURRENCY=4")
	o := outageSizes("pgterm", 4)
	terminated := 0
	o.fault = func(t *testing.T, c *cluster) {
		for range 5 {
			var n int
			err := c.pool.QueryRow(context.Background(), `
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND application_name = 'recall' AND pid <> pg_backend_pid()`).Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			terminated += n
			time.Sleep(time.Second)
		}
	}
	r := o.run(t, c)
	if terminated == 0 {
		t.Errorf("no worker connection was terminated: the fault was not felt")
	}
	r.finish(t, "3b pg_terminate_backend x5", fmt.Sprintf("%d connections terminated, %d events nak'd and retried", terminated, r.logs.Outcomes["retried"]))
}

// TestNATSOutage stops the in-process JetStream server mid-stream for 2 s
// (5 s in the long run) and starts it again on the same port and store.
func TestNATSOutage(t *testing.T) {
	t.Parallel()
	c := newCluster(t, "")
	down := 2 * time.Second
	if long {
		down = 5 * time.Second
	}
	o := outageSizes("natsdown", 5)
	o.fault = func(t *testing.T, c *cluster) {
		c.nats.Stop()
		time.Sleep(down)
		c.nats.Restart()
	}
	r := o.run(t, c)
	r.finish(t, fmt.Sprintf("4 NATS down %s", down), fmt.Sprintf("%d publish attempts failed and were retried", r.c.pub.failures))
}
