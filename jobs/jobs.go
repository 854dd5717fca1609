// Package jobs is recall's River adapter: the extraction job that folds a
// conversation's held messages into its evidence, completed in the same
// transaction that writes the state, and the River client that runs it.
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

	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/store"
)

// Queue is the River queue extraction jobs run on.
const Queue = "recall_extract"

// ExtractArgs names the conversation to extract. It carries the key only:
// the job reads the newest history recall holds, so one job serves every
// event committed before it takes the conversation's lock.
type ExtractArgs struct {
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
}

// Kind implements river.JobArgs.
func (ExtractArgs) Kind() string { return "recall_extract" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (ExtractArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 25}
}

// ExtractWorker runs extraction jobs.
type ExtractWorker struct {
	river.WorkerDefaults[ExtractArgs]
	store   *store.Store
	metrics *metrics.Metrics
	logger  *slog.Logger
}

// Work folds the conversation's held messages into its evidence and
// completes the job in the same transaction.
func (w *ExtractWorker) Work(ctx context.Context, job *river.Job[ExtractArgs]) error {
	start := time.Now()
	res, err := w.store.Extract(ctx, job.Args.UserID, job.Args.ConversationID, func(ctx context.Context, tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
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
	if w.metrics != nil {
		w.metrics.Extractions.WithLabelValues(res.Outcome.String()).Inc()
		if res.Outcome == evidence.Applied {
			w.metrics.SummarisedMessages.Add(float64(res.Summarised))
			if !res.PublishedAt.IsZero() {
				w.metrics.StateLagSeconds.Observe(time.Since(res.PublishedAt).Seconds())
			}
		}
	}
	return nil
}

// Config configures the River client.
type Config struct {
	// Workers bounds the extraction jobs run at once. Defaults to 16.
	Workers int
	// JobTimeout bounds one extraction. Defaults to 30s.
	JobTimeout time.Duration
	// RescueStuckJobsAfter is how long a job may stay running (for instance
	// with a worker that was killed) before River retries it. Defaults to
	// 45s.
	RescueStuckJobsAfter time.Duration
	// SweepInterval is how often the River leader sweeps for extractions
	// that were requested but never started (see store.Sweep). Defaults to
	// 5s.
	SweepInterval time.Duration
	// SweepAfter is how old such a request must be. Defaults to 10s.
	SweepAfter time.Duration
	// CompletedJobRetention is how long River keeps completed jobs; they
	// carry nothing but a conversation key, and a large job table slows
	// every completion. Defaults to 5m.
	CompletedJobRetention time.Duration
	// RejectionRetention is how long rejection rows, and the tombstones of
	// deleted conversations, are kept (RECALL_REJECTION_RETENTION).
	// Defaults to 720h (30 days).
	RejectionRetention time.Duration
	// PruneInterval is how often the River leader removes what is older
	// than RejectionRetention. Defaults to 1h.
	PruneInterval time.Duration
	Metrics       *metrics.Metrics
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// NewClient builds the River client that works extraction jobs for st.
func NewClient(pool *pgxpool.Pool, st *store.Store, cfg *Config) (*river.Client[pgx.Tx], error) {
	if pool == nil || st == nil {
		return nil, errors.New("jobs: a pool and a store are required")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	c.Workers = cmp.Or(c.Workers, 16)
	c.JobTimeout = cmp.Or(c.JobTimeout, 30*time.Second)
	c.RescueStuckJobsAfter = cmp.Or(c.RescueStuckJobsAfter, 45*time.Second)
	c.SweepInterval = cmp.Or(c.SweepInterval, 5*time.Second)
	c.SweepAfter = cmp.Or(c.SweepAfter, 10*time.Second)
	c.CompletedJobRetention = cmp.Or(c.CompletedJobRetention, 5*time.Minute)
	c.RejectionRetention = cmp.Or(c.RejectionRetention, DefaultRejectionRetention)
	c.PruneInterval = cmp.Or(c.PruneInterval, time.Hour)
	if c.RejectionRetention < 0 || c.PruneInterval < 0 {
		return nil, errors.New("jobs: RejectionRetention and PruneInterval must be positive, or 0 for their defaults")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	rc := &river.Config{
		Logger:                      RiverLogger(c.Logger),
		JobTimeout:                  c.JobTimeout,
		RescueStuckJobsAfter:        c.RescueStuckJobsAfter,
		CompletedJobRetentionPeriod: c.CompletedJobRetention,
		// Extraction is idempotent, so retries may come soon.
		RetryPolicy: &retryPolicy{},
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &ExtractWorker{store: st, metrics: c.Metrics, logger: c.Logger}); err != nil {
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
	rc.Workers = workers
	rc.Queues = map[string]river.QueueConfig{Queue: {MaxWorkers: c.Workers}}
	rc.FetchCooldown = 20 * time.Millisecond
	// River sends at most one insert notification per FetchCooldown:
	// a job inserted within 20ms of a notified one, whose transaction
	// commits after the fetch that notification caused, waits for
	// the next notification or this poll. Events arriving together
	// and then a pause (agents finishing turns at once) hit that, so
	// the poll bounds the lag's tail; 10 cheap queries a second idle.
	rc.FetchPollInterval = 100 * time.Millisecond
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
	return river.InsertOpts{Queue: Queue, MaxAttempts: 1}
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

// DefaultRejectionRetention is how long rejections and tombstones are kept
// by default: 30 days, longer than the stream keeps an unconsumed event.
const DefaultRejectionRetention = 720 * time.Hour

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

// Enqueuer returns the store.Enqueuer that inserts extraction jobs with
// client, inside the ingest transaction.
func Enqueuer(client *river.Client[pgx.Tx]) store.Enqueuer {
	return func(ctx context.Context, tx pgx.Tx, userID, conversationID string) error {
		_, err := client.InsertTx(ctx, tx, ExtractArgs{UserID: userID, ConversationID: conversationID}, nil)
		return err
	}
}

// retryPolicy retries quickly at first (a Postgres blip), then backs off to
// at most a minute.
type retryPolicy struct{}

func (*retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	d := time.Duration(1<<min(job.Attempt, 6)) * time.Second
	return time.Now().Add(min(d, time.Minute))
}
