package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/testutil/pgtest"
	"github.com/recallhq/recall/worker"
)

// TestAPIHasItsOwnPool: in `recall run`, the read API reads through a pool
// of its own, bounded by RECALL_API_MAX_CONNS, so that a flood of reads
// never takes a connection from ingest and extraction.
func TestAPIHasItsOwnPool(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	cfg := runConfig(pgtest.NewDatabase(t), ns.URL())
	secret := cfg.JWTSecret
	a := startApp(t, cfg, roles{worker: true, api: true})
	if a.apiPool == nil || a.apiPool == a.pool {
		t.Fatal("the API reads through the ingest pool")
	}
	if got := a.apiPool.Config().MaxConns; got != 3 {
		t.Errorf("API pool MaxConns %d, want 3 (RECALL_API_MAX_CONNS)", got)
	}
	tok, err := apiclient.Sign([]byte(secret), "u", time.Hour, &apiclient.TokenOptions{Service: true})
	if err != nil {
		t.Fatal(err)
	}
	before := a.pool.Stat().AcquireCount()
	var wg sync.WaitGroup
	// Reads of every kind: evidence, search, context and rejections.
	for i := range 100 {
		wg.Go(func() {
			base := fmt.Sprintf("http://%s/v1/users/u/conversations/c-%d", a.Addr, i)
			method, target, body := http.MethodGet, base+"/evidence", ""
			switch i % 4 {
			case 1:
				method, target, body = http.MethodPost, base+"/evidence/search", `{"query":"the schema"}`
			case 2:
				method, target, body = http.MethodPost, base+"/context",
					`{"messages":[{"id":"m0","role":"user","content":"Draft the schema."}],"budget":{"context_window":32768,"prompt":16000}}`
			case 3:
				target = base + "/rejections"
			}
			req, _ := http.NewRequestWithContext(context.Background(), method, target, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("%s %s: status %d", method, target, res.StatusCode)
			}
		})
	}
	wg.Wait()
	if reads := a.apiPool.Stat().AcquireCount(); reads < 100 {
		t.Errorf("the API pool served %d reads of 100", reads)
	}
	if got := a.pool.Stat().AcquireCount() - before; got > 20 {
		// River's and the worker's own queries run meanwhile; 100 reads would show.
		t.Errorf("the ingest pool served %d acquisitions during 100 API reads", got)
	}
	if n := a.apiPool.Stat().TotalConns(); n > 3 {
		t.Errorf("the API pool opened %d connections, more than its bound 3", n)
	}
}

// runConfig is the configuration of a `recall run` in tests: worker and
// API on dbURL and natsURL, a 32-byte secret, small bounds.
func runConfig(dbURL, natsURL string) *config {
	return &config{
		DatabaseURL: dbURL, NATSURL: natsURL, HTTPAddr: "127.0.0.1:0", JWTSecret: strings.Repeat("s", 32),
		Subject: worker.DefaultSubject, Stream: worker.DefaultStream, ShutdownTimeout: 5 * time.Second, Concurrency: 2,
		MaxEventBytes: 1 << 20, GapTimeout: time.Second, APIMaxConns: 3, MaxWaiters: 10,
		Profile: string(evidence.ProfileFocus), ArchiveMaxEntries: evidence.DefaultMaxArchiveEntries,
	}
}

// startApp starts the parts r names with cfg as the commands do (migrating
// first), and stops them when the test ends.
func startApp(t *testing.T, cfg *config, r roles) *app {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	a, err := start(t.Context(), cfg, r, true, logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.stop(logger) })
	return a
}
