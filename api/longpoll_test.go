package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/recallhq/recall/evidence"
)

// get sends a GET over real HTTP and decodes the evidence response.
func get(ctx context.Context, t *testing.T, srv *httptest.Server, target, token string) (response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+target, nil)
	if err != nil {
		return response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := srv.Client().Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	if res.StatusCode != http.StatusOK {
		return response{}, errors.New(res.Status + ": " + string(body))
	}
	var r response
	return r, json.Unmarshal(body, &r)
}

func gauge(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// stateAt is a record of the key at cursor.
func stateAt(user, conv string, cursor int, version int64) evidence.Record {
	s := evidence.NewState()
	s.Cursor, s.MessageCount, s.Version = cursor, cursor+1, version
	return recordOf(user, conv, &s)
}

type result struct {
	r       response
	err     error
	elapsed time.Duration
}

func TestLongPollReturnsWhenCursorArrives(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httptest.NewServer(b.h)
	t.Cleanup(srv.Close)
	tok := userToken(t, "u-42")
	b.src.set(stateAt("u-42", "c-7", 2, 1))

	done := make(chan result, 1)
	start := time.Now()
	go func() {
		r, err := get(t.Context(), t, srv, "/v1/users/u-42/conversations/c-7/evidence?min_cursor=4&wait=20s", tok)
		done <- result{r, err, time.Since(start)}
	}()
	// The key's watch subscribes before its first read, so the request
	// waits (the gauge) only once that read is done.
	waitGauge(t, b, 1)
	b.src.waitSubscribers(t, "u-42", "c-7", 1)
	if n := b.src.reads.Load(); n != 1 {
		t.Fatalf("%d reads before the first change, want 1", n)
	}

	// A change that does not reach min_cursor: one re-read, still waiting.
	b.src.set(stateAt("u-42", "c-7", 3, 2))
	waitReads(t, b.src, 2)
	select {
	case res := <-done:
		t.Fatalf("answered before the cursor arrived: %+v", res)
	case <-time.After(100 * time.Millisecond):
	}
	// A change of another key wakes nobody here.
	b.src.set(stateAt("u-42", "c-8", 9, 1))
	b.src.set(stateAt("u-42", "c-7", 4, 3))
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.r.Cursor != 4 || res.r.Version != 3 || res.r.Lagging {
		t.Errorf("cursor %d, version %d, lagging %v; want 4, 3, false", res.r.Cursor, res.r.Version, res.r.Lagging)
	}
	if res.elapsed > 10*time.Second {
		t.Errorf("took %v: did not return early", res.elapsed)
	}
	if n := b.src.reads.Load(); n != 3 {
		t.Errorf("%d reads, want 3: one, then one per change of the key", n)
	}
	if g := gauge(t, b.metrics.Waiters); g != 0 {
		t.Errorf("waiters = %v after the answer, want 0", g)
	}
	b.src.waitSubscribers(t, "u-42", "c-7", 0)
}

func TestLongPollDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httptest.NewServer(b.h)
	t.Cleanup(srv.Close)
	b.src.set(stateAt("u-42", "c-7", 2, 1))
	for _, wait := range []string{"300ms", "0.3"} {
		start := time.Now()
		r, err := get(t.Context(), t, srv, "/v1/users/u-42/conversations/c-7/evidence?min_cursor=5&wait="+wait, userToken(t, "u-42"))
		elapsed := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Lagging || r.Cursor != 2 {
			t.Errorf("wait=%s: lagging %v, cursor %d; want true, 2", wait, r.Lagging, r.Cursor)
		}
		if elapsed < 300*time.Millisecond || elapsed > 5*time.Second {
			t.Errorf("wait=%s: answered after %v, want about 300ms", wait, elapsed)
		}
	}
	if n := b.src.reads.Load(); n != 2 {
		t.Errorf("%d reads, want one per request (no polling)", n)
	}
}

func TestLongPollAlreadyThere(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httptest.NewServer(b.h)
	t.Cleanup(srv.Close)
	b.src.set(stateAt("u-42", "c-7", 5, 2))
	start := time.Now()
	r, err := get(t.Context(), t, srv, "/v1/users/u-42/conversations/c-7/evidence?min_cursor=5&wait=20s", userToken(t, "u-42"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Lagging || r.Cursor != 5 || time.Since(start) > 5*time.Second {
		t.Errorf("lagging %v, cursor %d after %v; want an immediate answer at cursor 5", r.Lagging, r.Cursor, time.Since(start))
	}
}

func TestLongPollClientDisconnect(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httptest.NewServer(b.h)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := get(ctx, t, srv, "/v1/users/u-42/conversations/c-7/evidence?min_cursor=1&wait=30s", userToken(t, "u-42"))
		done <- err
	}()
	b.src.waitSubscribers(t, "u-42", "c-7", 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v, want context.Canceled", err)
	}
	// The handler notices, unsubscribes and stops counting the waiter.
	b.src.waitSubscribers(t, "u-42", "c-7", 0)
	deadline := time.Now().Add(5 * time.Second)
	for gauge(t, b.metrics.Waiters) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("waiter still counted after the client left")
		}
		time.Sleep(time.Millisecond)
	}
	if n := b.src.reads.Load(); n != 1 {
		t.Errorf("%d reads, want 1", n)
	}
}

func TestDrainingReleasesWaiters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httptest.NewServer(b.h)
	t.Cleanup(srv.Close)
	done := make(chan result, 1)
	go func() {
		r, err := get(t.Context(), t, srv, "/v1/users/u-42/conversations/c-7/evidence?min_cursor=1&wait=30s", userToken(t, "u-42"))
		done <- result{r: r, err: err}
	}()
	b.src.waitSubscribers(t, "u-42", "c-7", 1)
	b.h.SetDraining()
	select {
	case res := <-done:
		if res.err != nil || !res.r.Lagging {
			t.Errorf("answer while draining: %+v, want lagging", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiter was not released when draining began")
	}
}

func waitReads(t *testing.T, src *fakeSource, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for src.reads.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d reads, want %d", src.reads.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A change committed while the first read is in flight must not be missed:
// the handler subscribes before it reads.
func TestLongPollChangeDuringFirstRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httptest.NewServer(b.h)
	t.Cleanup(srv.Close)
	b.src.set(stateAt("u-42", "c-7", 1, 1))
	b.src.afterRead = func(n int64) {
		if n == 1 {
			b.src.set(stateAt("u-42", "c-7", 2, 2))
		}
	}
	start := time.Now()
	r, err := get(t.Context(), t, srv, "/v1/users/u-42/conversations/c-7/evidence?min_cursor=2&wait=10s", userToken(t, "u-42"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Cursor != 2 || r.Lagging {
		t.Errorf("cursor %d, lagging %v; want 2, false", r.Cursor, r.Lagging)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("answered after %v: the change during the first read was missed", elapsed)
	}
}
