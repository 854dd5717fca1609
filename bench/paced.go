package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/store"
)

// The paced scenario: the load agents make. Thousands of conversations each
// take a turn every few seconds, at times fixed in advance (open loop:
// nothing waits for recall), as full snapshots that grow and as append
// events; capacity is the highest rate at which the backlog stays bounded.

// PacedMethod says how the paced scenario runs recall.
const PacedMethod = "`recall worker` and `recall api` as child processes, CPU from /proc/PID/stat"

// pacedInProcess says it when the pipeline runs in this process instead,
// for --cpuprofile and --sqlstats.
const pacedInProcess = "pipeline and API in the benchmark's process (for the profile or SQL statistics; recall's CPU includes the load generator's)"

// pacedTarget is the recall under load.
type pacedTarget struct {
	stream, subject, durable string
	apiURL, token            string
	workerPID, apiPID        int // 0: this process
	inProcess                bool
	stop                     func() error
}

// startPacedTarget starts `recall worker` and `recall api` as children of
// their own on the run's database, or, with SQL statistics or a profile, the
// pipeline and API in this process.
func (e *env) startPacedTarget(ctx context.Context) (*pacedTarget, error) {
	if e.cfg.InProcess {
		p, err := e.startPipeline(ctx)
		if err != nil {
			return nil, err
		}
		srv, err := e.startAPI(ctx, p.store)
		if err != nil {
			return nil, err
		}
		return &pacedTarget{stream: e.stream, subject: e.subject, durable: "recall-bench-" + e.id,
			apiURL: srv.url, token: srv.token(""), inProcess: true,
			stop: sync.OnceValue(func() error { srv.close(); return nil })}, nil
	}
	// No in-process River client may take the children's jobs, and the
	// children need connections of their own.
	if err := e.stopPipeline(); err != nil {
		return nil, err
	}
	e.pool.Reset()
	t := &pacedTarget{stream: e.stream + "_PACED", subject: "recall.bench." + e.id + ".paced", durable: "recall-worker"}
	e.streams = append(e.streams, t.stream)
	worker, err := e.startChild(ctx, e.cfg.NATSURL, t.stream, t.subject)
	if err != nil {
		return nil, err
	}
	if err := worker.waitReady(ctx, e.js, t.stream); err != nil {
		_ = worker.stop()
		return nil, err
	}
	// The API's long-polls are woken by the worker's wake-ups on its
	// stream's subject.
	apiChild, apiURL, secret, err := e.spawnAPI(t.stream)
	if err != nil {
		_ = worker.stop()
		return nil, err
	}
	// Each child stops once, however often stop is called.
	t.stop = func() error { return errors.Join(apiChild.stop(), worker.stop()) }
	client := newHTTPClient(2)
	defer client.CloseIdleConnections()
	t.apiURL = apiURL
	if err := apiChild.waitHealthy(ctx, client, t.apiURL); err != nil {
		_ = t.stop()
		return nil, err
	}
	if t.token, err = apiclient.Sign([]byte(secret), "recall-bench", time.Hour, &apiclient.TokenOptions{Service: true}); err != nil {
		_ = t.stop()
		return nil, err
	}
	t.workerPID, t.apiPID = worker.cmd.Process.Pid, apiChild.cmd.Process.Pid
	return t, nil
}

// pacedLoad is one window's conversations: convs of them, each taking a
// turn every period, spread evenly so that events arrive at rate.
type pacedLoad struct {
	prefix       string
	rate         float64
	period       time.Duration
	convs, users int
	hist         []json.RawMessage
	chains       []checkpoint.Digest
}

// snapshotEvery is how often a conversation sends its whole history rather
// than an append event: agents resend it after a restart or an edit.
const snapshotEvery = 4

func (e *env) pacedLoad(prefix string, rate float64, window time.Duration) (*pacedLoad, error) {
	l := &pacedLoad{prefix: prefix, rate: rate, period: e.sz.pacedPeriod}
	l.convs = max(1, int(rate*l.period.Seconds()+0.5))
	l.users = max(1, l.convs/10)
	turns := int(window/l.period) + 2
	l.hist = history(turnLength(turns))
	var err error
	l.chains, err = chains(l.hist)
	return l, err
}

// event returns the j-th event of the load (0-based, in order of its
// scheduled time): the conversation, the turn and the event's bytes.
func (l *pacedLoad) event(id string, j int) (userID, conversationID string, turn int, data []byte) {
	i, k := j%l.convs, j/l.convs
	userID, conversationID = fmt.Sprintf("%s-u%d", l.prefix, i%l.users), fmt.Sprintf("c%d", i/l.users)
	turn = min(k+1, (len(l.hist)+1)/2)
	end := turnLength(turn)
	if turn%snapshotEvery == 1 {
		return userID, conversationID, turn, encodeEvent(id, userID, conversationID, 0, nil, l.hist[:end])
	}
	offset := turnLength(turn - 1)
	return userID, conversationID, turn, encodeEvent(id, userID, conversationID, offset, &l.chains[offset], l.hist[offset:end])
}

// backlogSample is the events and extraction jobs waiting at one moment.
type backlogSample struct {
	at    time.Duration
	count int
}

// windowResult is one window of paced load.
type windowResult struct {
	rate     float64 // achieved: events over the time they took to publish
	events   int
	bounded  bool
	aborted  bool // stopped early: the backlog grew past any bound
	maxLate  int  // the largest backlog in the window's second half
	backlogs []backlogSample
}

