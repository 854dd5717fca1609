package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/testutil/pgtest"
)

// sqlRecorder records every statement a pool sends, batched ones included.
type sqlRecorder struct {
	mu  sync.Mutex
	sql []string
}

func (r *sqlRecorder) add(sql string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sql = append(r.sql, sql)
}

func (r *sqlRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.add(d.SQL)
	return ctx
}

func (r *sqlRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *sqlRecorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (r *sqlRecorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.add(d.SQL)
}

func (r *sqlRecorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestNoTransactionNotifies runs every write of the store that used to
// announce a state change with NOTIFY (an extraction, a deletion by event
// and by request) and ingest beside them, over a pool that records every
// statement it sends, and checks that none notifies: a transaction that
// has called NOTIFY takes a lock for the whole server at its commit and
// holds it through the WAL flush, so that every notifying writer commits
// one at a time. Waiters are woken over NATS (package wake) instead.
func TestNoTransactionNotifies(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	pgtest.MigratedPool(t, dbURL, store.Migrate)
	cfg, err := pgxpool.ParseConfig(dbURL)
	pgtest.Must(t, err, "parse the database URL")
	rec := &sqlRecorder{}
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	pgtest.Must(t, err, "connect")
	t.Cleanup(pool.Close)
	_, err = pool.Exec(t.Context(), `CREATE TABLE test_enqueued (user_id text, conversation_id text)`)
	pgtest.Must(t, err, "create test_enqueued")
	st, err := store.New(pool, &store.Config{Jobs: tableInserter{}})
	pgtest.Must(t, err, "store.New")

	ctx := t.Context()
	h := history(5)
	if _, err := st.Ingest(ctx, snapshot(t, "e1", h[:3]), store.Meta{}); err != nil {
		t.Fatal(err)
	}
	if res, err := st.Extract(ctx, "u", "c"); err != nil || res.Outcome != checkpoint.Applied {
		t.Fatalf("extract: %+v, %v; want applied", res, err)
	}
	del, err := checkpoint.ParseEvent(mustJSON(t, map[string]any{"schema": checkpoint.Schema, "kind": checkpoint.KindDelete,
		"event_id": "e3", "user_id": "u", "conversation_id": "c"}), checkpoint.Limits{})
	pgtest.Must(t, err, "parse the delete event")
	other, err := checkpoint.ParseEvent(mustJSON(t, map[string]any{"schema": checkpoint.Schema, "event_id": "e2",
		"user_id": "u", "conversation_id": "other", "messages": h}), checkpoint.Limits{})
	pgtest.Must(t, err, "parse the other event")
	results, err := st.IngestBatch(ctx, []store.BatchEvent{{Event: other}, {Event: del}})
	if err != nil || results[1].Outcome != checkpoint.Deleted {
		t.Fatalf("batch: %+v, %v; want the conversation deleted", results, err)
	}
	if res, err := st.Extract(ctx, "u", "other"); err != nil || res.Outcome != checkpoint.Applied {
		t.Fatalf("extract: %+v, %v; want applied", res, err)
	}
	pgtest.Must(t, st.DeleteConversation(ctx, "u", "other"), "DeleteConversation")

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.sql) < 10 {
		t.Fatalf("recorded %d statements: the recorder sees nothing", len(rec.sql))
	}
	for _, sql := range rec.sql {
		if strings.Contains(strings.ToLower(sql), "notify") {
			t.Errorf("the store sent a notification:\n%s", sql)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
