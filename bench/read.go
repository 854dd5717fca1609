package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/recallhq/recall/api"
)

// readScenario is scenario 4: GET …/evidence from many loopback clients,
// through api.Handler over the store, beside a bare handler that does the
// same primary-key select and writes the stored body; alternating rounds.
func (e *env) readScenario(ctx context.Context, res *Result) error {
	if len(e.warmKeys) == 0 {
		// Scenario 1 did not run: make the same warm state.
		p, err := e.startPipeline(ctx)
		if err != nil {
			return err
		}
		w := workload{prefix: "warm", users: e.sz.users, convs: e.sz.convs, turns: e.sz.turns}
		if _, _, err := e.pipelineTrial(ctx, p, w); err != nil {
			return err
		}
		for i := range w.convs {
			u, c := w.key(i)
			e.warmKeys = append(e.warmKeys, [2]string{u, c})
		}
	}
	srv, err := e.startQuietAPI(ctx)
	if err != nil {
		return err
	}
	defer srv.close()
	base, err := e.startBaselineReader()
	if err != nil {
		return err
	}
	defer base.Close()
	baseURL := "http://" + base.Addr

	tokens := map[string]string{}
	for _, k := range e.warmKeys {
		if _, ok := tokens[k[0]]; !ok {
			tokens[k[0]] = srv.token(k[0])
		}
	}
	clients := e.sz.readClients
	hc, bc := newHTTPClient(2*clients), newHTTPClient(2*clients)
	defer hc.CloseIdleConnections()
	defer bc.CloseIdleConnections()
	// Warm both: connections, the token cache, Postgres's buffers.
	warm := min(e.sz.readDuration, 500*time.Millisecond)
	if _, err := readLoad(ctx, bc, baseURL, e.warmKeys, tokens, clients, warm); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	if _, err := readLoad(ctx, hc, srv.url, e.warmKeys, tokens, clients, warm); err != nil {
		return fmt.Errorf("api: %w", err)
	}
	pr, err := e.pairedRounds("read", e.sz.readRounds,
		func() (readResult, error) {
			return readLoad(ctx, bc, baseURL, e.warmKeys, tokens, clients, e.sz.readDuration)
		},
		func() (readResult, error) {
			return readLoad(ctx, hc, srv.url, e.warmKeys, tokens, clients, e.sz.readDuration)
		})
	if err != nil {
		return err
	}
	res.ReadClients = clients
	res.ReadRequestsPerS, res.ReadBaselineRequestsPerS = pr.rps, pr.baseRPS
	res.ReadRatio = pr.ratio
	res.ReadP99Ms, res.ReadBaselineP99Ms = pr.p99Ms, pr.baseP99Ms
	return nil
}

// baselineSelect is the bare handler's query: the stored body by primary
// key.
const baselineSelect = `SELECT body FROM recall_conversation WHERE user_id = $1 AND conversation_id = $2`

// startBaselineReader serves the bare handler: one select, the stored bytes
// in braces, nothing else (no auth, no metrics), with the API's server
// settings.
func (e *env) startBaselineReader() (*http.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/users/{user_id}/conversations/{conversation_id}/evidence", func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if err := e.pool.QueryRow(r.Context(), baselineSelect, r.PathValue("user_id"), r.PathValue("conversation_id")).Scan(&body); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out := make([]byte, 0, len(body)+2)
		out = append(append(append(out, '{'), body...), '}')
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := api.NewServer(ln.Addr().String(), mux)
	srv.Addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

type readResult struct {
	rps float64
	p99 time.Duration
}

// readLoad sends GETs from clients goroutines for d, cycling over keys, and
// returns requests per second and the p99 latency.
func readLoad(ctx context.Context, client *http.Client, base string, keys [][2]string, tokens map[string]string, clients int, d time.Duration) (readResult, error) {
	return summarise(httpLoad(ctx, client, clients, d, func(g, i int) *http.Request {
		k := keys[(g*7919+i)%len(keys)]
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, evidenceURL(base, k[0], k[1]), nil)
		req.Header.Set("Authorization", "Bearer "+tokens[k[0]])
		return req
	}))
}

// summarise turns a load's latencies into requests per second and p99.
func summarise(r loadResult, err error) (readResult, error) {
	if err != nil {
		return readResult{}, err
	}
	return readResult{rps: r.rps(), p99: percentile(r.latencies, 0.99)}, nil
}

