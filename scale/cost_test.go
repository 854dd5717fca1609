package scale_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/internal/devpg"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/testutil/pgtest"
	pt "github.com/recallhq/recall/testutil/pipelinetest"
)

// counters are a Postgres cluster's cumulative figures the model uses.
type counters struct {
	commits  int64 // pg_stat_database.xact_commit of the database
	wal      int64 // bytes of WAL written (pg_current_wal_lsn)
	rows     int64 // rows inserted, updated and deleted in the database
	pgTicks  int64 // CPU clock ticks of every process of the cluster
	selfCPU  time.Duration
	dbBytes  int64 // pg_database_size
	captured time.Time
}

// postgresTicks sums the user and system CPU ticks of the cluster's
// postmaster and its children.
func postgresTicks(t *testing.T, c *devpg.Cluster) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Dir, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pm, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, p := range procs {
		s, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces) in parentheses.
		i := strings.LastIndexByte(string(s), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(s)[i+1:])
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		ppid, _ := strconv.Atoi(f[1])
		if pid != pm && ppid != pm {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += ut + st
	}
	return ticks
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func capture(t *testing.T, c *devpg.Cluster, conn *pgx.Conn) counters {
	t.Helper()
	ctx := t.Context()
	var k counters
	// Statistics reach the shared counters within a second of a
	// transaction's end.
	time.Sleep(1500 * time.Millisecond)
	err := conn.QueryRow(ctx, `
SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
       pg_current_wal_lsn() - '0/0'::pg_lsn,
       (SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables),
       pg_database_size(current_database())`).Scan(&k.commits, &k.wal, &k.rows, &k.dbBytes)
	if err != nil {
		t.Fatal(err)
	}
	k.pgTicks = postgresTicks(t, c)
	k.selfCPU = selfCPU()
	k.captured = time.Now()
	return k
}

// TestCostPerEvent runs recall's pipeline (worker, River and store in this
// process, JetStream in process) against a private Postgres cluster of its
// own, so that every commit, WAL byte and CPU tick of the cluster is the
// pipeline's, over conversations of growing snapshots like recall bench's
// scenario 1; and logs the cost of one event. Under the race detector the
// CPU figures are several times too high. The machine has two cores and
// other work runs on it: the CPU figures are upper bounds.
func TestCostPerEvent(t *testing.T) {
	t.Parallel()
	// The figures of docs/scaling.md come from RECALL_SCALE=full (make
	// scale); the default size keeps the test short under the race
	// detector and checks that the measure works.
	convs, turns := 25, 20
	if os.Getenv("RECALL_SCALE") == "full" {
		convs = 100
	}
	// synchronous_commit on and fsync on: the production settings.
	pg := pgtest.PrivateCluster(t, "max_connections=100", "synchronous_commit=on")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pt.Must(t, pg.Init(ctx))
	pt.Must(t, pg.Start(ctx))
	dbURL := pg.URL("recall")
	pt.Must(t, store.Migrate(ctx, dbURL, nil))

	ns := natstest.Start(t)
	b := pt.NewOnDatabase(t, dbURL, ns.URL(), pt.Subject, pt.Stream)
	b.StartWorker(16)
	conn, err := pgx.Connect(ctx, dbURL)
	pt.Must(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })

	// Conversations of growing snapshots: user and assistant turns, the
	// last snapshot 39 messages long.
	msg := func(i int) json.RawMessage {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		texts := []string{
			"We must keep the p99 under fifty milliseconds for every tenant, whatever the load.",
			"Agreed: we'll use Postgres with one row per conversation and a notify channel for waiters.",
			"Next step: draft the schema and the migration for the evidence table, then review it with the team.",
			"Here is the draft of the schema with the primary key on both ids, as discussed this morning.",
			"Sounds good.",
		}
		return json.RawMessage(fmt.Sprintf(`{"id":"m%d","role":%q,"content":"%s (%d)"}`, i, role, texts[(i*3+i/4)%len(texts)], i))
	}
	history := make([]json.RawMessage, 2*turns)
	for i := range history {
		history[i] = msg(i)
	}
	before := capture(t, pg, conn)
	start := time.Now()
	var payload int64
	events := 0
	for turn := range turns {
		for c := range convs {
			id := fmt.Sprintf("c%d-t%d", c, turn)
			data := pt.Event(id, fmt.Sprintf("u%d", c%10), fmt.Sprintf("c%d", c), history[:2*turn+1])
			payload += int64(len(data))
			b.Publish(id, data)
			events++
		}
	}
	for c := range convs {
		b.WaitCursor(fmt.Sprintf("u%d", c%10), fmt.Sprintf("c%d", c), 2*(turns-1), 2*time.Minute)
	}
	// Extraction done: no job left to work.
	for {
		var left int
		pt.Must(t, conn.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'discarded', 'cancelled')`).Scan(&left))
		if left == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)
	after := capture(t, pg, conn)

	n := float64(events)
	tick := 10 * time.Millisecond // USER_HZ on Linux
	pgCPU := time.Duration(after.pgTicks-before.pgTicks) * tick
	inProc := after.selfCPU - before.selfCPU
	t.Logf("%d events (%d conversations × %d growing snapshots, last %d messages, %.1f KB average payload) in %s: %.0f events/s on this machine",
		events, convs, turns, 2*turns-1, float64(payload)/n/1024, elapsed.Round(time.Millisecond), n/elapsed.Seconds())
	t.Logf("per event: Postgres CPU %.2f ms; recall (worker, River, store) with the in-process NATS server and publisher %.2f ms CPU",
		float64(pgCPU)/float64(time.Millisecond)/n, float64(inProc)/float64(time.Millisecond)/n)
	t.Logf("per event: %.2f commits, %.1f KB of WAL, %.1f rows written (inserted, updated or deleted), database +%.1f KB",
		float64(after.commits-before.commits)/n, float64(after.wal-before.wal)/1024/n, float64(after.rows-before.rows)/n,
		float64(after.dbBytes-before.dbBytes)/1024/n)
	if after.commits <= before.commits || after.wal <= before.wal {
		t.Errorf("no commits or WAL counted (%+v → %+v): the measure is broken", before, after)
	}
}
