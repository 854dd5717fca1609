package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/testutil/pgtest"
)

type listenerBundle struct {
	l    *store.Listener
	pool *pgxpool.Pool // observes and sends from other connections
	url  string
}

func setupListener(t *testing.T) *listenerBundle {
	t.Helper()
	pool, url := pgtest.NewPool(t)
	l, err := store.NewListener(url, nil)
	pgtest.Must(t, err, "NewListener")
	pgtest.Must(t, l.Start(t.Context()), "Start")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := l.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return &listenerBundle{l: l, pool: pool, url: url}
}

// listenerBackends returns the pids of the listener connections on the
// test's database.
func (b *listenerBundle) listenerBackends(t *testing.T) []uint32 {
	t.Helper()
	rows, err := b.pool.Query(t.Context(),
		`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 ORDER BY pid`,
		store.ListenerApplicationName)
	pgtest.Must(t, err, "pg_stat_activity")
	pids, err := pgx.CollectRows(rows, pgx.RowTo[uint32])
	pgtest.Must(t, err, "pg_stat_activity")
	return pids
}

// waitBackends waits until exactly n listener connections exist.
func (b *listenerBundle) waitBackends(t *testing.T, n int) []uint32 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := b.listenerBackends(t)
		if len(pids) == n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d listener connections, want %d", len(pids), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func notify(t *testing.T, conn *pgx.Conn, payload string) {
	t.Helper()
	_, err := conn.Exec(t.Context(), `SELECT pg_notify($1, $2)`, store.NotifyChannel, payload)
	pgtest.Must(t, err, "pg_notify")
}

