// Package pipelinetest assembles recall's pipeline for tests: a migrated
// database of its own, an in-process JetStream server, and any number of
// workers (each with its own River client and NATS connection, like
// separate processes) on them.
package pipelinetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/riverqueue/river"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/jobs"
	"github.com/recallhq/recall/pipeline"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/testutil/pgtest"
	"github.com/recallhq/recall/worker"
)

// Subject and Stream are the in-process pipeline's; a bundle on a shared
// NATS server gets names of its own.
const (
	Subject = worker.DefaultSubject
	Stream  = worker.DefaultStream
)

// Bundle is a database and a NATS server with recall's schema.
type Bundle struct {
	T           testing.TB
	DatabaseURL string
	Pool        *pgxpool.Pool
	// NATS is the in-process server; nil on a shared one.
	NATS    *natstest.Server
	NATSURL string
	Subject string
	Stream  string
	// Store is a store without an enqueuer, for reads.
	Store *store.Store
	// JS publishes.
	JS jetstream.JetStream
	// GapTimeout is given to the workers. Defaults to 2s.
	GapTimeout time.Duration
	// AckWait is given to the workers; zero means the worker's default.
	AckWait time.Duration
	// Replicas is the replica count of the stream a worker creates; zero
	// means the worker's default (1).
	Replicas int
	// Logger, when set, is the workers' logger. Defaults to warnings and
	// errors to t.Log.
	Logger *slog.Logger
	// CaptureLogs makes everything the workers log, at every level,
	// readable with Logs, as well as going to Logger (or t.Log).
	CaptureLogs bool
	logMu       sync.Mutex
	logs        strings.Builder
}

// Logs returns what the workers logged since CaptureLogs was set.
func (b *Bundle) Logs() string {
	b.logMu.Lock()
	defer b.logMu.Unlock()
	return b.logs.String()
}

// New migrates a fresh database and starts a JetStream server.
func New(t testing.TB) *Bundle {
	t.Helper()
	ns := natstest.Start(t)
	b := newBundle(t, ns.URL(), Subject, Stream)
	b.NATS = ns
	return b
}

// NewSharedNATS migrates a fresh database and uses the NATS server at url
// (such as the machine's), with a stream and subject of the test's own that
// are deleted when it ends.
func NewSharedNATS(t testing.TB, url string) *Bundle {
	t.Helper()
	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	b := newBundle(t, url, "recall.test."+suffix, "RECALL_TEST_"+suffix)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.JS.DeleteStream(ctx, b.Stream)
	})
	return b
}

// NewOn migrates a fresh database and uses the NATS server at url with the
// subject (which may hold wildcards: a partition's subjects) and stream
// given. Publish sends to the subject, so give it a subject without
// wildcards when the test publishes with Publish.
func NewOn(t testing.TB, url, subject, stream string) *Bundle {
	t.Helper()
	return newBundle(t, url, subject, stream)
}

// NewOnDatabase is NewOn with a database of the test's own at dbURL, which
// it migrates.
func NewOnDatabase(t testing.TB, dbURL, natsURL, subject, stream string) *Bundle {
	t.Helper()
	return newBundleOn(t, dbURL, natsURL, subject, stream)
}

func newBundle(t testing.TB, natsURL, subject, stream string) *Bundle {
	t.Helper()
	return newBundleOn(t, pgtest.NewDatabase(t), natsURL, subject, stream)
}

