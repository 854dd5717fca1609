package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/testutil/pgtest"
)

// The benchmark compares GET …/evidence through the whole handler (routing,
// JWT, metrics, rendering) with a bare handler that does the same one
// primary-key select and writes the stored bytes, both over loopback HTTP
// with a real client, on the same pool.
//
//	go test ./api -run '^$' -bench Evidence -benchtime 3s -v
//
// -v shows the comparison of the medians.
const (
	benchUsers         = 100
	benchConversations = 10
	benchParallelism   = 4 // goroutines per GOMAXPROCS
	benchRounds        = 5
)

const benchSelect = `SELECT body FROM bench_evidence WHERE user_id = $1 AND conversation_id = $2`

// pgSource is a Source doing one primary-key select of a stored body.
type pgSource struct{ pool *pgxpool.Pool }

func (s pgSource) Evidence(ctx context.Context, userID, conversationID string) (evidence.Record, error) {
	rec := evidence.Record{UserID: userID, ConversationID: conversationID}
	err := s.pool.QueryRow(ctx, benchSelect, userID, conversationID).Scan(&rec.Body)
	if err != nil {
		return rec, err
	}
	rec.Version, rec.Cursor, rec.MessageCount, rec.UpdatedAt = 1, 29, 30, updatedAt
	return rec, nil
}

func (s pgSource) Search(ctx context.Context, userID, conversationID, _ string) (evidence.Record, error) {
	return s.Evidence(ctx, userID, conversationID)
}

