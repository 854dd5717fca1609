package bench

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// SQLStat is the client-side time of one statement in one scenario: from
// sending it to reading its last row (or to the end of a batch), so it
// includes the round trip, waits for row locks and, for commit, the WAL
// flush.
type SQLStat struct {
	Scenario  string  `json:"scenario"`
	Statement string  `json:"statement"`
	Calls     int     `json:"calls"`
	TotalMs   float64 `json:"total_ms"`
	MeanMs    float64 `json:"mean_ms"`
	MaxMs     float64 `json:"max_ms"`
}

// sqlTracer is a pgx tracer that adds up the time of each statement, per
// scenario. It is on the pool the in-process pipeline, the baseline and the
// API share.
type sqlTracer struct {
	mu       sync.Mutex
	scenario string
	stats    map[[2]string]*SQLStat
}

type traceKey struct{}

type traceStart struct {
	sql   string
	start time.Time
}

func newSQLTracer() *sqlTracer { return &sqlTracer{stats: map[[2]string]*SQLStat{}} }

func (t *sqlTracer) setScenario(s string) {
	t.mu.Lock()
	t.scenario = s
	t.mu.Unlock()
}

func (t *sqlTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, traceKey{}, traceStart{sql: data.SQL, start: time.Now()})
}

func (t *sqlTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if s, ok := ctx.Value(traceKey{}).(traceStart); ok {
		t.add(s.sql, time.Since(s.start))
	}
}

func (t *sqlTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	sql := "batch"
	if data.Batch != nil && len(data.Batch.QueuedQueries) > 0 {
		sql = "batch of " + strconv.Itoa(len(data.Batch.QueuedQueries)) + ": " + data.Batch.QueuedQueries[0].SQL
	}
	return context.WithValue(ctx, traceKey{}, traceStart{sql: sql, start: time.Now()})
}

func (t *sqlTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (t *sqlTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	if s, ok := ctx.Value(traceKey{}).(traceStart); ok {
		t.add(s.sql, time.Since(s.start))
	}
}

func (t *sqlTracer) add(sql string, d time.Duration) {
	stmt := strings.Join(strings.Fields(sql), " ")
	if len(stmt) > 90 {
		stmt = stmt[:90] + "…"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := [2]string{t.scenario, stmt}
	s := t.stats[k]
	if s == nil {
		s = &SQLStat{Scenario: t.scenario, Statement: stmt}
		t.stats[k] = s
	}
	s.Calls++
	s.TotalMs += ms(d)
	s.MaxMs = max(s.MaxMs, ms(d))
}

// top returns the n statements of each scenario with the most total time.
func (t *sqlTracer) top(n int) []SQLStat {
	t.mu.Lock()
	defer t.mu.Unlock()
	var all []SQLStat
	for _, s := range t.stats {
		c := *s
		c.MeanMs = c.TotalMs / float64(c.Calls)
		all = append(all, c)
	}
	slices.SortFunc(all, func(a, b SQLStat) int {
		if a.Scenario != b.Scenario {
			return strings.Compare(a.Scenario, b.Scenario)
		}
		switch {
		case a.TotalMs > b.TotalMs:
			return -1
		case a.TotalMs < b.TotalMs:
			return 1
		}
		return 0
	})
	var out []SQLStat
	for i, s := range all {
		if i > 0 && all[i-1].Scenario == s.Scenario && len(out) > 0 && countScenario(out, s.Scenario) >= n {
			continue
		}
		out = append(out, s)
	}
	return out
}

func countScenario(stats []SQLStat, scenario string) int {
	n := 0
	for _, s := range stats {
		if s.Scenario == scenario {
			n++
		}
	}
	return n
}

// calls returns how many statements and batches (round trips) the scenario
// labelled label ran.
func (t *sqlTracer) calls(label string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for k, s := range t.stats {
		if k[0] == label {
			n += s.Calls
		}
	}
	return n
}
