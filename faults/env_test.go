package faults

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/testutil/pgtest"
)

// cluster is one scenario's world: a database, an in-process JetStream
// server (or cluster of them) living in the test process, and recall child
// processes on them.
type cluster struct {
	t     *testing.T
	dbURL string
	nats  *natstest.Server // nil on a JetStream cluster
	pool  *pgxpool.Pool
	pub   *publisher
	js    jetstream.JetStream
	env   []string

	mu       sync.Mutex
	children []*child // every process started, all generations
	gen      map[string]int
}

// newCluster migrates dbURL (a fresh database on the suite's private
// Postgres cluster when empty) with `recall migrate` and starts a JetStream
// server.
func newCluster(t *testing.T, dbURL string, env ...string) *cluster {
	t.Helper()
	ns := natstest.Start(t)
	c := newClusterAt(t, dbURL, ns.URL(), env...)
	c.nats = ns
	return c
}

// newClusterAt is newCluster on the NATS server (or servers, comma-separated)
// at natsURL.
func newClusterAt(t *testing.T, dbURL, natsURL string, env ...string) *cluster {
	t.Helper()
	if dbURL == "" {
		dbURL = suiteCluster(t).NewDatabase(t)
	}
	c := &cluster{t: t, dbURL: dbURL, gen: map[string]int{}}
	c.env = append([]string{
		"DATABASE_URL=" + dbURL,
		"NATS_URL=" + natsURL,
		"RECALL_LOG_FORMAT=json",
		"RECALL_LOG_LEVEL=debug",
		"RECALL_SHUTDOWN_TIMEOUT=5s",
		"RECALL_NO_MIGRATE=1",
	}, env...)
	m := c.start("migrate", "migrate")
	select {
	case <-m.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("recall migrate did not finish in 60s:\n%s", tail(m.logPath, 20))
	}
	if code := m.state.ExitCode(); code != 0 {
		t.Fatalf("recall migrate exited %d:\n%s", code, tail(m.logPath, 20))
	}
	c.pool = pgtest.Pool(t, dbURL)
	c.pub = newPublisher(t, natsURL)
	c.js = c.pub.js
	return c
}

// start starts a recall process named name (a generation number is added).
func (c *cluster) start(name string, args ...string) *child {
	c.t.Helper()
	c.mu.Lock()
	g := c.gen[name]
	c.gen[name] = g + 1
	c.mu.Unlock()
	ch := startChild(c.t, fmt.Sprintf("%s.%d", name, g), c.env, args...)
	c.mu.Lock()
	c.children = append(c.children, ch)
	c.mu.Unlock()
	return ch
}

// worker starts `recall worker` and waits until it consumes.
func (c *cluster) worker(name string) *child {
	c.t.Helper()
	w := c.start(name, "worker")
	w.waitLog(c.t, "worker consuming", 60*time.Second)
	return w
}

// logs summarises what every child logged.
type logSummary struct {
	Lines       int
	MarkerLines []string // lines that carry the marker (must be none)
	Crashes     []string // panics and fatal errors
	Outcomes    map[string]int
	// RedeliveredAfterAck counts events logged with an ack or term
	// outcome and then delivered again.
	RedeliveredAfterAck int
	RedeliveredExamples []string
	Errors              []string // error-level lines
	// LastRedelivery is when the last event delivered more than once was
	// handled; Rescued counts jobs River's rescuer retried and LastRescue
	// is when it last did.
	LastRedelivery time.Time
	// Handled holds when each stream message was first acknowledged or
	// terminated.
	Handled    map[int]time.Time
	Rescued    int
	LastRescue time.Time
}