func (s pgSource) DeleteConversation(ctx context.Context, userID, conversationID string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM bench_evidence WHERE user_id = $1 AND conversation_id = $2`, userID, conversationID)
	return err
}

type noNotifier struct{}

func (noNotifier) Subscribe(string, string) (<-chan struct{}, func()) { return nil, func() {} }

// benchBody is the stored body of a conversation that fills every bucket.
func benchBody(tb testing.TB) []byte {
	tb.Helper()
	texts := []string{
		"We must keep the p99 under fifty milliseconds for every tenant, whatever the load.",
		"Agreed: we'll use Postgres with one row per conversation and a notify channel.",
		"Next step: draft the schema and the migration for the evidence table.",
		"Here is the draft of the schema with the primary key on both ids, as discussed.",
	}
	var msgs []string
	for i := range 30 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		text, _ := json.Marshal(texts[i%len(texts)])
		msgs = append(msgs, fmt.Sprintf(`{"id":"m%d","role":%q,"content":%s}`, i, role, text))
	}
	s, _ := fold(tb, "["+strings.Join(msgs, ",")+"]")
	return evidence.AppendBody(nil, &s, 0)
}

type loadResult struct {
	cpuPerReq time.Duration
	reqPerSec float64
	p99       time.Duration
}

// load sends b.N GETs from parallel clients and reports req/s and p99.
func load(b *testing.B, srv *httptest.Server, tokens []string) loadResult {
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute,
	}}
	defer client.CloseIdleConnections()
	var (
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, b.N)
		next      int
	)
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	cpu0 := processCPU(b)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		mine := make([]time.Duration, 0, 1024)
		mu.Lock()
		i := next
		next += 7919
		mu.Unlock()
		buf := make([]byte, 32<<10)
		for pb.Next() {
			i++
			u, c := i%benchUsers, (i/benchUsers)%benchConversations
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/v1/users/u-%d/conversations/c-%d/evidence", srv.URL, u, c), nil)
			req.Header.Set("Authorization", "Bearer "+tokens[u])
			t0 := time.Now()
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			n, _ := io.ReadFull(res.Body, buf)
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			mine = append(mine, time.Since(t0))
			if res.StatusCode != http.StatusOK || n < 100 {
				b.Errorf("status %d, %d bytes", res.StatusCode, n)
				return
			}
		}
		mu.Lock()
		latencies = append(latencies, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	cpu := processCPU(b) - cpu0
	b.StopTimer()
	slices.Sort(latencies)
	r := loadResult{reqPerSec: float64(len(latencies)) / elapsed.Seconds()}
	if len(latencies) > 0 {
		r.cpuPerReq = cpu / time.Duration(len(latencies))
	}
	if len(latencies) > 0 {
		r.p99 = latencies[(len(latencies)*99)/100]
	}
	b.ReportMetric(r.reqPerSec, "req/s")
	b.ReportMetric(float64(r.p99.Microseconds())/1000, "p99-ms")
	// CPU of this process (client and server, not Postgres) per request:
	// steadier than req/s on a shared machine.
	b.ReportMetric(float64(r.cpuPerReq.Nanoseconds())/1000, "cpu-µs/req")
	return r
}

func BenchmarkEvidence(b *testing.B) {
	pool, _ := pgtest.NewPool(b)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `CREATE TABLE bench_evidence (
		user_id text, conversation_id text, body bytea, PRIMARY KEY (user_id, conversation_id))`)
	pgtest.Must(b, err, "create bench_evidence")
	body := benchBody(b)
	_, err = pool.Exec(ctx, `INSERT INTO bench_evidence
		SELECT 'u-' || u, 'c-' || c, $1 FROM generate_series(0, $2 - 1) u, generate_series(0, $3 - 1) c`,
		body, benchUsers, benchConversations)
	pgtest.Must(b, err, "fill bench_evidence")
	tokens := make([]string, benchUsers)
	for u := range tokens {
		tokens[u] = userToken(b, fmt.Sprintf("u-%d", u))
	}

	// The baseline: the same select, the stored bytes, nothing else.
	baseline := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var stored []byte
		err := pool.QueryRow(r.Context(), benchSelect, r.PathValue("user_id"), r.PathValue("conversation_id")).Scan(&stored)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		out := make([]byte, 0, len(stored)+2)
		out = append(append(append(out, '{'), stored...), '}')
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		_, _ = w.Write(out)
	}))
	mux := http.NewServeMux()
	mux.Handle("GET /v1/users/{user_id}/conversations/{conversation_id}/evidence", baseline.Config.Handler)
	baseline.Config.Handler = mux
	defer baseline.Close()

	h, err := api.New(pgSource{pool}, &api.Config{JWTSecret: secret, Notifier: noNotifier{}, Metrics: metrics.New()})
	pgtest.Must(b, err, "api.New")
	full := httptest.NewServer(h)
	defer full.Close()

	// Rounds alternate so that both see the same machine: other processes
	// on a shared machine skew one long run of each. b.Run ramps b.N up
	// and keeps the last, full-length run.
	var ratios []float64
	var base, handler []loadResult
	for range benchRounds {
		var r loadResult
		b.Run("baseline", func(b *testing.B) { r = load(b, baseline, tokens) })
		base = append(base, r)
		b.Run("handler", func(b *testing.B) { r = load(b, full, tokens) })
		handler = append(handler, r)
		if last := base[len(base)-1]; last.reqPerSec > 0 {
			ratios = append(ratios, r.reqPerSec/last.reqPerSec)
		}
	}
	bm, hm := median(base), median(handler)
	slices.Sort(ratios)
	if len(ratios) > 0 {
		b.Logf("handler %.0f req/s, p99 %v, %v CPU/req; baseline %.0f req/s, p99 %v, %v CPU/req; "+
			"handler/baseline req/s ratio %.2f (medians of %d alternating rounds; ratios %.2f)",
			hm.reqPerSec, hm.p99.Round(10*time.Microsecond), hm.cpuPerReq.Round(time.Microsecond),
			bm.reqPerSec, bm.p99.Round(10*time.Microsecond), bm.cpuPerReq.Round(time.Microsecond),
			ratios[len(ratios)/2], benchRounds, ratios)
	}
}

// processCPU returns the user and system CPU time of this process.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// median returns the median req/s and the median p99 of rs.
func median(rs []loadResult) loadResult {
	rps := make([]float64, 0, len(rs))
	p99 := make([]time.Duration, 0, len(rs))
	cpu := make([]time.Duration, 0, len(rs))
	for _, r := range rs {
		rps, p99, cpu = append(rps, r.reqPerSec), append(p99, r.p99), append(cpu, r.cpuPerReq)
	}
	if len(rps) == 0 {
		return loadResult{}
	}
	slices.Sort(rps)
	slices.Sort(p99)
	slices.Sort(cpu)
	return loadResult{reqPerSec: rps[len(rps)/2], p99: p99[len(p99)/2], cpuPerReq: cpu[len(cpu)/2]}
}
