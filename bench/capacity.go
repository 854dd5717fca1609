package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/recallhq/recall/store"
)

// PacedStep is one window of the capacity search.
type PacedStep struct {
	Rate       float64 `json:"rate"`
	Events     int     `json:"events"`
	Bounded    bool    `json:"bounded"`
	MaxBacklog int     `json:"max_backlog_second_half"`
	Aborted    bool    `json:"aborted,omitempty"`
}

// pacedScenario measures the paced load: the capacity (a search over
// rates), the lag at half and at 80% of it, and the cost of an event at
// half of it beside River's no-op job at the same rate.
func (e *env) pacedScenario(ctx context.Context, res *Result) error {
	t, err := e.startPacedTarget(ctx)
	if err != nil {
		return err
	}
	defer t.stop()
	res.PacedMethod = PacedMethod
	if t.inProcess {
		res.PacedMethod = pacedInProcess
	}
	res.PacedPeriodS, res.PacedWindowS = e.sz.pacedPeriod.Seconds(), e.sz.pacedWindow.Seconds()
	window := e.sz.pacedWindow
	n := 0
	step := func(rate float64, d time.Duration, probe *lagProbe) (windowResult, error) {
		n++
		l, err := e.pacedLoad(fmt.Sprintf("paced%d", n), rate, d)
		if err != nil {
			return windowResult{}, err
		}
		wr, err := e.runWindow(ctx, t, l, d, probe)
		if err != nil {
			return wr, err
		}
		return wr, e.drain(ctx, t)
	}

	// The search: up by half while the backlog stays bounded, then halve
	// the interval between the best bounded rate and the first unbounded.
	good, bad := e.cfg.Capacity, 0.0
	rate := e.sz.pacedStart
	for range e.sz.pacedSteps {
		if e.cfg.Capacity > 0 {
			break // given
		}
		wr, err := step(rate, window, nil)
		if err != nil {
			return err
		}
		res.PacedSteps = append(res.PacedSteps, PacedStep{Rate: wr.rate, Events: wr.events, Bounded: wr.bounded, MaxBacklog: wr.maxLate, Aborted: wr.aborted})
		e.progress("paced: %.0f events/s over %v (%d conversations, a turn each every %v): backlog in the second half up to %d, bounded %v",
			wr.rate, window, max(1, int(rate*e.sz.pacedPeriod.Seconds()+0.5)), e.sz.pacedPeriod, wr.maxLate, wr.bounded)
		if wr.bounded {
			good = max(good, rate)
		} else if bad == 0 || rate < bad {
			bad = rate
		}
		switch {
		case bad == 0:
			rate *= 1.5
		case good == 0:
			rate /= 2
		default:
			rate = (good + bad) / 2
		}
		if good > 0 && bad > 0 && (bad-good)/good < 0.08 {
			break
		}
	}
	if good == 0 {
		return fmt.Errorf("no rate tried kept the backlog bounded (lowest %.0f events/s)", bad)
	}
	res.CapacityEventsPerS = good
	res.CapacityUpperEventsPerS = bad
	e.progress("paced: capacity %.0f events/s (unbounded at %.0f)", good, bad)

	// The cost of an event at half of capacity, with no readers, so that
	// Postgres's commits are the pipeline's.
	half := good / 2
	m, err := e.startMeter(ctx, t.workerPID)
	if err != nil {
		return err
	}
	e.traceAs(ScenarioPaced + " cost")
	wr, err := step(half, window, nil)
	e.traceAs(ScenarioPaced)
	if err != nil {
		return err
	}
	if e.tracer != nil {
		res.RoundTripsPerEvent = float64(e.tracer.calls(ScenarioPaced+" cost")) / float64(wr.events)
		e.progress("paced cost: %.2f round trips (statements and batches, with BEGIN and COMMIT) per event in this process", res.RoundTripsPerEvent)
	}
	c, err := m.stop(ctx, store.ExtractArgs{}.Kind())
	if err != nil {
		return err
	}
	res.CostRateEventsPerS, res.CostEvents = wr.rate, wr.events
	res.CPUMsPerEventRecall = perEvent(c.procs[0], wr.events)
	res.CPUMsPerEventPostgres = perEvent(c.pg.cpu, wr.events)
	res.CommitsPerEvent = float64(c.pg.commits) / float64(wr.events)
	res.RowsPerEvent = float64(c.pg.rows) / float64(wr.events)
	res.JobsPerEvent = float64(c.jobs) / float64(wr.events)
	e.progress("paced cost at %.0f events/s: recall %.3f ms CPU per event, Postgres %.3f ms; %.2f commits, %.1f rows, %.2f extraction jobs per event",
		wr.rate, res.CPUMsPerEventRecall, res.CPUMsPerEventPostgres, res.CommitsPerEvent, res.RowsPerEvent, res.JobsPerEvent)

	// The lag at half and at 80% of capacity.
	for _, at := range []float64{0.5, 0.8} {
		probe := newLagProbe(ctx, t.token, e.sz.pacedPollers)
		var apiCPU0 = cpuOf(t.apiPID)
		wr, err := step(good*at, window, probe)
		lags, perr := probe.finish()
		if err != nil {
			return err
		}
		if perr != nil {
			return perr
		}
		p50, p99, p999 := ms(percentile(lags, 0.5)), ms(percentile(lags, 0.99)), ms(percentile(lags, 0.999))
		e.progress("paced lag at %.0f%% of capacity (%.0f events/s): p50 %.1f ms, p99 %.1f ms, p999 %.1f ms (%d samples, %d over 15s, %d not watched), backlog up to %d",
			at*100, wr.rate, p50, p99, p999, len(lags), probe.timeouts, probe.dropped, wr.maxLate)
		if at == 0.5 {
			res.LagP50MsAt50, res.LagP99MsAt50, res.LagP999MsAt50 = p50, p99, p999
			res.LagSamplesAt50 = len(lags)
			if !t.inProcess {
				res.CPUMsPerReadAPI = perEvent(cpuOf(t.apiPID)-apiCPU0, len(lags))
			}
		} else {
			res.LagP50MsAt80, res.LagP99MsAt80, res.LagP999MsAt80 = p50, p99, p999
			res.LagSamplesAt80 = len(lags)
		}
	}
	if err := t.stop(); err != nil {
		return err
	}
	return e.riverPaced(ctx, half, window, res)
}