// scanLogs reads every child's log.
func (c *cluster) scanLogs() logSummary {
	c.mu.Lock()
	children := append([]*child(nil), c.children...)
	c.mu.Unlock()
	s := logSummary{Outcomes: map[string]int{}, Handled: map[int]time.Time{}}
	type delivery struct {
		delivered int
		outcome   string
		who       string
	}
	bySeq := map[int][]delivery{}
	for _, ch := range children {
		_ = scanLog(ch.logPath, func(rec map[string]any, line []byte) {
			s.Lines++
			if strings.Contains(string(line), Marker) {
				s.MarkerLines = append(s.MarkerLines, ch.name+": "+clip(string(line), 300))
			}
			l := string(line)
			if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") || strings.Contains(l, "goroutine ") && strings.Contains(l, "[running]") {
				s.Crashes = append(s.Crashes, ch.name+": "+clip(l, 300))
			}
			if rec == nil {
				return
			}
			if rec["level"] == "ERROR" {
				s.Errors = append(s.Errors, ch.name+": "+clip(l, 300))
			}
			when, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(rec["time"]))
			if n, ok := rec["num_jobs_retry_scheduled"].(float64); ok && n > 0 {
				s.Rescued += int(n)
				if when.After(s.LastRescue) {
					s.LastRescue = when
				}
			}
			if rec["msg"] != "event" {
				return
			}
			if d, _ := rec["delivered"].(float64); d > 1 && when.After(s.LastRedelivery) {
				s.LastRedelivery = when
			}
			out, _ := rec["outcome"].(string)
			s.Outcomes[out]++
			seq, _ := rec["stream_seq"].(float64)
			if h, ok := s.Handled[int(seq)]; terminal(out) && (!ok || when.Before(h)) {
				s.Handled[int(seq)] = when
			}
			del, _ := rec["delivered"].(float64)
			bySeq[int(seq)] = append(bySeq[int(seq)], delivery{int(del), out, ch.name})
		})
	}
	for seq, ds := range bySeq {
		final := -1
		for _, d := range ds {
			if terminal(d.outcome) && (final < 0 || d.delivered < final) {
				final = d.delivered
			}
		}
		if final < 0 {
			continue
		}
		for _, d := range ds {
			if d.delivered > final {
				s.RedeliveredAfterAck++
				if len(s.RedeliveredExamples) < 5 {
					s.RedeliveredExamples = append(s.RedeliveredExamples, fmt.Sprintf("stream_seq %d: %+v", seq, ds))
				}
				break
			}
		}
	}
	return s
}

// backlogCleared returns how long after t every stream message up to seq
// had been acknowledged or terminated (0 when all were by t), and how many
// of them never were.
func (s *logSummary) backlogCleared(t time.Time, seq uint64) (time.Duration, int) {
	var last time.Duration
	missing := 0
	for i := 1; i <= int(seq); i++ {
		h, ok := s.Handled[i]
		if !ok {
			missing++
			continue
		}
		last = max(last, h.Sub(t))
	}
	return last, missing
}

// terminal reports whether an outcome acknowledged or terminated the
// message.
func terminal(outcome string) bool {
	switch outcome {
	case "accepted", "duplicate", "stale", "deleted", "rejected":
		return true
	}
	return false
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// requireCleanLogs fails on a marker in a log line or a crash.
func requireCleanLogs(t *testing.T, s logSummary) {
	t.Helper()
	if len(s.MarkerLines) > 0 {
		t.Errorf("message text reached the logs (%d lines), e.g.:\n%s", len(s.MarkerLines), strings.Join(s.MarkerLines[:min(3, len(s.MarkerLines))], "\n"))
	}
	if len(s.Crashes) > 0 {
		t.Errorf("a process crashed:\n%s", strings.Join(s.Crashes[:min(5, len(s.Crashes))], "\n"))
	}
	if s.Lines == 0 {
		t.Errorf("no log lines at all: the scan proves nothing")
	}
}

// requireOracle fails when any conversation differs from its oracle or an
// entry is duplicated.
func requireOracle(t *testing.T, v verdict) {
	t.Helper()
	if v.Matching != v.States || v.Lost != 0 || v.Dups != 0 {
		t.Errorf("%s", v)
		for _, d := range v.Diffs[:min(10, len(v.Diffs))] {
			t.Errorf("  %s", d)
		}
	}
}
