package jobs_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/jobs"
	"github.com/recallhq/recall/store"
)

// TestCountJobs checks that the extraction queue's gauge counts River's
// extraction jobs by state, leaves other queues' jobs out, and falls back
// to zero for a state that no longer has jobs.
func TestCountJobs(t *testing.T) {
	t.Parallel()
	pool := migrated(t)
	insert := func(queue, state string, n int) {
		t.Helper()
		_, err := pool.Exec(t.Context(), `
INSERT INTO river_job (kind, queue, state, args, max_attempts, attempted_at, finalized_at)
SELECT 'recall_extract', $1, $2::river_job_state, '{}', 1,
       CASE WHEN $2 = 'running' THEN now() END, CASE WHEN $2 = 'discarded' THEN now() END
FROM generate_series(1, $3)`, queue, state, n)
		if err != nil {
			t.Fatal(err)
		}
	}
	insert(store.ExtractQueue, "available", 3)
	insert(store.ExtractQueue, "running", 2)
	insert(store.ExtractQueue, "discarded", 1)
	insert("other", "available", 5)
	m := metrics.New()
	m.ExtractionJobs.WithLabelValues("retryable").Set(7) // a count from before
	if err := jobs.CountJobs(t.Context(), pool, m); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"available": 3, "scheduled": 0, "running": 2, "retryable": 0, "discarded": 1}
	for state, n := range want {
		var d dto.Metric
		if err := m.ExtractionJobs.WithLabelValues(state).Write(&d); err != nil {
			t.Fatal(err)
		}
		if got := d.GetGauge().GetValue(); got != n {
			t.Errorf("recall_extraction_jobs{state=%q} = %v, want %v", state, got, n)
		}
	}
}