// backlog counts the events the worker has not acknowledged (waiting in the
// stream or being handled) and the extraction jobs not yet finished.
func (e *env) backlog(ctx context.Context, c jetstream.Consumer) (int, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the worker's consumer: %w", err)
	}
	var jobs int
	// By state and queue, the leading columns of River's fetching index.
	err = e.pool.QueryRow(ctx, `SELECT count(*) FROM river_job
WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending') AND queue = $1`, store.ExtractQueue).Scan(&jobs)
	if err != nil {
		return 0, fmt.Errorf("count extraction jobs: %w", err)
	}
	return int(info.NumPending) + info.NumAckPending + jobs, nil
}

// boundOf is the backlog a window's second half may reach at rate and still
// count as bounded: one second of arrivals.
func boundOf(rate float64) int { return int(rate) + 50 }

// runWindow publishes l's events on schedule for d and watches the backlog.
// With probe set, each event's lag to readable is measured. A window whose
// backlog passes three seconds of arrivals stops early, unbounded.
func (e *env) runWindow(ctx context.Context, t *pacedTarget, l *pacedLoad, d time.Duration, probe *lagProbe) (windowResult, error) {
	var wr windowResult
	cons, err := e.js.Consumer(ctx, t.stream, t.durable)
	if err != nil {
		return wr, fmt.Errorf("find the worker's consumer: %w", err)
	}
	var (
		mu      sync.Mutex
		abort   atomic.Bool
		monErr  error
		stopMon = make(chan struct{})
		monDone = make(chan struct{})
	)
	start := time.Now()
	go func() {
		defer close(monDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopMon:
				return
			case <-tick.C:
			}
			n, err := e.backlog(ctx, cons)
			mu.Lock()
			if err != nil {
				monErr = err
				mu.Unlock()
				abort.Store(true)
				return
			}
			at := time.Since(start)
			wr.backlogs = append(wr.backlogs, backlogSample{at: at, count: n})
			mu.Unlock()
			if at > d/4 && n > 3*boundOf(l.rate) {
				abort.Store(true)
			}
		}
	}()
	pub := &asyncPublisher{js: e.js, subject: t.subject}
	interval := float64(time.Second) / l.rate
	total := int(d.Seconds() * l.rate)
	for j := range total {
		if abort.Load() {
			wr.aborted = true
			break
		}
		at := start.Add(time.Duration(float64(j) * interval))
		if w := time.Until(at); w > 0 {
			time.Sleep(w)
		}
		id := e.ids.next()
		u, c, turn, data := l.event(id, j)
		t0 := time.Now()
		if err := pub.publishStall(id, data); err != nil {
			close(stopMon)
			<-monDone
			return wr, err
		}
		wr.events++
		if probe != nil && turn > 1 {
			probe.watch(evidenceURL(t.apiURL, u, c), finalCursor(turn), t0)
		}
	}
	wr.rate = float64(wr.events) / time.Since(start).Seconds()
	perr := pub.wait(ctx)
	close(stopMon)
	<-monDone
	if err := errors.Join(perr, monErr); err != nil {
		return wr, err
	}
	for _, s := range wr.backlogs {
		if s.at >= d/2 {
			wr.maxLate = max(wr.maxLate, s.count)
		}
	}
	wr.bounded = !wr.aborted && wr.maxLate <= boundOf(l.rate)
	return wr, nil
}

// drain waits until the backlog is empty.
func (e *env) drain(ctx context.Context, t *pacedTarget) error {
	cons, err := e.js.Consumer(ctx, t.stream, t.durable)
	if err != nil {
		return fmt.Errorf("find the worker's consumer: %w", err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		n, err := e.backlog(ctx, cons)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the backlog still holds %d events and jobs 5m after the window", n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// lagProbe measures publish→readable with a bounded number of long-polls:
// pollers goroutines, each holding at most one connection, take the events
// to watch in order. When every poller is busy the events queue, and their
// lag includes the wait, as it would for a reader.
type lagProbe struct {
	client *http.Client
	token  string
	queue  chan probeReq
	wg     sync.WaitGroup

	mu       sync.Mutex
	lags     []time.Duration
	timeouts int
	dropped  int
	err      error
}

type probeReq struct {
	url  string
	want int
	t0   time.Time
}

func newLagProbe(ctx context.Context, token string, pollers int) *lagProbe {
	p := &lagProbe{token: token, queue: make(chan probeReq, 1<<16),
		client: &http.Client{Transport: &http.Transport{MaxConnsPerHost: pollers, MaxIdleConnsPerHost: pollers, IdleConnTimeout: time.Minute}}}
	for range pollers {
		p.wg.Go(func() {
			for r := range p.queue {
				lag, ok, err := waitReadable(ctx, p.client, r.url, p.token, r.want, r.t0)
				p.mu.Lock()
				if err != nil && p.err == nil {
					p.err = err
				}
				p.lags = append(p.lags, lag)
				if !ok {
					p.timeouts++
				}
				p.mu.Unlock()
			}
		})
	}
	return p
}

// watch queues an event to watch; one that finds the queue full is counted
// as dropped rather than held up.
func (p *lagProbe) watch(url string, want int, t0 time.Time) {
	select {
	case p.queue <- probeReq{url: url, want: want, t0: t0}:
	default:
		p.mu.Lock()
		p.dropped++
		p.mu.Unlock()
	}
}

// finish waits for every watched event and returns the lags, sorted.
func (p *lagProbe) finish() ([]time.Duration, error) {
	close(p.queue)
	p.wg.Wait()
	p.client.CloseIdleConnections()
	slices.Sort(p.lags)
	return p.lags, p.err
}
