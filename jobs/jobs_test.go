package jobs_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/jobs"
	"github.com/recallhq/recall/pipeline"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/testutil/pgtest"
)

// migrated returns a pool on a fresh migrated database.
func migrated(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, _ := pgtest.NewMigratedPool(t, store.Migrate)
	return pool
}

func setup(t *testing.T) (*pgxpool.Pool, *store.Store, *river.Client[pgx.Tx]) {
	t.Helper()
	pool := migrated(t)
	p, err := pipeline.New(pool, nil, &pipeline.Config{
		Jobs: &jobs.Config{Workers: 2, SweepInterval: 100 * time.Millisecond, SweepAfter: 200 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	st, rc := p.Store, p.River
	return pool, st, rc
}

func event(t *testing.T, msgs ...string) *checkpoint.Event {
	t.Helper()
	var raw []json.RawMessage
	for i, text := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		b, _ := json.Marshal(map[string]string{"role": role, "content": text})
		raw = append(raw, b)
	}
	b, _ := json.Marshal(map[string]any{"schema": checkpoint.Schema, "event_id": "e", "user_id": "u", "conversation_id": "c", "messages": raw})
	ev, err := checkpoint.ParseEvent(b, checkpoint.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestExtractJob: ingest enqueues the job in its transaction; working it
// writes the state and completes the job together.
func TestExtractJob(t *testing.T) {
	t.Parallel()
	pool, st, rc := setup(t)
	if _, err := st.Ingest(t.Context(), event(t, "We must ship by Friday.", "ok", "next"), store.Meta{}); err != nil {
		t.Fatal(err)
	}
	job := rivertest.RequireInserted(t.Context(), t, riverpgxv5.New(pool), store.ExtractArgs{UserID: "u", ConversationID: "c"}, &rivertest.RequireInsertedOpts{Queue: store.ExtractQueue})
	if err := rc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Stop(context.Background()) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		row, err := rc.JobGet(t.Context(), job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if row.State == rivertype.JobStateCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job state %s after 10s", row.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rec, err := st.Evidence(t.Context(), "u", "c")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Cursor != 2 || rec.Version != 1 {
		t.Errorf("state cursor %d version %d, want 2 and 1", rec.Cursor, rec.Version)
	}
}

// TestSweepJob: a request whose job vanished (as with a killed worker) is
// healed by the periodic sweep.
func TestSweepJob(t *testing.T) {
	t.Parallel()
	pool, st, rc := setup(t)
	if _, err := st.Ingest(t.Context(), event(t, "We must ship by Friday.", "ok", "next"), store.Meta{}); err != nil {
		t.Fatal(err)
	}
	// Lose the job.
	if _, err := pool.Exec(t.Context(), `DELETE FROM river_job WHERE kind = 'recall_extract'`); err != nil {
		t.Fatal(err)
	}
	if err := rc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Stop(context.Background()) })
	deadline := time.Now().Add(15 * time.Second)
	for {
		rec, err := st.Evidence(t.Context(), "u", "c")
		if err != nil {
			t.Fatal(err)
		}
		if rec.Cursor == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cursor %d 15s after the job was lost, want 2", rec.Cursor)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPruneJob: rejections older than the retention are removed by the
// periodic prune; newer ones stay.
func TestPruneJob(t *testing.T) {
	t.Parallel()
	pool := migrated(t)
	st, err := store.New(pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := st.Reject(t.Context(), store.Rejection{Reason: checkpoint.ReasonMalformed, Detail: "x", Stream: "S", StreamSeq: uint64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(t.Context(), `UPDATE recall_rejection SET received_at = now() - interval '2 hours' WHERE stream_seq <= 2`); err != nil {
		t.Fatal(err)
	}
	rc, err := jobs.NewClient(pool, st, &jobs.Config{Workers: 1, PruneInterval: 100 * time.Millisecond, RejectionRetention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Stop(context.Background()) })
	deadline := time.Now().Add(15 * time.Second)
	for {
		var n int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM recall_rejection`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rejection rows 15s after start, want 1 (the two older than the retention pruned)", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
