package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/store"
)

// Querier is what WatchQueue reads River's jobs with: a pgxpool.Pool.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// QueueInterval is how often WatchQueue counts the extraction jobs.
const QueueInterval = 15 * time.Second

// WatchQueue counts River's extraction jobs by state into
// m.ExtractionJobs now and every interval until the returned stop is called
// (stop waits for the count under way): the queue's depth and the jobs River
// discarded, which no job middleware sees. A count that fails is logged and
// tried again at the next interval.
func WatchQueue(db Querier, m *metrics.Metrics, interval time.Duration, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if err := CountJobs(ctx, db, m); err != nil && ctx.Err() == nil {
				logger.WarnContext(ctx, "count extraction jobs", slog.String("error", err.Error()))
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// CountJobs counts River's extraction jobs by state into m.ExtractionJobs
// once. The count reads River's index on its jobs' state.
func CountJobs(ctx context.Context, db Querier, m *metrics.Metrics) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rows, err := db.Query(ctx, `SELECT state::text, count(*) FROM river_job
WHERE queue = $1 AND state = ANY($2::river_job_state[]) GROUP BY state`, store.ExtractQueue, metrics.JobStates)
	if err != nil {
		return err
	}
	counts := make(map[string]int64, len(metrics.JobStates))
	for rows.Next() {
		var state string
		var n int64
		if err := rows.Scan(&state, &n); err != nil {
			rows.Close()
			return err
		}
		counts[state] = n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, st := range metrics.JobStates {
		m.ExtractionJobs.WithLabelValues(st).Set(float64(counts[st]))
	}
	return nil
}
