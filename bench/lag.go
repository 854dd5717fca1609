package bench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/wake"
)

// apiServer is the read API as `recall run` serves it: api.Handler over a
// store, woken over NATS by a wake.Subscriber on the pipeline's wake
// subject, behind api.NewServer, on loopback.
type apiServer struct {
	wake    *wake.Subscriber
	handler *api.Handler
	server  *http.Server
	url     string
	secret  []byte
}

// startQuietAPI stops the pipeline, so that nothing else runs while the API
// is measured, and serves the API over a store of the run's pool.
func (e *env) startQuietAPI(ctx context.Context) (*apiServer, error) {
	if err := e.stopPipeline(); err != nil {
		return nil, err
	}
	st, err := store.New(e.pool, nil)
	if err != nil {
		return nil, err
	}
	return e.startAPI(ctx, st)
}

func (e *env) startAPI(ctx context.Context, src api.Source) (*apiServer, error) {
	return e.startAPIWithIdP(ctx, src, nil)
}

// startAPIWithIdP serves the API as startAPI does, trusting idp's tokens
// beside the HS256 ones when idp is not nil.
func (e *env) startAPIWithIdP(ctx context.Context, src api.Source, idp *api.IdentityProvider) (*apiServer, error) {
	s := &apiServer{secret: make([]byte, 32)}
	_, _ = rand.Read(s.secret)
	var err error
	if s.wake, err = wake.NewSubscriber(e.nc, &wake.Config{Subject: wake.SubjectFor(e.stream), Logger: e.logger}); err != nil {
		return nil, err
	}
	if err := s.wake.Start(ctx); err != nil {
		return nil, err
	}
	// Every event of the lag scenario has its waiting reader: the waiter
	// cap, which sheds load in production, is not what is measured.
	s.handler, err = api.New(src, &api.Config{JWTSecret: s.secret, IdentityProvider: idp, Notifier: s.wake, Metrics: metrics.New(), Logger: e.logger,
		MaxWaiters: 1 << 20})
	if err != nil {
		s.close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.close()
		return nil, err
	}
	s.url = "http://" + ln.Addr().String()
	s.server = api.NewServer(ln.Addr().String(), s.handler)
	go func() { _ = s.server.Serve(ln) }()
	return s, nil
}

func (s *apiServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s.handler != nil {
		s.handler.SetDraining()
	}
	if s.server != nil {
		_ = s.server.Shutdown(ctx)
	}
	if s.wake != nil {
		_ = s.wake.Stop(ctx)
	}
}

// token signs a bearer token for userID ("" for a service token).
func (s *apiServer) token(userID string) string {
	sub, opts := userID, &apiclient.TokenOptions{}
	if userID == "" {
		sub, opts.Service = "recall-bench", true
	}
	t, err := apiclient.Sign(s.secret, sub, time.Hour, opts)
	if err != nil {
		panic(err) // HS256 with a []byte key does not fail
	}
	return t
}

func evidenceURL(base, userID, conversationID string) string {
	return base + "/v1/users/" + url.PathEscape(userID) + "/conversations/" + url.PathEscape(conversationID) + "/evidence"
}

func newHTTPClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute,
	}}
}

// lagPollers is how many long-polls the lag scenario holds at once.
const lagPollers = 256

