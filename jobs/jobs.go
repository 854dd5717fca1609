// Package jobs is recall's River adapter: the extraction job that folds a
// conversation's held messages into its evidence, completed in the same
// transaction that writes the state; the model lane's notes job
// (notes.go); and the River client that runs them.
package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/trace"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/store"
)

// ExtractWorker runs extraction jobs.
type ExtractWorker struct {
	river.WorkerDefaults[store.ExtractArgs]
	pool    *pgxpool.Pool
	store   *store.Store
	waker   Waker
	metrics *metrics.Metrics
	logger  *slog.Logger
	tracer  trace.Tracer
}

// Waker tells the read API's waiting requests that a conversation's state
// changed, after the change has committed; *wake.Publisher implements it.
type Waker interface {
	Wake(ctx context.Context, userID, conversationID string, cursor int)
}

// Work folds the conversation's held messages into its evidence and
// completes the job in the same transaction; once that has committed, it
// wakes the requests waiting for the new state.
func (w *ExtractWorker) Work(ctx context.Context, job *river.Job[store.ExtractArgs]) error {
	start := time.Now()
	ctx, span := w.tracer.Start(ctx, SpanExtract)
	var res store.ExtractResult
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		var err error
		if res, err = w.store.ExtractTx(ctx, tx, job.Args.UserID, job.Args.ConversationID); err != nil {
			return err
		}
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	endExtract(span, res, err)
	if w.metrics != nil {
		w.metrics.ExtractionSeconds.Observe(time.Since(start).Seconds())
	}
	if err != nil {
		if w.metrics != nil {
			w.metrics.Extractions.WithLabelValues("error").Inc()
		}
		w.logger.WarnContext(ctx, "extraction failed; River retries it", slog.Int64("job_id", job.ID), slog.Int("attempt", job.Attempt), slog.String("error", err.Error()))
		return err
	}
	if res.Outcome == checkpoint.Applied && w.waker != nil {
		w.waker.Wake(ctx, job.Args.UserID, job.Args.ConversationID, res.Cursor)
	}
	if w.metrics != nil {
		w.metrics.Extractions.WithLabelValues(res.Outcome.String()).Inc()
		if res.Outcome == checkpoint.Applied {
			w.metrics.SummarisedMessages.Add(float64(res.Summarised))
			if !res.PublishedAt.IsZero() {
				w.metrics.StateLagSeconds.Observe(time.Since(res.PublishedAt).Seconds())
			}
		}
	}
	return nil
}

// The defaults of Config, and the fetch settings of every River client
// recall builds (the bench's baseline uses them too).
const (
	// DefaultWorkers bounds the extraction jobs one process runs at once.
	DefaultWorkers = 16
	// DefaultJobTimeout bounds one extraction.
	DefaultJobTimeout = 30 * time.Second
	// DefaultRescueStuckJobsAfter is how long a job may stay running before
	// River retries it.
	DefaultRescueStuckJobsAfter = 45 * time.Second
	// DefaultSweepInterval is how often the sweep runs.
	DefaultSweepInterval = 5 * time.Second
	// DefaultSweepAfter is how old a request must be for the sweep to
	// enqueue it again: the store's coalescing window, since a request
	// younger than that still absorbs later events.
	DefaultSweepAfter = store.DefaultCoalesceWindow
	// DefaultCompletedJobRetention is how long River keeps completed jobs.
	DefaultCompletedJobRetention = 5 * time.Minute
	// DefaultRejectionRetention is how long rejections and tombstones are
	// kept: 30 days, longer than the stream keeps an unconsumed event.
	DefaultRejectionRetention = 720 * time.Hour
	// DefaultPruneInterval is how often the prune runs.
	DefaultPruneInterval = time.Hour

	// FetchCooldown is River's FetchCooldown for recall's clients. River
	// sends at most one insert notification per FetchCooldown: a job
	// inserted within 20ms of a notified one, whose transaction commits
	// after the fetch that notification caused, waits for the next
	// notification or the poll below. The inserting client applies it,
	// so the insert-only client carries it too.
	FetchCooldown = 20 * time.Millisecond
	// FetchPollInterval is River's FetchPollInterval for recall's clients.
	// Events arriving together and then a pause (agents finishing turns at
	// once) hit the case above, so the poll bounds the lag's tail; 10
	// cheap queries a second idle.
	FetchPollInterval = 100 * time.Millisecond
)