// pacedQueue is the queue of River's no-op jobs at the paced rate.
const pacedQueue = "recall_bench_paced"

// riverPaced is the baseline of the cost: River's no-op job at the same
// rate, on the same schedule, each inserted as it arrives (an arrival does
// not wait for the next, as an event does not), with River's own defaults
// and 100 workers, as its benchmarks run; CPU of this process, which then
// runs only River and the schedule.
func (e *env) riverPaced(ctx context.Context, rate float64, d time.Duration, res *Result) error {
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(context.Context, *river.Job[noopArgs]) error { return nil }))
	client, err := river.NewClient(riverpgxv5.New(e.pool), &river.Config{
		Logger:  e.logger,
		Workers: workers,
		Queues:  map[string]river.QueueConfig{pacedQueue: {MaxWorkers: 100}},
	})
	if err != nil {
		return err
	}
	total := int(d.Seconds() * rate)
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: total + 1000})
	defer cancel()
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	}()
	m, err := e.startMeter(ctx, 0)
	if err != nil {
		return err
	}
	start := time.Now()
	interval := float64(time.Second) / rate
	arrivals := make(chan int, total)
	var wg sync.WaitGroup
	errs := make(chan error, e.cfg.Concurrency)
	for range e.cfg.Concurrency {
		wg.Go(func() {
			for seq := range arrivals {
				if _, err := client.Insert(ctx, noopArgs{Seq: int64(seq)}, &river.InsertOpts{Queue: pacedQueue}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	go func() {
		defer close(arrivals)
		for j := range total {
			if w := time.Until(start.Add(time.Duration(float64(j) * interval))); w > 0 {
				time.Sleep(w)
			}
			arrivals <- j
		}
	}()
	lags := make([]time.Duration, 0, total)
	timeout := time.After(d + 2*time.Minute)
	for len(lags) < total {
		select {
		case ev := <-events:
			if ev == nil || ev.Job == nil || ev.Job.Queue != pacedQueue {
				continue
			}
			var args noopArgs
			if err := json.Unmarshal(ev.Job.EncodedArgs, &args); err != nil {
				return err
			}
			lags = append(lags, time.Since(start.Add(time.Duration(float64(args.Seq)*interval))))
		case err := <-errs:
			return fmt.Errorf("the no-op jobs at the paced rate: %w", err)
		case <-timeout:
			return fmt.Errorf("the no-op jobs at the paced rate: %d of %d completed", len(lags), total)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	wg.Wait()
	c, err := m.stop(ctx, noopArgs{}.Kind())
	if err != nil {
		return err
	}
	slices.Sort(lags)
	res.RiverPacedRate = float64(total) / d.Seconds()
	res.RiverCPUMsPerJob = perEvent(c.procs[0], total)
	res.RiverPostgresCPUMsPerJob = perEvent(c.pg.cpu, total)
	res.RiverCommitsPerJob = float64(c.pg.commits) / float64(total)
	res.RiverPacedLagP50Ms, res.RiverPacedLagP99Ms = ms(percentile(lags, 0.5)), ms(percentile(lags, 0.99))
	e.progress("River's no-op job at %.0f jobs/s: %.3f ms CPU per job, Postgres %.3f ms, %.2f commits per job; scheduled→completed p50 %.1f ms, p99 %.1f ms",
		res.RiverPacedRate, res.RiverCPUMsPerJob, res.RiverPostgresCPUMsPerJob, res.RiverCommitsPerJob, res.RiverPacedLagP50Ms, res.RiverPacedLagP99Ms)
	if _, err := e.pool.Exec(ctx, `DELETE FROM river_job WHERE queue = $1`, pacedQueue); err != nil {
		return fmt.Errorf("delete the baseline's jobs: %w", err)
	}
	return nil
}