// loadResult is what httpLoad measured.
type loadResult struct {
	latencies []time.Duration // sorted
	elapsed   time.Duration
}

func (r loadResult) rps() float64 { return float64(len(r.latencies)) / r.elapsed.Seconds() }

// httpLoad sends requests from clients goroutines for d, request i of
// goroutine g made by newRequest(g, i), each as soon as the one before it
// is answered, and returns the latency of each. Every answer must be 200
// with a body of 100 bytes or more.
func httpLoad(ctx context.Context, client *http.Client, clients int, d time.Duration, newRequest func(g, i int) *http.Request) (loadResult, error) {
	start := time.Now()
	return runClients(ctx, client, clients, newRequest, func(_, _ int) (time.Time, bool) {
		now := time.Now()
		return now, now.Sub(start) < d
	})
}

// httpPaced sends requests from clients goroutines at rate requests per
// second in all, for d, each at its scheduled time (one goroutine sends
// every clients/rate seconds), and returns each request's latency from its
// scheduled time, so that a slow answer delays the next request's clock
// and counts against it (no coordinated omission).
func httpPaced(ctx context.Context, client *http.Client, clients int, rate float64, d time.Duration, newRequest func(g, i int) *http.Request) (loadResult, error) {
	every := time.Duration(float64(clients) / rate * float64(time.Second))
	start := time.Now()
	return runClients(ctx, client, clients, newRequest, func(g, i int) (time.Time, bool) {
		at := start.Add(time.Duration(g)*every/time.Duration(clients) + time.Duration(i)*every)
		if at.Sub(start) >= d {
			return at, false
		}
		time.Sleep(time.Until(at))
		return at, true
	})
}

// runClients runs clients goroutines, each sending request i when next(g,
// i) says to (and timing it from the time next returns), until next says
// stop, an answer is not 200 with 100 bytes or more, or ctx ends.
func runClients(ctx context.Context, client *http.Client, clients int, newRequest func(g, i int) *http.Request, next func(g, i int) (time.Time, bool)) (loadResult, error) {
	var (
		mu       sync.Mutex
		all      []time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	for g := range clients {
		wg.Go(func() {
			mine := make([]time.Duration, 0, 4096)
			var err error
			for i := 0; ctx.Err() == nil; i++ {
				t0, ok := next(g, i)
				if !ok {
					break
				}
				resp, rerr := client.Do(newRequest(g, i))
				if rerr != nil {
					err = rerr
					break
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mine = append(mine, time.Since(t0))
				if resp.StatusCode != http.StatusOK || n < 100 {
					err = fmt.Errorf("status %d, %d bytes", resp.StatusCode, n)
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, mine...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return loadResult{}, firstErr
	}
	if len(all) == 0 {
		return loadResult{}, errors.New("no request completed")
	}
	slices.Sort(all)
	return loadResult{latencies: all, elapsed: elapsed}, nil
}

// pairedResult holds the medians of rounds of a load on recall beside the
// same load on its baseline.
type pairedResult struct {
	rps, baseRPS, ratio, p99Ms, baseP99Ms float64
}

// pairedRounds runs rounds of the baseline's load, then recall's, each
// round's pair in turn so that the machine's drift hits both alike, and
// returns the medians.
func (e *env) pairedRounds(name string, rounds int, base, recall func() (readResult, error)) (pairedResult, error) {
	var rps, baseRPS, ratios, p99s, baseP99s []float64
	for round := range rounds {
		b, err := base()
		if err != nil {
			return pairedResult{}, fmt.Errorf("baseline: %w", err)
		}
		h, err := recall()
		if err != nil {
			return pairedResult{}, fmt.Errorf("api: %w", err)
		}
		rps, baseRPS, ratios = append(rps, h.rps), append(baseRPS, b.rps), append(ratios, h.rps/b.rps)
		p99s, baseP99s = append(p99s, ms(h.p99)), append(baseP99s, ms(b.p99))
		e.progress("%s round %d/%d: api %.1f req/s p99 %.2f ms; baseline %.1f req/s p99 %.2f ms; ratio %.2f",
			name, round+1, rounds, h.rps, ms(h.p99), b.rps, ms(b.p99), h.rps/b.rps)
	}
	return pairedResult{median(rps), median(baseRPS), median(ratios), median(p99s), median(baseP99s)}, nil
}