// woken reports whether ch receives within the duration; with 0, whether a
// wake-up is pending.
func woken(ch <-chan struct{}, within time.Duration) bool {
	if within == 0 {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	select {
	case <-ch:
		return true
	case <-time.After(within):
		return false
	}
}

func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

func TestListenerFansOutOnOneConnection(t *testing.T) {
	t.Parallel()
	b := setupListener(t)
	const keys, perKey = 100, 2

	// 200 subscribers, subscribing concurrently.
	chans := make([][perKey]<-chan struct{}, keys)
	var wg sync.WaitGroup
	for k := range keys {
		for j := range perKey {
			wg.Go(func() {
				ch, cancel := b.l.Subscribe("u", fmt.Sprintf("c-%d", k))
				t.Cleanup(cancel)
				chans[k][j] = ch
			})
		}
	}
	wg.Wait()

	pids := b.waitBackends(t, 1)
	var query string
	pgtest.Must(t, b.pool.QueryRow(t.Context(), `SELECT query FROM pg_stat_activity WHERE pid = $1`, pids[0]).Scan(&query), "query")
	if want := `LISTEN "` + store.NotifyChannel + `"`; query != want {
		t.Errorf("the listener's connection last ran %q, want %q", query, want)
	}
	var conns int
	pgtest.Must(t, b.pool.QueryRow(t.Context(),
		`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&conns), "count")
	if conns != 1 {
		t.Errorf("%d other connections to the database with 200 subscribers, want 1 (the listener)", conns)
	}

	sender, err := pgx.Connect(t.Context(), b.url)
	pgtest.Must(t, err, "connect sender")
	t.Cleanup(func() { sender.Close(context.Background()) })

	// Notifications from another connection wake exactly the key's subscribers.
	for _, k := range []int{17, 42, 17} {
		notify(t, sender, store.NotifyPayload("u", fmt.Sprintf("c-%d", k), 3))
		for j := range perKey {
			if !woken(chans[k][j], 5*time.Second) {
				t.Fatalf("subscriber %d of c-%d was not woken", j, k)
			}
		}
	}
	// Same conversation id of another user, then a marker: once the marker
	// is seen, everything sent before it has been dispatched.
	notify(t, sender, store.NotifyPayload("v", "c-1", 3))
	notify(t, sender, store.NotifyPayload("u", "c-99", 3))
	if !woken(chans[99][0], 5*time.Second) {
		t.Fatal("marker not delivered")
	}
	for k := range keys {
		for j := range perKey {
			if k == 99 && j == 0 {
				continue
			}
			if k == 99 && j == 1 {
				drain(chans[k][j])
				continue
			}
			select {
			case <-chans[k][j]:
				t.Errorf("subscriber %d of c-%d was woken by another key's change", j, k)
			default:
			}
		}
	}

	// Many changes before the subscriber looks: one pending wake-up, and the
	// listener never blocks on a slow subscriber.
	for range 10 {
		notify(t, sender, store.NotifyPayload("u", "c-5", 4))
	}
	notify(t, sender, store.NotifyPayload("u", "c-99", 4))
	if !woken(chans[99][0], 5*time.Second) {
		t.Fatal("marker not delivered")
	}
	if !woken(chans[5][0], 0) || woken(chans[5][0], 0) {
		t.Errorf("want exactly one pending wake-up after ten changes")
	}
}

func TestListenerUnsubscribeAndMalformed(t *testing.T) {
	t.Parallel()
	b := setupListener(t)
	sender, err := pgx.Connect(t.Context(), b.url)
	pgtest.Must(t, err, "connect sender")
	t.Cleanup(func() { sender.Close(context.Background()) })

	gone, cancel := b.l.Subscribe("u", "c")
	kept, cancelKept := b.l.Subscribe("u", "c")
	t.Cleanup(cancelKept)
	other, cancelOther := b.l.Subscribe("u", "other")
	t.Cleanup(cancelOther)
	cancel()
	cancel() // idempotent

	notify(t, sender, store.NotifyPayload("u", "c", 1))
	if !woken(kept, 5*time.Second) {
		t.Fatal("the remaining subscriber was not woken")
	}
	if woken(gone, 0) {
		t.Error("an ended subscription was woken")
	}

	// A payload that names no key may hide any change: everyone re-reads.
	drain(other)
	notify(t, sender, "not json")
	if !woken(kept, 5*time.Second) || !woken(other, 5*time.Second) {
		t.Error("a malformed announcement did not wake every subscriber")
	}
	if woken(gone, 0) {
		t.Error("an ended subscription was woken")
	}
}

func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	b := setupListener(t)
	ch, cancel := b.l.Subscribe("u", "c")
	t.Cleanup(cancel)
	other, cancelOther := b.l.Subscribe("u", "other")
	t.Cleanup(cancelOther)
	drain(ch)
	drain(other)

	pids := b.waitBackends(t, 1)
	var terminated bool
	pgtest.Must(t, b.pool.QueryRow(t.Context(), `SELECT pg_terminate_backend($1)`, pids[0]).Scan(&terminated), "terminate")
	if !terminated {
		t.Fatal("pg_terminate_backend did not terminate the listener")
	}
	// Changes may have been missed while away: every subscriber re-reads.
	if !woken(ch, 15*time.Second) || !woken(other, 5*time.Second) {
		t.Fatal("subscribers were not woken after the listener reconnected")
	}
	if !b.l.Connected() {
		t.Error("Connected() = false after the wake-up")
	}
	newPids := b.waitBackends(t, 1)
	if newPids[0] == pids[0] {
		t.Errorf("listener backend pid %d unchanged after termination", pids[0])
	}

	// The new connection listens.
	sender, err := pgx.Connect(t.Context(), b.url)
	pgtest.Must(t, err, "connect sender")
	t.Cleanup(func() { sender.Close(context.Background()) })
	notify(t, sender, store.NotifyPayload("u", "c", 9))
	if !woken(ch, 5*time.Second) {
		t.Fatal("a notification after the reconnect was not delivered")
	}
	if woken(other, 100*time.Millisecond) {
		t.Error("another key's subscriber was woken")
	}
}

func TestListenerLifecycle(t *testing.T) {
	t.Parallel()
	pool, url := pgtest.NewPool(t)
	b := &listenerBundle{pool: pool, url: url}
	l, err := store.NewListener(url, nil)
	pgtest.Must(t, err, "NewListener")
	b.l = l

	// Subscribed before Start: woken once listening, as a change may have
	// happened before.
	ch, cancel := l.Subscribe("u", "c")
	defer cancel()
	if l.Connected() {
		t.Error("Connected() before Start")
	}
	pgtest.Must(t, l.Start(t.Context()), "Start")
	if !woken(ch, 0) {
		t.Error("a subscriber from before Start was not woken on Start")
	}
	if err := l.Start(t.Context()); err == nil {
		t.Error("second Start succeeded")
	}
	b.waitBackends(t, 1)
	pgtest.Must(t, l.Stop(t.Context()), "Stop")
	pgtest.Must(t, l.Stop(t.Context()), "second Stop")
	if l.Connected() {
		t.Error("Connected() after Stop")
	}
	b.waitBackends(t, 0)

	// Restartable.
	pgtest.Must(t, l.Start(t.Context()), "Start again")
	b.waitBackends(t, 1)
	pgtest.Must(t, l.Stop(t.Context()), "Stop again")

	// Cancelling Start's context stops it too.
	ctx, cancelStart := context.WithCancel(t.Context())
	pgtest.Must(t, l.Start(ctx), "Start with a context")
	cancelStart()
	b.waitBackends(t, 0)
	pgtest.Must(t, l.Stop(t.Context()), "Stop after cancel")

	if _, err := store.NewListener("postgres://%zz", nil); err == nil {
		t.Error("NewListener accepted an unparseable URL")
	}
	bad, err := store.NewListener("postgres://postgres@127.0.0.1:1/nowhere?connect_timeout=2", nil)
	pgtest.Must(t, err, "NewListener")
	if err := bad.Start(t.Context()); err == nil {
		bad.Stop(t.Context())
		t.Error("Start succeeded with no server")
	}
}

// TestListenerSpreadsReconnectWakeups: after a reconnect every subscriber
// is woken, but not all in the same instant, so that the re-reads of many
// waiting keys do not hit Postgres at once.
func TestListenerSpreadsReconnectWakeups(t *testing.T) {
	t.Parallel()
	b := setupListener(t)
	const n = 500
	chans := make([]<-chan struct{}, n)
	for i := range n {
		ch, cancel := b.l.Subscribe("u", fmt.Sprintf("c-%d", i))
		t.Cleanup(cancel)
		drain(ch)
		chans[i] = ch
	}
	pids := b.waitBackends(t, 1)
	var terminated bool
	pgtest.Must(t, b.pool.QueryRow(t.Context(), `SELECT pg_terminate_backend($1)`, pids[0]).Scan(&terminated), "terminate")
	times := make([]time.Time, n)
	var wg sync.WaitGroup
	for i, ch := range chans {
		wg.Go(func() {
			if woken(ch, 20*time.Second) {
				times[i] = time.Now()
			}
		})
	}
	wg.Wait()
	first, last := times[0], times[0]
	for i, at := range times {
		if at.IsZero() {
			t.Fatalf("subscriber %d was not woken after the reconnect", i)
		}
		if at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	if spread := last.Sub(first); spread < 100*time.Millisecond || spread > 5*time.Second {
		t.Errorf("%d wake-ups spread over %v, want between 100ms and 5s", n, spread)
	}
}