// lagScenario is scenario 2: events published at half the maximum rate of
// scenario 1, each followed by a long-poll for the cursor it brings; the lag
// is from the publish to the answer that shows the state.
func (e *env) lagScenario(ctx context.Context, res *Result) error {
	p, err := e.startPipeline(ctx)
	if err != nil {
		return err
	}
	if e.pipelineRate == 0 && e.cfg.LagRate <= 0 {
		// Scenario 1 did not run: measure the maximum once.
		w := workload{prefix: "lagmax", users: e.sz.users, convs: e.sz.convs, turns: e.sz.turns}
		if e.pipelineRate, _, err = e.pipelineTrial(ctx, p, w); err != nil {
			return err
		}
	}
	srv, err := e.startAPI(ctx, p.store)
	if err != nil {
		return err
	}
	defer srv.close()
	// The bursts' long-polls; the paced events' go through a probe of a
	// bounded number of connections, so that a recall that falls behind
	// makes events wait for a poller rather than the benchmark run out of
	// file descriptors.
	client := newHTTPClient(16)
	defer client.CloseIdleConnections()
	token := srv.token("")

	rate := e.pipelineRate / 2
	if e.cfg.LagRate > 0 {
		rate, res.LagRateGiven = e.cfg.LagRate, true
	}
	turns := e.sz.lagTurns
	convs := max(1, int(rate*e.sz.lagDuration.Seconds())/turns)
	w := workload{prefix: "lag", users: max(1, convs/10), convs: convs, turns: turns}
	hist := history(turnLength(turns))
	interval := time.Duration(float64(time.Second) / rate)
	e.progress("publishing %d events at %.0f events/s (scenario 1's maximum: %.0f), %d conversations × %d turns", w.events(), rate, e.pipelineRate, convs, turns)

	jobEvents, cancelJobs := p.river.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: 1_000_000})
	defer cancelJobs()
	ingest0 := snapshotHistogram(p.metrics.IngestSeconds)
	extract0 := snapshotHistogram(p.metrics.ExtractionSeconds)
	state0 := snapshotHistogram(p.metrics.StateLagSeconds)
	applied0 := counterValue(p.metrics.Extractions.WithLabelValues(checkpoint.Applied.String()))
	probe := newLagProbe(ctx, token, lagPollers)
	pub := &asyncPublisher{js: e.js, subject: e.subject}
	start := time.Now()
	k := 0
	for t := 1; t <= turns; t++ {
		for i := range convs {
			if d := time.Until(start.Add(time.Duration(k) * interval)); d > 0 {
				time.Sleep(d)
			}
			k++
			u, c := w.key(i)
			id := e.ids.next()
			data := encodeEvent(id, u, c, 0, nil, hist[:turnLength(t)])
			t0 := time.Now()
			if err := pub.publishStall(id, data); err != nil {
				_, _ = probe.finish()
				return err
			}
			if want := finalCursor(t); want > 0 { // the first turn summarises nothing
				probe.watch(evidenceURL(srv.url, u, c), want, t0)
			}
		}
	}
	sent := time.Since(start)
	perr := pub.wait(ctx)
	lags, lerr := probe.finish()
	timeouts := probe.timeouts + probe.dropped
	if err := errors.Join(perr, lerr); err != nil {
		return err
	}
	res.LagExtractionsPerEvent = (counterValue(p.metrics.Extractions.WithLabelValues(checkpoint.Applied.String())) - applied0) / float64(w.events())
	res.LagIngestMeanMs, res.LagIngestP99Ms = snapshotHistogram(p.metrics.IngestSeconds).since(ingest0, 0.99)
	res.LagExtractionMeanMs, res.LagExtractionP99Ms = snapshotHistogram(p.metrics.ExtractionSeconds).since(extract0, 0.99)
	res.LagCommittedMeanMs, res.LagCommittedP99Ms = snapshotHistogram(p.metrics.StateLagSeconds).since(state0, 0.99)
	var waits []time.Duration
	for len(jobEvents) > 0 {
		ev := <-jobEvents
		var args struct {
			UserID string `json:"user_id"`
		}
		if ev.JobStats == nil || ev.Job == nil || json.Unmarshal(ev.Job.EncodedArgs, &args) != nil || !strings.HasPrefix(args.UserID, w.prefix+"-") {
			continue // not a job of this scenario's conversations
		}
		waits = append(waits, ev.JobStats.QueueWaitDuration)
	}
	slices.Sort(waits)
	res.LagJobWaitP50Ms, res.LagJobWaitP99Ms = ms(percentile(waits, 0.5)), ms(percentile(waits, 0.99))
	e.progress("lag phase: %.2f extractions per event (scenario 1's backlog coalesced more)", res.LagExtractionsPerEvent)
	e.progress("lag breakdown: event handling mean %.1f ms, p99 ≈%.0f ms; extraction job wait p50 %.1f ms, p99 %.1f ms; extraction mean %.1f ms, p99 ≈%.0f ms; publication→committed state mean %.1f ms, p99 ≈%.0f ms",
		res.LagIngestMeanMs, res.LagIngestP99Ms, res.LagJobWaitP50Ms, res.LagJobWaitP99Ms, res.LagExtractionMeanMs, res.LagExtractionP99Ms,
		res.LagCommittedMeanMs, res.LagCommittedP99Ms)
	res.LagRateEventsPerS = float64(w.events()) / sent.Seconds()
	res.LagSamples, res.LagTimeouts = len(lags), timeouts
	res.LagP50Ms = ms(percentile(lags, 0.50))
	res.LagP99Ms = ms(percentile(lags, 0.99))
	res.LagP999Ms = ms(percentile(lags, 0.999))
	res.LagMaxMs = ms(percentile(lags, 1))
	e.progress("lag at %.0f events/s: p50 %.1f ms, p99 %.1f ms, p999 %.1f ms, max %.1f ms (%d samples, %d over 15s)",
		res.LagRateEventsPerS, res.LagP50Ms, res.LagP99Ms, res.LagP999Ms, res.LagMaxMs, len(lags), timeouts)
	return e.burstLag(ctx, srv, client, token, res)
}

