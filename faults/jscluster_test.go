package faults

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallhq/recall/testutil/natstest"
)

// jsClusterSizes are the sizes of the JetStream cluster scenario: about
// half of what two workers take on two cores, so that what a fault costs
// shows as lag and not as a backlog the load builds anyway.
type jsClusterSizes struct {
	convs, turns int
	rate         float64
	rounds       int           // rounds of the three faults
	down         time.Duration // how long the stream leader stays down
	converge     time.Duration
}

func clusterSizes() jsClusterSizes {
	if long {
		return jsClusterSizes{convs: 200, turns: 30, rate: 100, rounds: 3, down: 5 * time.Second, converge: 5 * time.Minute}
	}
	return jsClusterSizes{convs: 30, turns: 30, rate: 50, rounds: 1, down: 2 * time.Second, converge: 2 * time.Minute}
}

// clusterFault is one fault of the scenario and what it cost.
type clusterFault struct {
	name       string
	start, end time.Time
	// elected is, for a leader kill, how long the stream had no leader.
	elected time.Duration
	// caughtUp is, for a node restarted, how long until its copy of the
	// stream was current again.
	caughtUp time.Duration
}

// TestJetStreamCluster runs two recall workers on a three-node JetStream
// cluster (in-process servers, routes on loopback, sync_interval always)
// with a stream of three replicas, and, while events flow at about half
// load: kills the stream's leader and restarts it; SIGKILLs a worker with
// events in flight and restarts it; restarts a NATS node with its store
// wiped. Every event the stream acknowledged must be handled, every state
// must equal its oracle, no entry may be duplicated. It reports the time the
// stream had no leader, the publish stall and the ingest lag around each
// fault, and the time to recover.
func TestJetStreamCluster(t *testing.T) {
	t.Parallel()
	sz := clusterSizes()
	nc := natstest.StartCluster(t, 3)
	c := newClusterAt(t, "", nc.URLs(), "RECALL_STREAM_REPLICAS=3", "RECALL_CONCURRENCY=8")
	ws := []*child{c.worker("w0"), c.worker("w1")}
	nc.WaitStreamLeader(stream, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s, err := c.js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().Config.Replicas; n != 3 {
		t.Fatalf("the stream recall created has %d replicas, want 3 (RECALL_STREAM_REPLICAS=3)", n)
	}

	w := newWorkload(t, 17, "jsc", sz.convs, sz.turns)
	t.Logf("cluster: %d conversations, %d events (%d distinct) at %.0f/s, %d round(s) of faults",
		len(w.Convs), len(w.Events), distinctIDs(w.Events), sz.rate, sz.rounds)
	mon := startBacklogMonitor(ctx, c)
	pubErr := make(chan error, 1)
	pubStart := time.Now()
	go func() { pubErr <- c.pub.run(ctx, w.Events, sz.rate, 8) }()
	waitPublished := func(share float64) {
		for c.pub.sent.Load() < int64(share*float64(len(w.Events))) && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}

	var faults []clusterFault
	for r := range sz.rounds {
		at := 0.1 + 0.85*float64(r)/float64(sz.rounds)
		step := 0.85 / float64(sz.rounds) / 3

		// 1. The stream's leader is killed, then restarted with its store.
		waitPublished(at)
		f := clusterFault{name: "stream leader killed", start: time.Now()}
		old := nc.WaitStreamLeader(stream, 30*time.Second)
		nc.Servers[old].Stop()
		nl := nc.WaitStreamLeader(stream, 60*time.Second)
		f.elected = time.Since(f.start)
		time.Sleep(sz.down)
		nc.Servers[old].Start()
		f.caughtUp = waitStreamCurrent(t, nc, old, 60*time.Second)
		f.end = time.Now()
		t.Logf("round %d: stream leader n%d killed; n%d elected after %s; n%d restarted after %s and current %s later",
			r, old, nl, f.elected.Round(time.Millisecond), old, sz.down, f.caughtUp.Round(time.Millisecond))
		faults = append(faults, f)

		// 2. A worker is killed with events in flight, then restarted.
		waitPublished(at + step)
		f = clusterFault{name: "worker killed mid-batch", start: time.Now()}
		i := r % len(ws)
		inFlight := waitInFlight(ctx, c, 3*time.Second)
		ws[i].kill()
		ws[i] = c.worker(fmt.Sprintf("w%d", i))
		f.end = time.Now()
		t.Logf("round %d: worker w%d SIGKILLed with %d events unacknowledged, restarted in %s", r, i, inFlight, f.end.Sub(f.start).Round(time.Millisecond))
		faults = append(faults, f)

		// 3. A node other than the stream's leader restarts with its store
		// wiped: it must catch up from its peers.
		waitPublished(at + 2*step)
		f = clusterFault{name: "node restarted with its store wiped", start: time.Now()}
		leader := nc.WaitStreamLeader(stream, 30*time.Second)
		k := (leader + 1 + r%2) % len(nc.Servers)
		nc.Servers[k].RestartWiped()
		f.caughtUp = waitStreamCurrent(t, nc, k, 2*time.Minute)
		f.end = time.Now()
		t.Logf("round %d: n%d restarted with an empty store; its copy of the stream current after %s", r, k, f.caughtUp.Round(time.Millisecond))
		faults = append(faults, f)
		if t.Failed() {
			break
		}
	}
	lastFault := faults[len(faults)-1].end
	seqAtEnd := c.pub.maxSeq.Load()
	if err := <-pubErr; err != nil {
		t.Fatalf("publishing: %v", err)
	}
	t.Logf("cluster: published in %s (%d publish attempts failed and were retried)", time.Since(pubStart).Round(100*time.Millisecond), c.pub.failures)
	v, took := waitConverged(t, c.pool, w.Convs, sz.converge)
	t.Logf("cluster: %s, %s after the last event was published", v, took.Round(100*time.Millisecond))
	drained, _ := waitStreamDone(t, c.js, 90*time.Second)
	mon.stop()
	for _, wk := range ws {
		if !wk.alive() {
			t.Errorf("%s exited: %v\n%s", wk.name, wk.waitErr, tail(wk.logPath, 20))
		}
	}
	logs := c.scanLogs()
	recovered, missing := logs.backlogCleared(lastFault, seqAtEnd)
	if missing > 0 {
		t.Errorf("%d of the first %d stream messages were never handled", missing, seqAtEnd)
	}
	lost := c.unhandledAcked()
	if len(lost) > 0 {
		t.Errorf("%d events the stream acknowledged were never handled, e.g. %v", len(lost), lost[:min(5, len(lost))])
	}

	// Lag: from the stream's ack of an event to its ingest by a worker,
	// before the first fault and from each fault's start to the next's.
	handled := c.handledAt()
	t.Logf("cluster: ingest lag before the faults: %s; backlog at most %d events", c.lagIn(handled, pubStart, faults[0].start), mon.maxIn(pubStart, faults[0].start))
	for k, f := range faults {
		to := f.start.Add(time.Hour)
		if k+1 < len(faults) {
			to = faults[k+1].start
		}
		t.Logf("cluster: %s at %s (window %s): publish stalled at most %s; ingest lag %s; backlog at most %d events",
			f.name, f.start.Sub(pubStart).Round(100*time.Millisecond), min(to.Sub(f.start), time.Since(f.start)).Round(100*time.Millisecond),
			c.pub.stallIn(f.start, to).Round(time.Millisecond), c.lagIn(handled, f.start, to), mon.maxIn(f.start, to))
	}
	// Events that waited out the ack wait: which fault they met.
	slow := c.slowEvents(handled, 5*time.Second)
	for _, e := range slow[:min(len(slow), 10)] {
		near := ""
		for _, f := range faults {
			if d := e.acked.Sub(f.start); d > -2*time.Second && d < 2*time.Second {
				near += fmt.Sprintf(" %s %+.2fs;", f.name, -d.Seconds())
			}
		}
		t.Logf("cluster: event acked at %s took %s to be handled; faults within 2 s of its ack:%s",
			e.acked.Sub(pubStart).Round(10*time.Millisecond), e.lag.Round(time.Millisecond), near)
	}
	t.Logf("cluster: %d events took more than 5 s from ack to ingest", len(slow))
	t.Logf("cluster: every event published before the last fault ended (stream_seq <= %d) was handled %s after it", seqAtEnd, recovered.Round(10*time.Millisecond))
	res := loopResult{c: c, w: w, faults: len(faults), verdict: v, converge: recovered, drained: drained + took, logs: logs, afterPublish: took}
	var elected []string
	for _, f := range faults {
		if f.elected > 0 {
			elected = append(elected, f.elected.Round(time.Millisecond).String())
		}
	}
	res.finish(t, fmt.Sprintf("10 JetStream cluster R3 (%d rounds)", sz.rounds),
		fmt.Sprintf("new stream leader after %s; %d acked events delivered again", strings.Join(elected, ", "), logs.RedeliveredAfterAck))
}

// waitStreamCurrent waits until server i's copy of the stream is current
// with its leader and returns how long that took.
func waitStreamCurrent(t *testing.T, nc *natstest.Cluster, i int, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for !nc.Servers[i].StreamCurrent(stream) {
		if time.Since(start) > timeout {
			t.Errorf("n%d's copy of the stream is not current after %s", i, timeout)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// waitInFlight waits (at most timeout) until the consumer has delivered
// events that are not acknowledged yet, and returns how many.
func waitInFlight(ctx context.Context, c *cluster, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, ap, err := consumerPending(pctx, c.js)
		cancel()
		if err == nil && ap > 0 || time.Now().After(deadline) {
			return ap
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// handledAt returns when each event id was first acknowledged or
// terminated by a worker, from every child's log.
func (c *cluster) handledAt() map[string]time.Time {
	c.mu.Lock()
	children := append([]*child(nil), c.children...)
	c.mu.Unlock()
	handled := map[string]time.Time{}
	for _, ch := range children {
		_ = scanLog(ch.logPath, func(rec map[string]any, _ []byte) {
			if rec == nil || rec["msg"] != "event" {
				return
			}
			outcome, _ := rec["outcome"].(string)
			id, _ := rec["event_id"].(string)
			when, err := time.Parse(time.RFC3339Nano, fmt.Sprint(rec["time"]))
			if !terminal(outcome) || id == "" || err != nil {
				return
			}
			if h, ok := handled[id]; !ok || when.Before(h) {
				handled[id] = when
			}
		})
	}
	return handled
}

// unhandledAcked returns the ids of events the stream acknowledged to the
// publisher that no worker logged as handled.
func (c *cluster) unhandledAcked() []string {
	handled := c.handledAt()
	c.pub.mu.Lock()
	defer c.pub.mu.Unlock()
	var ids []string
	for id := range c.pub.ackedAt {
		if _, ok := handled[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// lagIn summarises, for the events the stream acknowledged between from and
// to, the time from that ack to their ingest.
func (c *cluster) lagIn(handled map[string]time.Time, from, to time.Time) string {
	c.pub.mu.Lock()
	var lags []time.Duration
	for id, at := range c.pub.ackedAt {
		if h, ok := handled[id]; ok && !at.Before(from) && at.Before(to) {
			lags = append(lags, max(h.Sub(at), 0))
		}
	}
	c.pub.mu.Unlock()
	if len(lags) == 0 {
		return "no events"
	}
	slices.Sort(lags)
	return fmt.Sprintf("p50 %s, p99 %s, max %s over %d events", lags[len(lags)/2].Round(time.Millisecond),
		lags[len(lags)*99/100].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond), len(lags))
}

type slowEvent struct {
	acked time.Time
	lag   time.Duration
}

// slowEvents returns the events whose ingest came more than over after the
// stream's ack, oldest first.
func (c *cluster) slowEvents(handled map[string]time.Time, over time.Duration) []slowEvent {
	c.pub.mu.Lock()
	var out []slowEvent
	for id, at := range c.pub.ackedAt {
		if h, ok := handled[id]; ok && h.Sub(at) > over {
			out = append(out, slowEvent{at, h.Sub(at)})
		}
	}
	c.pub.mu.Unlock()
	slices.SortFunc(out, func(a, b slowEvent) int { return a.acked.Compare(b.acked) })
	return out
}

// stallIn returns the longest time between two acknowledgements the
// publisher received that starts between from and to.
func (p *publisher) stallIn(from, to time.Time) time.Duration {
	p.mu.Lock()
	var ats []time.Time
	for _, at := range p.ackedAt {
		ats = append(ats, at)
	}
	p.mu.Unlock()
	slices.SortFunc(ats, func(a, b time.Time) int { return a.Compare(b) })
	var longest time.Duration
	for i := 1; i < len(ats); i++ {
		if !ats[i].Before(from) && ats[i-1].Before(to) {
			prev := ats[i-1]
			if prev.Before(from) {
				prev = from
			}
			longest = max(longest, ats[i].Sub(prev))
		}
	}
	return longest
}

// backlogMonitor samples the consumer's backlog (events not yet delivered
// plus delivered and not yet acknowledged) every 100 ms.
type backlogMonitor struct {
	mu      sync.Mutex
	samples []backlogSample
	cancel  context.CancelFunc
	done    chan struct{}
}

type backlogSample struct {
	at      time.Time
	backlog int
}

func startBacklogMonitor(ctx context.Context, c *cluster) *backlogMonitor {
	ctx, cancel := context.WithCancel(ctx)
	m := &backlogMonitor{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			p, ap, err := consumerPending(pctx, c.js)
			pcancel()
			if err != nil {
				continue // no leader for a moment
			}
			m.mu.Lock()
			m.samples = append(m.samples, backlogSample{time.Now(), int(p) + ap})
			m.mu.Unlock()
		}
	}()
	return m
}

func (m *backlogMonitor) stop() {
	m.cancel()
	<-m.done
}

// maxIn returns the largest backlog sampled between from and to.
func (m *backlogMonitor) maxIn(from, to time.Time) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.samples {
		if !s.at.Before(from) && s.at.Before(to) {
			n = max(n, s.backlog)
		}
	}
	return n
}

// machineBusy returns the busy and total CPU ticks of the machine so far
// (/proc/stat).
func machineBusy(t *testing.T) (busy, total int64) {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	for i, f := range strings.Fields(line)[1:] {
		n, _ := strconv.ParseInt(f, 10, 64)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// TestJetStreamClusterThroughput measures the pipeline's throughput with
// one, two and three recall workers on the three-node cluster (R3 stream,
// sync_interval always): events published as fast as the stream takes them
// from 16 publishers, until every state equals its oracle. It logs the
// figures and how busy the machine's CPUs were; it asserts only that every
// state is right.
func TestJetStreamClusterThroughput(t *testing.T) {
	t.Parallel()
	convs, turns := 20, 10
	if long {
		convs, turns = 200, 20
	}
	nc := natstest.StartCluster(t, 3)
	for workers := 1; workers <= 3; workers++ {
		c := newClusterAt(t, "", nc.URLs(), "RECALL_STREAM_REPLICAS=3")
		ws := make([]*child, workers)
		for i := range ws {
			ws[i] = c.worker(fmt.Sprintf("tp%d-w%d", workers, i))
		}
		w := newWorkload(t, uint64(100+workers), fmt.Sprintf("tp%d", workers), convs, turns)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		busy0, total0 := machineBusy(t)
		start := time.Now()
		if err := c.pub.run(ctx, w.Events, 0, 16); err != nil {
			cancel()
			t.Fatalf("publishing: %v", err)
		}
		published := time.Since(start)
		v, _ := waitConvergedFine(t, c, w.Convs, 5*time.Minute)
		took := time.Since(start)
		busy1, total1 := machineBusy(t)
		cancel()
		requireOracle(t, v)
		t.Logf("throughput with %d worker(s): %d events published in %s (%.0f/s into the R3 stream), all applied in %s: %.0f events/s end to end; machine CPU busy %.0f%%",
			workers, len(w.Events), published.Round(time.Millisecond), float64(len(w.Events))/published.Seconds(),
			took.Round(time.Millisecond), float64(len(w.Events))/took.Seconds(), 100*float64(busy1-busy0)/float64(max(total1-total0, 1)))
		for _, wk := range ws {
			wk.kill()
		}
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := c.js.DeleteStream(dctx, stream); err != nil {
			t.Errorf("delete the stream between runs: %v", err)
		}
		dcancel()
	}
}

// waitConvergedFine is waitConverged polling every 50 ms, checking first
// that the stream is drained (cheap) and then the states.
func waitConvergedFine(t *testing.T, c *cluster, convs []*conversation, timeout time.Duration) (verdict, time.Duration) {
	t.Helper()
	start := time.Now()
	for time.Since(start) < timeout {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		p, ap, err := consumerPending(ctx, c.js)
		cancel()
		if err == nil && p == 0 && ap == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		v, err := check(ctx, c.pool, convs)
		cancel()
		if err == nil && v.Matching == v.States || time.Since(start) > timeout {
			return v, time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
