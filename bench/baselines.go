package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// Scenario 1's honest baselines: what River and Postgres do on this
// machine when nothing of recall's holds them back.

// River at its best works the no-op jobs of noopArgs in a queue of its
// own.
const bestQueue = "recall_bench_best"

// riverSetting is one way of running River for the baseline.
type riverSetting struct {
	workers  int
	cooldown time.Duration // 0: River's default
}

func (s riverSetting) String() string {
	cd := "default FetchCooldown"
	if s.cooldown > 0 {
		cd = fmt.Sprintf("FetchCooldown %v", s.cooldown)
	}
	return fmt.Sprintf("%d workers, %s", s.workers, cd)
}

// riverSettings are the settings tried; the baseline is the best of them.
// River's defaults (FetchCooldown 100ms) with many workers is what its own
// benchmarks run; a shorter cooldown fetches more often.
var riverSettings = []riverSetting{
	{workers: 100},
	{workers: 1000},
	{workers: 1000, cooldown: 10 * time.Millisecond},
}

// bestBatch is how many jobs one InsertMany carries.
const bestBatch = 1000

// riverBest runs total no-op jobs with each of riverSettings, inserted in
// batches of bestBatch from one goroutine while the client works them, and
// returns the best jobs per second and the setting that gave it.
func (e *env) riverBest(ctx context.Context, total int) (float64, riverSetting, error) {
	var best float64
	var at riverSetting
	for _, s := range riverSettings {
		rate, err := e.riverRun(ctx, s, total)
		if err != nil {
			//lint:ignore ST1005 begins with a proper noun (River), which ST1005 allows but cannot tell from a capitalized word
			return 0, at, fmt.Errorf("River at its best (%v): %w", s, err)
		}
		if rate > best {
			best, at = rate, s
		}
	}
	if _, err := e.pool.Exec(ctx, `DELETE FROM river_job WHERE queue = $1`, bestQueue); err != nil {
		return 0, at, fmt.Errorf("delete the baseline's jobs: %w", err)
	}
	return best, at, nil
}

func (e *env) riverRun(ctx context.Context, s riverSetting, total int) (float64, error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(context.Context, *river.Job[noopArgs]) error { return nil }))
	client, err := river.NewClient(riverpgxv5.New(e.pool), &river.Config{
		Logger:        e.logger,
		Workers:       workers,
		Queues:        map[string]river.QueueConfig{bestQueue: {MaxWorkers: s.workers}},
		FetchCooldown: s.cooldown,
	})
	if err != nil {
		return 0, err
	}
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: total + 1000})
	defer cancel()
	if err := client.Start(ctx); err != nil {
		return 0, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	}()

	errs := make(chan error, 1)
	start := time.Now()
	go func() {
		for lo := 0; lo < total; lo += bestBatch {
			params := make([]river.InsertManyParams, 0, bestBatch)
			for i := lo; i < min(lo+bestBatch, total); i++ {
				params = append(params, river.InsertManyParams{Args: noopArgs{Seq: int64(i)}, InsertOpts: &river.InsertOpts{Queue: bestQueue}})
			}
			if _, err := client.InsertMany(ctx, params); err != nil {
				errs <- err
				return
			}
		}
	}()
	done := 0
	timeout := time.After(5 * time.Minute)
	for done < total {
		select {
		case ev := <-events:
			if ev != nil && ev.Job != nil && ev.Job.Queue == bestQueue {
				done++
			}
		case err := <-errs:
			return 0, fmt.Errorf("insert: %w", err)
		case <-timeout:
			return 0, fmt.Errorf("%d of %d jobs completed after 5m", done, total)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return float64(total) / time.Since(start).Seconds(), nil
}

// commitLimit returns how many single-row insert transactions per second
// n goroutines commit through pgx on the benchmark's server in d: what
// pgbench measures, the ceiling of anything that commits once per event.
func (e *env) commitLimit(ctx context.Context, n int, d time.Duration) (float64, error) {
	if _, err := e.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS recall_bench_commit (id bigserial PRIMARY KEY, payload text NOT NULL)`); err != nil {
		return 0, fmt.Errorf("commit limit: %w", err)
	}
	var count atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	deadline := time.Now().Add(d)
	start := time.Now()
	for range n {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if _, err := e.pool.Exec(ctx, `INSERT INTO recall_bench_commit (payload) VALUES ($1)`, "x"); err != nil {
					errs <- err
					return
				}
				count.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, fmt.Errorf("commit limit: %w", err)
	}
	if _, err := e.pool.Exec(ctx, `DROP TABLE recall_bench_commit`); err != nil {
		return 0, fmt.Errorf("commit limit: %w", err)
	}
	return float64(count.Load()) / elapsed.Seconds(), nil
}
