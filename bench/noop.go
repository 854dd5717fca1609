package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/jobs"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// noopArgs is the baseline's job: it does nothing.
type noopArgs struct {
	Seq int64 `json:"seq"`
}

const noopQueue = "recall_bench_noop"

func (noopArgs) Kind() string { return "recall_bench_noop" }

func (noopArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: noopQueue} }

// noopRiver is the baseline of scenario 1: a River client with the fetch
// settings of recall's, working no-op jobs.
type noopRiver struct {
	e         *env
	client    *river.Client[pgx.Tx]
	events    <-chan *river.Event
	cancelSub func()
}

func (e *env) startNoop(ctx context.Context) (*noopRiver, error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(context.Context, *river.Job[noopArgs]) error { return nil }))
	client, err := river.NewClient(riverpgxv5.New(e.pool), &river.Config{
		Logger:  e.logger,
		Workers: workers,
		Queues:  map[string]river.QueueConfig{noopQueue: {MaxWorkers: e.cfg.Concurrency}},
		// recall's fetch settings, so that both wait for jobs alike.
		FetchCooldown:     jobs.FetchCooldown,
		FetchPollInterval: jobs.FetchPollInterval,
	})
	if err != nil {
		return nil, err
	}
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: 100_000})
	if err := client.Start(ctx); err != nil {
		cancel()
		return nil, err
	}
	return &noopRiver{e: e, client: client, events: events, cancelSub: cancel}, nil
}

func (n *noopRiver) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n.cancelSub()
	_ = n.client.Stop(ctx)
}

// run inserts total no-op jobs from goroutines goroutines, each in its own
// transaction with InsertTx, and returns completed jobs per second.
func (n *noopRiver) run(ctx context.Context, total, goroutines int) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	start := time.Now()
	for range goroutines {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(total); i = next.Add(1) {
				err := pgx.BeginFunc(ctx, n.e.pool, func(tx pgx.Tx) error {
					_, err := n.client.InsertTx(ctx, tx, noopArgs{Seq: i}, nil)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	done := 0
	timeout := time.After(5 * time.Minute)
	for done < total {
		select {
		case ev := <-n.events:
			if ev != nil && ev.Job != nil && ev.Job.Kind == (noopArgs{}).Kind() {
				done++
			}
		case err := <-errs:
			wg.Wait()
			return 0, fmt.Errorf("baseline insert: %w", err)
		case <-timeout:
			return 0, fmt.Errorf("baseline: %d of %d jobs completed after 5m", done, total)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	elapsed := time.Since(start)
	wg.Wait()
	return float64(total) / elapsed.Seconds(), nil
}
