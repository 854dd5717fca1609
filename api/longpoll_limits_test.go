package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/metrics"
)

// setupWith is setup with a Config of the test's own (JWTSecret, Notifier,
// Metrics and Logger are filled in).
func setupWith(t *testing.T, src api.Source, notifier api.Notifier, cfg api.Config) *testBundle {
	t.Helper()
	m := metrics.New()
	cfg.JWTSecret, cfg.Notifier, cfg.Metrics = secret, notifier, m
	cfg.Logger = slog.New(slog.DiscardHandler)
	h, err := api.New(src, &cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &testBundle{h: h, metrics: m}
}

// getStatus sends a GET and returns the status, the Retry-After header and
// the error code of the body, if any.
func getStatus(ctx context.Context, srv *httptest.Server, target, token string) (status int, retryAfter, code string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+target, nil)
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := srv.Client().Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return res.StatusCode, res.Header.Get("Retry-After"), e.Error.Code, nil
}

// serve serves h over real HTTP until the test ends.
func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func waitGauge(t *testing.T, b *testBundle, n float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for gauge(t, b.metrics.Waiters) != n {
		if time.Now().After(deadline) {
			t.Fatalf("waiters = %v, want %v", gauge(t, b.metrics.Waiters), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWaiterCap: the handler exports its MaxWaiters; past MaxWaiters
// waiting requests, a request that would wait is answered 429 with
// Retry-After at once; one that needs no wait is still answered; when
// waiters leave, requests may wait again.
func TestWaiterCap(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	b := setupWith(t, src, src, api.Config{MaxWaiters: 3})
	b.src = src
	// Alerts compare the waiters with the limit the process exports.
	if got := gauge(t, b.metrics.MaxWaiters); got != 3 {
		t.Errorf("recall_http_max_waiters = %v, want 3", got)
	}
	srv := serve(t, b.h)
	tok := userToken(t, "u-42")
	src.set(stateAt("u-42", "c-7", 1, 1))

	var wg sync.WaitGroup
	statuses := make(chan int, 3)
	for i := range 3 {
		wg.Go(func() {
			st, _, _, err := getStatus(t.Context(), srv, fmt.Sprintf("/v1/users/u-42/conversations/c-%d/evidence?min_cursor=5&wait=20s", 7+i), tok)
			if err != nil {
				t.Error(err)
			}
			statuses <- st
		})
	}
	waitGauge(t, b, 3)
	start := time.Now()
	st, retry, code, err := getStatus(t.Context(), srv, "/v1/users/u-42/conversations/c-7/evidence?min_cursor=5&wait=20s", tok)
	if err != nil {
		t.Fatal(err)
	}
	if st != http.StatusTooManyRequests || retry == "" || code != api.CodeTooManyWaiters || time.Since(start) > 2*time.Second {
		t.Errorf("past the cap: %d, Retry-After %q, code %q after %v; want 429 at once with Retry-After and %q",
			st, retry, code, time.Since(start), api.CodeTooManyWaiters)
	}
	// A request whose cursor is there already needs no wait.
	if st, _, _, _ := getStatus(t.Context(), srv, "/v1/users/u-42/conversations/c-7/evidence?min_cursor=1&wait=20s", tok); st != http.StatusOK {
		t.Errorf("a request that needs no wait: %d, want 200", st)
	}
	for i := range 3 {
		src.set(stateAt("u-42", fmt.Sprintf("c-%d", 7+i), 5, 2))
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != http.StatusOK {
			t.Errorf("a waiter answered %d, want 200", st)
		}
	}
	waitGauge(t, b, 0)
	done := make(chan int, 1)
	go func() {
		st, _, _, _ := getStatus(t.Context(), srv, "/v1/users/u-42/conversations/c-7/evidence?min_cursor=6&wait=300ms", tok)
		done <- st
	}()
	if st := <-done; st != http.StatusOK {
		t.Errorf("after the waiters left: %d, want 200", st)
	}
}

// TestOneReadPerWake: however many requests wait on a key, a wake-up reads
// it once.
func TestOneReadPerWake(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := serve(t, b.h)
	tok := userToken(t, "u-42")
	b.src.set(stateAt("u-42", "c-7", 1, 1))
	const n = 50
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			r, err := get(t.Context(), t, srv, "/v1/users/u-42/conversations/c-7/evidence?min_cursor=3&wait=20s", tok)
			if err != nil || r.Cursor != 3 {
				t.Errorf("waiter: cursor %d, %v", r.Cursor, err)
			}
		})
	}
	waitGauge(t, b, n)
	before := b.src.reads.Load()
	if before > n {
		t.Errorf("%d reads for %d requests joining", before, n)
	}
	b.src.set(stateAt("u-42", "c-7", 2, 2))
	waitReads(t, b.src, before+1)
	time.Sleep(200 * time.Millisecond)
	if got := b.src.reads.Load() - before; got != 1 {
		t.Errorf("%d reads for one wake-up of %d waiters, want 1", got, n)
	}
	b.src.set(stateAt("u-42", "c-7", 3, 3))
	wg.Wait()
	if got := b.src.reads.Load() - before; got != 2 {
		t.Errorf("%d reads for two wake-ups of %d waiters, want 2", got, n)
	}
	b.src.waitSubscribers(t, "u-42", "c-7", 0)
}

// blockingSource never answers a read until its context ends.
type blockingSource struct{ *fakeSource }

func (s blockingSource) Evidence(ctx context.Context, userID, conversationID string) (evidence.Record, error) {
	<-ctx.Done()
	return evidence.Record{}, ctx.Err()
}

func (s blockingSource) Search(ctx context.Context, userID, conversationID, query string) (evidence.Record, error) {
	return s.Evidence(ctx, userID, conversationID)
}

// TestReadDeadline: a store that does not answer is given up on after
// ReadTimeout, with a 503, whether the request waits or not, and for the
// search and context routes as for GET.
func TestReadDeadline(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	b := setupWith(t, blockingSource{src}, src, api.Config{ReadTimeout: 200 * time.Millisecond})
	srv := serve(t, b.h)
	for _, target := range []string{"/v1/users/u-42/conversations/c-7/evidence", "/v1/users/u-42/conversations/c-7/evidence?min_cursor=3&wait=20s"} {
		start := time.Now()
		st, _, _, err := getStatus(t.Context(), srv, target, userToken(t, "u-42"))
		if err != nil {
			t.Fatal(err)
		}
		if st != http.StatusServiceUnavailable || time.Since(start) > 5*time.Second {
			t.Errorf("%s: %d after %v, want 503 after about 200ms", target, st, time.Since(start))
		}
	}
	for _, tt := range []struct{ target, body string }{
		{"/v1/users/u-42/conversations/c-7/evidence/search", `{"query":"deadline"}`},
		{contextPath, contextBody(t, "")},
		{contextPath, contextBody(t, `,"min_cursor":3,"wait":"20s"`)},
	} {
		start := time.Now()
		w := post(t, b.h, tt.target, userToken(t, "u-42"), tt.body)
		if w.Code != http.StatusServiceUnavailable || time.Since(start) > 5*time.Second {
			t.Errorf("POST %s: %d after %v, want 503 after about 200ms", tt.target, w.Code, time.Since(start))
		}
	}
	waitGauge(t, b, 0)
}

// TestContextWaitsLikeEvidence: a context request that waits for min_cursor
// counts against MaxWaiters (past it, 429 with Retry-After) and shares the
// key's one read per wake-up with the GET requests waiting on the key.
func TestContextWaitsLikeEvidence(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	b := setupWith(t, src, src, api.Config{MaxWaiters: 4})
	srv := serve(t, b.h)
	tok := userToken(t, "u-42")
	src.set(stateAt("u-42", "c-7", 1, 1))

	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			r, err := get(t.Context(), t, srv, "/v1/users/u-42/conversations/c-7/evidence?min_cursor=3&wait=20s", tok)
			if err != nil || r.Cursor != 3 {
				t.Errorf("GET waiter: cursor %d, %v", r.Cursor, err)
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			w := post(t, b.h, contextPath, tok, contextBody(t, `,"min_cursor":3,"wait":"20s"`))
			var r contextResponse
			if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil || w.Code != http.StatusOK || r.Evidence.Cursor != 3 || r.Evidence.Lagging {
				t.Errorf("context waiter: %d, evidence %+v, %v", w.Code, r.Evidence, err)
			}
		})
	}
	waitGauge(t, b, 4)

	// Past the cap, a context request that would wait is refused at once.
	start := time.Now()
	w := post(t, b.h, contextPath, tok, contextBody(t, `,"min_cursor":3,"wait":"20s"`))
	if code, _ := errorOf(t, w); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" ||
		code != api.CodeTooManyWaiters || time.Since(start) > 2*time.Second {
		t.Errorf("context past the cap: %d, Retry-After %q, code %q after %v; want 429 at once with Retry-After and %q",
			w.Code, w.Header().Get("Retry-After"), code, time.Since(start), api.CodeTooManyWaiters)
	}

	// One wake-up: one read for the GET and context requests alike.
	before := src.reads.Load()
	src.set(stateAt("u-42", "c-7", 2, 2))
	waitReads(t, src, before+1)
	time.Sleep(200 * time.Millisecond)
	if got := src.reads.Load() - before; got != 1 {
		t.Errorf("%d reads for one wake-up of GET and context waiters, want 1", got)
	}
	src.set(stateAt("u-42", "c-7", 3, 3))
	wg.Wait()
	waitGauge(t, b, 0)
	src.waitSubscribers(t, "u-42", "c-7", 0)
}