func newBundleOn(t testing.TB, dbURL, natsURL, subject, stream string) *Bundle {
	t.Helper()
	pool := pgtest.MigratedPool(t, dbURL, store.Migrate)
	st, err := store.New(pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, js := natstest.Connect(t, natsURL, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	return &Bundle{T: t, DatabaseURL: dbURL, Pool: pool, NATSURL: natsURL, Subject: subject, Stream: stream,
		Store: st, JS: js, GapTimeout: 2 * time.Second}
}

// Worker is one worker "process": its own pool, River client and NATS
// connection.
type Worker struct {
	Store   *store.Store
	River   *river.Client[pgx.Tx]
	Worker  *worker.Worker
	NC      *nats.Conn
	pool    *pgxpool.Pool
	pipe    *pipeline.Pipeline
	stopped bool
}

// StartWorker starts a worker with concurrency ingest transactions (batches
// of events) and extraction workers at once.
func (b *Bundle) StartWorker(concurrency int) *Worker {
	t := b.T
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, b.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	logger := b.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if b.CaptureLogs {
		capture := slog.NewTextHandler(lockedWriter{&b.logMu, &b.logs}, &slog.HandlerOptions{Level: slog.LevelDebug})
		logger = slog.New(teeHandler{logger.Handler(), capture})
	}
	nc, err := nats.Connect(b.NATSURL, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pool, nc, &pipeline.Config{
		Jobs:   &jobs.Config{Workers: concurrency},
		Worker: &worker.Config{Stream: b.Stream, Subject: b.Subject, Concurrency: concurrency, GapTimeout: b.GapTimeout, AckWait: b.AckWait, Replicas: b.Replicas},
		Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	wk := &Worker{Store: p.Store, River: p.River, Worker: p.Worker, NC: nc, pool: pool, pipe: p}
	t.Cleanup(func() { wk.Stop() })
	return wk
}

// Stop drains the worker like a SIGTERM would.
func (w *Worker) Stop() {
	if w.stopped {
		return
	}
	w.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = w.pipe.Stop(ctx)
	w.NC.Close()
	w.pool.Close()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// Event builds a snapshot event of msgs.
func Event(eventID, userID, conversationID string, msgs []json.RawMessage) []byte {
	ev := map[string]any{
		"schema": checkpoint.Schema, "kind": "snapshot", "event_id": eventID,
		"user_id": userID, "conversation_id": conversationID, "offset": 0, "prefix_digest": nil,
		"messages": msgs,
	}
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return b
}

// Publish publishes an event with Nats-Msg-Id and waits for the ack.
func (b *Bundle) Publish(eventID string, data []byte) {
	b.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.JS.PublishMsg(ctx, &nats.Msg{Subject: b.Subject, Data: data, Header: nats.Header{"Nats-Msg-Id": []string{eventID}}}); err != nil {
		b.T.Fatalf("publish %s: %v", eventID, err)
	}
}

// WaitCursor waits until the conversation's cursor is at least cursor.
func (b *Bundle) WaitCursor(userID, conversationID string, cursor int, timeout time.Duration) evidence.Record {
	b.T.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rec, err := b.Store.Evidence(context.Background(), userID, conversationID)
		if err != nil {
			b.T.Fatal(err)
		}
		if rec.Cursor >= cursor {
			return rec
		}
		if time.Now().After(deadline) {
			b.T.Fatalf("conversation %s/%s: cursor %d, want %d after %s", userID, conversationID, rec.Cursor, cursor, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Rejections returns the reasons of the recorded rejections, oldest first.
func (b *Bundle) Rejections() []string {
	b.T.Helper()
	rows, err := b.Pool.Query(context.Background(), `SELECT reason FROM recall_rejection ORDER BY id`)
	if err != nil {
		b.T.Fatal(err)
	}
	reasons, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.T.Fatal(err)
	}
	return reasons
}

// WaitRejections waits until n rejections are recorded.
func (b *Bundle) WaitRejections(n int, timeout time.Duration) []string {
	b.T.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := b.Rejections()
		if len(r) >= n || time.Now().After(deadline) {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Oracle folds history with the pure core, as recall must.
func Oracle(t testing.TB, history []json.RawMessage) evidence.State {
	t.Helper()
	raw, _ := json.Marshal(history)
	msgs, err := checkpoint.DecodeMessages(raw)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := evidence.Fold(evidence.NewState(), msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// RequireState compares a stored record with an oracle state, all but
// version: the evidence and, in the focus profile, the view's priority order.
func RequireState(t testing.TB, rec evidence.Record, want evidence.State) {
	t.Helper()
	got, err := rec.State()
	if err != nil {
		t.Fatal(err)
	}
	gj, _ := json.Marshal(struct {
		C int
		P checkpoint.Digest
		O int
		B evidence.Buckets
		S []evidence.Shown
	}{got.Cursor, got.PrefixDigest, got.OmittedEntries, got.Buckets, got.Shown})
	wj, _ := json.Marshal(struct {
		C int
		P checkpoint.Digest
		O int
		B evidence.Buckets
		S []evidence.Shown
	}{want.Cursor, want.PrefixDigest, want.OmittedEntries, want.Buckets, want.Shown})
	if string(gj) != string(wj) {
		t.Fatalf("state differs from the oracle:\n got %s\nwant %s", gj, wj)
	}
}

// Must fails on err.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(fmt.Sprint(err))
	}
}

// teeHandler sends each record to both of its handlers.
type teeHandler struct{ a, b slog.Handler }

func (h teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.a.Enabled(ctx, l) || h.b.Enabled(ctx, l)
}

func (h teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	for _, x := range []slog.Handler{h.a, h.b} {
		if x.Enabled(ctx, r.Level) {
			errs = append(errs, x.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}

func (h teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{h.a.WithAttrs(as), h.b.WithAttrs(as)}
}

func (h teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{h.a.WithGroup(name), h.b.WithGroup(name)}
}