// Config configures the River client.
type Config struct {
	// Workers bounds the extraction jobs run at once. Defaults to
	// DefaultWorkers (16).
	Workers int
	// JobTimeout bounds one extraction. Defaults to DefaultJobTimeout (30s).
	JobTimeout time.Duration
	// RescueStuckJobsAfter is how long a job may stay running (for instance
	// with a worker that was killed) before River retries it. Defaults to
	// DefaultRescueStuckJobsAfter (45s).
	RescueStuckJobsAfter time.Duration
	// SweepInterval is how often the River leader sweeps for extractions
	// that were requested but never started (see store.Sweep). Defaults to
	// DefaultSweepInterval (5s).
	SweepInterval time.Duration
	// SweepAfter is how old such a request must be. Defaults to
	// DefaultSweepAfter (10s, the store's coalescing window).
	SweepAfter time.Duration
	// CompletedJobRetention is how long River keeps completed jobs; they
	// carry nothing but a conversation key, and a large job table slows
	// every completion. Defaults to DefaultCompletedJobRetention (5m).
	CompletedJobRetention time.Duration
	// RejectionRetention is how long rejection rows, and the tombstones of
	// deleted conversations, are kept (RECALL_REJECTION_RETENTION).
	// Defaults to DefaultRejectionRetention (720h, 30 days).
	RejectionRetention time.Duration
	// PruneInterval is how often the River leader removes what is older
	// than RejectionRetention. Defaults to DefaultPruneInterval (1h).
	PruneInterval time.Duration
	// Waker, when set, is told of each extraction that changed a
	// conversation's state, once its transaction has committed, so that
	// requests waiting for the new cursor are answered at once. Defaults
	// to none: waiters find the new state at their next poll.
	Waker Waker
	// Metrics, when set, counts and times extractions. Defaults to none.
	Metrics *metrics.Metrics
	// TracerProvider, when set, receives the spans of extraction jobs:
	// River's work span (SpanWork), a child of the span that inserted the
	// job, and the extraction's (SpanExtract), under which its SQL runs.
	// Defaults to none: no spans.
	TracerProvider trace.TracerProvider
	// ModelLane, when set, runs the model lane's notes jobs (the store must
	// follow extractions with store.Notes{}, which enqueues them). Defaults
	// to none: the lexical extractor alone.
	ModelLane *ModelLane
	// Logger receives operational logs; never message text. Defaults to
	// discarding.
	Logger *slog.Logger
}

// WithDefaults returns a copy of c (which may be nil) with every zero
// field set to its default.
func (c *Config) WithDefaults() *Config {
	var out Config
	if c != nil {
		out = *c
	}
	out.Workers = cmp.Or(out.Workers, DefaultWorkers)
	out.JobTimeout = cmp.Or(out.JobTimeout, DefaultJobTimeout)
	out.RescueStuckJobsAfter = cmp.Or(out.RescueStuckJobsAfter, DefaultRescueStuckJobsAfter)
	out.SweepInterval = cmp.Or(out.SweepInterval, DefaultSweepInterval)
	out.SweepAfter = cmp.Or(out.SweepAfter, DefaultSweepAfter)
	out.CompletedJobRetention = cmp.Or(out.CompletedJobRetention, DefaultCompletedJobRetention)
	out.RejectionRetention = cmp.Or(out.RejectionRetention, DefaultRejectionRetention)
	out.PruneInterval = cmp.Or(out.PruneInterval, DefaultPruneInterval)
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	if out.ModelLane != nil {
		lane := out.ModelLane.withDefaults()
		out.ModelLane = &lane
		// A running notes job must not look stuck.
		out.RescueStuckJobsAfter = max(out.RescueStuckJobsAfter, lane.Timeout+notesWriteTimeout+DefaultJobTimeout/2)
	}
	return &out
}

// validate reports the first field of a defaulted Config that cannot work,
// saying how to fix it. River checks the fields it is handed as they are
// (JobTimeout -1, say, runs jobs without a timeout).
func (c *Config) validate() error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"SweepInterval", c.SweepInterval}, {"SweepAfter", c.SweepAfter},
		{"RejectionRetention", c.RejectionRetention}, {"PruneInterval", c.PruneInterval},
	} {
		if f.d < 0 {
			return fmt.Errorf("jobs: Config.%s is %s: it must be positive, or 0 for its default", f.name, f.d)
		}
	}
	if c.Workers < 0 {
		return fmt.Errorf("jobs: Config.Workers is %d: it must be positive, or 0 for the default %d", c.Workers, DefaultWorkers)
	}
	if c.ModelLane != nil {
		return c.ModelLane.validate()
	}
	return nil
}

// NewInserter returns an insert-only River client over pool: it works no
// jobs, and is what the store enqueues extraction jobs with (store.Config.Jobs).
// With tp set, each insert of extraction jobs is a span (SpanInsert) whose
// trace context the jobs carry to their work; nil makes no spans.
func NewInserter(pool *pgxpool.Pool, logger *slog.Logger, tp trace.TracerProvider) (*river.Client[pgx.Tx], error) {
	if pool == nil {
		return nil, errors.New("jobs: NewInserter needs a pgx pool")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger:            RiverLogger(logger),
		FetchCooldown:     FetchCooldown,
		FetchPollInterval: FetchPollInterval,
		Middleware:        newTracing(tp),
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: insert-only River client: %w", err)
	}
	return client, nil
}