// burstLag measures the lag of events that arrive together and then pause:
// rounds of burstWidth conversations publishing at the same moment, 200ms
// apart, as agents that finish their turns at once. River notifies inserts
// at most once per fetch cooldown, so such events test the fallback that
// finds the jobs whose notification was held back.
func (e *env) burstLag(ctx context.Context, srv *apiServer, client *http.Client, token string, res *Result) error {
	const burstWidth = 4
	rounds := e.sz.lagBurstRounds
	hist := history(turnLength(rounds + 1))
	pub := &asyncPublisher{js: e.js, subject: e.subject}
	lags := make([]time.Duration, 0, rounds*burstWidth)
	var mu sync.Mutex
	for r := 1; r <= rounds; r++ {
		var wg sync.WaitGroup
		var firstErr error
		for i := range burstWidth {
			u, c := fmt.Sprintf("lagburst-u%d", i), "c"
			id := e.ids.next()
			data := encodeEvent(id, u, c, 0, nil, hist[:turnLength(r+1)])
			t0 := time.Now()
			if err := pub.publishStall(id, data); err != nil {
				return err
			}
			want := finalCursor(r + 1)
			wg.Go(func() {
				lag, _, err := waitReadable(ctx, client, evidenceURL(srv.url, u, c), token, want, t0)
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lags = append(lags, lag)
			})
		}
		wg.Wait()
		if err := errors.Join(pub.wait(ctx), firstErr); err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
	slices.Sort(lags)
	res.LagBurstSamples = len(lags)
	res.LagBurstP50Ms, res.LagBurstP99Ms, res.LagBurstMaxMs = ms(percentile(lags, 0.5)), ms(percentile(lags, 0.99)), ms(percentile(lags, 1))
	e.progress("lag of %d-event bursts: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d samples)",
		burstWidth, res.LagBurstP50Ms, res.LagBurstP99Ms, res.LagBurstMaxMs, len(lags))
	return nil
}

// waitReadable long-polls the API until the conversation's cursor reaches
// want and returns the time since t0; ok is false when that took over 15s.
func waitReadable(ctx context.Context, client *http.Client, u, token string, want int, t0 time.Time) (time.Duration, bool, error) {
	target := u + "?min_cursor=" + strconv.Itoa(want) + "&wait=5s"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return 0, false, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return time.Since(t0), false, fmt.Errorf("GET evidence: %w", err)
		}
		var body struct {
			Cursor int `json:"cursor"`
		}
		derr := json.NewDecoder(resp.Body).Decode(&body)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lag := time.Since(t0)
		if resp.StatusCode != http.StatusOK || derr != nil {
			return lag, false, fmt.Errorf("GET evidence: status %d (%v)", resp.StatusCode, derr)
		}
		if body.Cursor >= want {
			return lag, true, nil
		}
		if lag > 15*time.Second {
			return lag, false, nil
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
