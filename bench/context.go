package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/assemble"
	"github.com/recallhq/recall/internal/contextload"
)

// contextScenario is scenario 7: assembling the prompt of a model call from
// a 200-message, 1 MB checkpoint with ten large tool results. In process,
// the latency of assemble.Build over many calls; over loopback HTTP, POST
// …/context through the whole handler (auth, the conversation's evidence
// from the store, decoding, assembly, metrics) beside a bare handler that
// only decodes the same body and writes it back, in alternating rounds.
func (e *env) contextScenario(ctx context.Context, res *Result) error {
	body := contextload.Body()
	res.ContextBodyBytes = len(body)
	decoded, err := assemble.DecodeBody(body)
	if err != nil {
		return err
	}
	durations := make([]time.Duration, 0, e.sz.contextCalls)
	for i := range e.sz.contextCalls + e.sz.contextCalls/10 {
		t0 := time.Now()
		if _, err := assemble.Build(&decoded.Request); err != nil {
			return err
		}
		if i >= e.sz.contextCalls/10 { // the first tenth warms up
			durations = append(durations, time.Since(t0))
		}
	}
	slices.Sort(durations)
	res.ContextBuildP50Ms, res.ContextBuildP99Ms = ms(percentile(durations, 0.5)), ms(percentile(durations, 0.99))
	e.progress("context: Build p50 %.2f ms, p99 %.2f ms over %d calls", res.ContextBuildP50Ms, res.ContextBuildP99Ms, len(durations))

	srv, err := e.startQuietAPI(ctx)
	if err != nil {
		return err
	}
	defer srv.close()
	base, err := startBaselineContext()
	if err != nil {
		return err
	}
	defer base.Close()
	user, conv := "bench-context", "c"
	if len(e.warmKeys) > 0 {
		user, conv = e.warmKeys[0][0], e.warmKeys[0][1]
	}
	path := "/v1/users/" + user + "/conversations/" + conv + "/context"
	token := srv.token(user)
	clients := e.sz.contextClients
	hc, bc := newHTTPClient(2*clients), newHTTPClient(2*clients)
	defer hc.CloseIdleConnections()
	defer bc.CloseIdleConnections()
	warm := min(e.sz.contextDuration, 500*time.Millisecond)
	if _, err := postLoad(ctx, bc, "http://"+base.Addr+path, "", body, clients, warm); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	if _, err := postLoad(ctx, hc, srv.url+path, token, body, clients, warm); err != nil {
		return fmt.Errorf("api: %w", err)
	}
	pr, err := e.pairedRounds("context", e.sz.contextRounds,
		func() (readResult, error) {
			return postLoad(ctx, bc, "http://"+base.Addr+path, "", body, clients, e.sz.contextDuration)
		},
		func() (readResult, error) {
			return postLoad(ctx, hc, srv.url+path, token, body, clients, e.sz.contextDuration)
		})
	if err != nil {
		return err
	}
	res.ContextClients = clients
	res.ContextRequestsPerS, res.ContextBaselineRequestsPerS = pr.rps, pr.baseRPS
	res.ContextRatio = pr.ratio
	res.ContextP99Ms, res.ContextBaselineP99Ms = pr.p99Ms, pr.baseP99Ms
	return nil
}

// startBaselineContext serves the bare handler (contextload.EchoHandler:
// read the body, decode it as JSON, encode it again and write it) with the
// API's server settings.
func startBaselineContext() (*http.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/users/{user_id}/conversations/{conversation_id}/context", contextload.EchoHandler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := api.NewServer(ln.Addr().String(), mux)
	srv.Addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

// postLoad posts body from clients goroutines for d and returns requests
// per second and the p99 latency.
func postLoad(ctx context.Context, client *http.Client, url, token string, body []byte, clients int, d time.Duration) (readResult, error) {
	return summarise(httpLoad(ctx, client, clients, d, func(int, int) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return req
	}))
}