// NewClient builds the River client that works extraction jobs for st.
func NewClient(pool *pgxpool.Pool, st *store.Store, cfg *Config) (*river.Client[pgx.Tx], error) {
	if pool == nil || st == nil {
		return nil, errors.New("jobs: NewClient needs a pgx pool and a store")
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	rc := &river.Config{
		Logger:                      RiverLogger(c.Logger),
		JobTimeout:                  c.JobTimeout,
		RescueStuckJobsAfter:        c.RescueStuckJobsAfter,
		CompletedJobRetentionPeriod: c.CompletedJobRetention,
		// Extraction is idempotent, so retries may come soon.
		RetryPolicy: &retryPolicy{},
		Middleware:  newTracing(c.TracerProvider),
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &ExtractWorker{pool: pool, store: st, waker: c.Waker, metrics: c.Metrics, logger: c.Logger, tracer: newJobTracer(c.TracerProvider)}); err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &SweepWorker{store: st, after: c.SweepAfter, logger: c.Logger}); err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &PruneWorker{store: st, retention: c.RejectionRetention, logger: c.Logger}); err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	rc.PeriodicJobs = []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(c.SweepInterval),
			func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(c.PruneInterval),
			func() (river.JobArgs, *river.InsertOpts) { return PruneArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true}),
	}
	rc.Queues = map[string]river.QueueConfig{store.ExtractQueue: {MaxWorkers: c.Workers}}
	if l := c.ModelLane; l != nil {
		if err := river.AddWorkerSafely(workers, &NotesWorker{pool: pool, store: st, model: l.Model, cfg: l.noteConfig(), timeout: l.Timeout, backoff: l.Backoff,
			quiet: l.Quiet, maxWait: l.MaxQuietWait,
			metrics: c.Metrics, logger: c.Logger, tracer: newJobTracer(c.TracerProvider)}); err != nil {
			return nil, fmt.Errorf("jobs: %w", err)
		}
		// Insert notifications wake the queue; its poll is only the
		// backstop, and a note may wait a second more where an idle poll a
		// tenth of a second would cost every process ten queries a second.
		rc.Queues[store.NotesQueue] = river.QueueConfig{MaxWorkers: l.Concurrency, FetchPollInterval: notesPollInterval}
	}
	rc.Workers = workers
	rc.FetchCooldown = FetchCooldown
	rc.FetchPollInterval = FetchPollInterval
	client, err := river.NewClient(riverpgxv5.New(pool), rc)
	if err != nil {
		return nil, fmt.Errorf("jobs: River client: %w", err)
	}
	return client, nil
}

// periodic gives a periodic job's args their insert options: one attempt,
// since the next period runs the job again.
type periodic struct{}

// InsertOpts implements river.JobArgsWithInsertOpts.
func (periodic) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: store.ExtractQueue, MaxAttempts: 1}
}

// SweepArgs is the periodic job that heals conversations whose extraction
// job died with a worker.
type SweepArgs struct{ periodic }

// Kind implements river.JobArgs.
func (SweepArgs) Kind() string { return "recall_sweep" }

// SweepWorker runs the sweep.
type SweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	store  *store.Store
	after  time.Duration
	logger *slog.Logger
}

// Work enqueues fresh extractions for stale requests.
func (w *SweepWorker) Work(ctx context.Context, job *river.Job[SweepArgs]) error {
	n, err := w.store.Sweep(ctx, w.after, 1000)
	if err != nil {
		if ctx.Err() != nil {
			// Shutdown: the next period sweeps again.
			return nil
		}
		return err
	}
	if n > 0 {
		w.logger.InfoContext(ctx, "re-enqueued extractions that never started", slog.Int("conversations", n))
	}
	return nil
}

// PruneArgs is the periodic job that removes rejections and tombstones
// older than the retention.
type PruneArgs struct{ periodic }

// Kind implements river.JobArgs.
func (PruneArgs) Kind() string { return "recall_prune" }

// PruneWorker runs the prune.
type PruneWorker struct {
	river.WorkerDefaults[PruneArgs]
	store     *store.Store
	retention time.Duration
	logger    *slog.Logger
}

// pruneBatch bounds the rows one statement of the prune removes.
const pruneBatch = 1000

// Work removes old rows in batches until none is left or ctx ends.
func (w *PruneWorker) Work(ctx context.Context, job *river.Job[PruneArgs]) error {
	total := 0
	for {
		n, err := w.store.Prune(ctx, w.retention, pruneBatch)
		total += n
		if err != nil {
			if ctx.Err() != nil {
				return nil // shutdown or timeout: the next period goes on
			}
			return err
		}
		if n < pruneBatch {
			break
		}
	}
	if total > 0 {
		w.logger.InfoContext(ctx, "pruned rejections and tombstones older than the retention",
			slog.Int("rows", total), slog.Duration("retention", w.retention))
	}
	return nil
}

// retryPolicy retries quickly at first (a Postgres blip), then backs off to
// at most a minute.
type retryPolicy struct{}

func (*retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	d := time.Duration(1<<min(job.Attempt, 6)) * time.Second
	return time.Now().Add(min(d, time.Minute))
}
