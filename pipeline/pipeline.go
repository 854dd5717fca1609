// Package pipeline assembles recall's ingest side in one place: the store,
// which inserts extraction jobs through an insert-only River client in the
// transaction that records an event; the River client that works those jobs
// with the same store; and the JetStream worker that feeds the store. The
// serving commands, the bench and the test helpers all build it here, so
// they run the same wiring.
//
// The arrows run one way: the jobs package calls the store, the store calls
// no one back, and the worker calls the store. With NATS, the worker and
// the jobs wake the read API's waiters through a wake.Publisher once their
// changes have committed.
package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"

	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/jobs"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/wake"
	"github.com/recallhq/recall/worker"
)

// Config configures a Pipeline: one configuration for each part. Logger
// and Metrics are handed to every part whose own is unset.
type Config struct {
	// Store configures the store. Its Jobs is set by New. Defaults to the
	// store's defaults.
	Store *store.Config
	// Jobs configures the River client that works extraction jobs.
	// Defaults to the jobs package's defaults.
	Jobs *jobs.Config
	// Worker configures the JetStream worker. Defaults to the worker
	// package's defaults.
	Worker *worker.Config
	// Model, when set, adds the model lane to the extractor
	// (RECALL_EXTRACTOR=model): the store follows each extraction with a
	// notes job (store.Notes) and the River client works them with this
	// lane. Defaults to none: the lexical extractor alone, exactly as
	// without the lane.
	Model *jobs.ModelLane
	// WakeSubject is the subject the worker and the jobs send wake-ups to
	// (wake.Publisher), when New is given a NATS connection. Defaults to
	// wake.SubjectFor the worker's stream (recall.wake.RECALL_CHECKPOINTS).
	WakeSubject string
	// Metrics, when set, is given to the jobs and the worker. Defaults to
	// none.
	Metrics *metrics.Metrics
	// TracerProvider, when set, is given to the insert-only River client,
	// the jobs and the worker, whose own is unset: a batch's span, its job
	// inserts, the jobs' work and extraction spans. Defaults to none: no
	// spans.
	TracerProvider trace.TracerProvider
	// Logger receives operational logs; never message text. Defaults to
	// discarding.
	Logger *slog.Logger
}

// Pipeline is the ingest side of one recall process.
type Pipeline struct {
	// Store writes through an insert-only River client.
	Store *store.Store
	// River works extraction, sweep and prune jobs with Store.
	River *river.Client[pgx.Tx]
	// Worker consumes checkpoint events into Store; nil when New was given
	// no NATS connection.
	Worker *worker.Worker

	logger *slog.Logger
}

// New builds the pipeline over pool and nc. A nil nc builds it without the
// JetStream worker: events are then ingested through Store directly (the
// jobs package's tests do).
func New(pool *pgxpool.Pool, nc *nats.Conn, cfg *Config) (*Pipeline, error) {
	if pool == nil {
		return nil, errors.New("pipeline: New needs a pgx pool")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{logger: c.Logger}

	inserter, err := jobs.NewInserter(pool, c.Logger, c.TracerProvider)
	if err != nil {
		return nil, err
	}
	var sc store.Config
	if c.Store != nil {
		sc = *c.Store
	}
	sc.Jobs = inserter
	if c.Model != nil {
		sc.Follower = store.Notes{}
	}
	if sc.Logger == nil {
		sc.Logger = c.Logger
	}
	if p.Store, err = store.New(pool, &sc); err != nil {
		return nil, err
	}

	var wc worker.Config
	if c.Worker != nil {
		wc = *c.Worker
	}
	var waker *wake.Publisher
	if nc != nil {
		subject := cmp.Or(c.WakeSubject, wake.SubjectFor(wc.WithDefaults().Stream))
		if waker, err = wake.NewPublisher(nc, subject, c.Logger); err != nil {
			return nil, err
		}
	}

	var jc jobs.Config
	if c.Jobs != nil {
		jc = *c.Jobs
	}
	if jc.Waker == nil && waker != nil {
		jc.Waker = waker
	}
	if jc.Logger == nil {
		jc.Logger = c.Logger
	}
	if jc.Metrics == nil {
		jc.Metrics = c.Metrics
	}
	if jc.TracerProvider == nil {
		jc.TracerProvider = c.TracerProvider
	}
	if c.Model != nil {
		jc.ModelLane = c.Model
	}
	if p.River, err = jobs.NewClient(pool, p.Store, &jc); err != nil {
		return nil, err
	}

	if nc == nil {
		return p, nil
	}
	if wc.Waker == nil {
		wc.Waker = waker
	}
	if wc.Logger == nil {
		wc.Logger = c.Logger
	}
	if wc.Metrics == nil {
		wc.Metrics = c.Metrics
	}
	if wc.TracerProvider == nil {
		wc.TracerProvider = c.TracerProvider
	}
	if p.Worker, err = worker.New(nc, p.Store, &wc); err != nil {
		return nil, err
	}
	return p, nil
}

// Start starts River, then the worker. On error it stops what it started.
func (p *Pipeline) Start(ctx context.Context) error {
	if err := p.River.Start(ctx); err != nil {
		return fmt.Errorf("start River: %w", err)
	}
	if p.Worker == nil {
		return nil
	}
	if err := p.Worker.Start(ctx); err != nil {
		_ = p.River.Stop(ctx)
		return err
	}
	return nil
}

// Stop drains the pipeline within ctx: the worker stops taking events and
// finishes (and acknowledges) those in flight while running jobs finish;
// jobs still running when ctx ends are cancelled, and River retries them
// later.
func (p *Pipeline) Stop(ctx context.Context) error {
	var wg sync.WaitGroup
	var werr, rerr error
	if p.Worker != nil {
		wg.Go(func() {
			if werr = p.Worker.Stop(ctx); werr != nil {
				p.logger.Warn("worker drain", slog.String("error", werr.Error()))
			}
		})
	}
	wg.Go(func() {
		if rerr = p.River.Stop(ctx); rerr != nil {
			p.logger.Warn("jobs did not finish in time; cancelling them (River retries them later)", slog.String("error", rerr.Error()))
			hard, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = p.River.StopAndCancel(hard)
		}
	})
	wg.Wait()
	return errors.Join(werr, rerr)
}
