package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"

	"github.com/recallhq/recall/internal/devpg"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/testutil/pgtest"
	pt "github.com/recallhq/recall/testutil/pipelinetest"
	"github.com/recallhq/recall/worker"
)

// replicaPair is a private primary (initdb) and a hot standby streaming
// from it (pg_basebackup -R), both run by the test. The machine's server
// does not accept replication connections (its pg_hba.conf has no
// replication line), so the test makes its own primary instead of
// skipping.
type replicaPair struct {
	primary, standby *devpg.Cluster
}

func startReplicaPair(t *testing.T) *replicaPair {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The machine's server shares the two cores: keep both small.
	small := []string{"max_connections=60", "shared_buffers=16MB"}
	p := &replicaPair{primary: pgtest.PrivateCluster(t, small...), standby: pgtest.PrivateCluster(t, small...)}
	if err := p.primary.Init(ctx); err != nil {
		t.Fatalf("initdb: %v", err)
	}
	if err := p.primary.Start(ctx); err != nil {
		t.Fatalf("start the primary: %v", err)
	}
	if err := p.standby.InitStandby(ctx, p.primary); err != nil {
		t.Fatalf("pg_basebackup: %v", err)
	}
	if err := p.standby.Start(ctx); err != nil {
		t.Fatalf("start the standby: %v", err)
	}
	return p
}

// sql runs a statement on database db of cluster c and scans one value.
func sqlValue[T any](t *testing.T, c *devpg.Cluster, db, query string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL(db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v T
	if err := conn.QueryRow(ctx, query).Scan(&v); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v
}

// TestReadReplica runs `recall run` with RECALL_READ_DATABASE_URL naming a
// hot standby of its database: reads come from the standby; long-polls
// still wake (the worker wakes them once the primary has committed) and
// find the change on the primary while the standby has not replayed it; a
// client that passes the last version it saw (min_version) never sees
// version go backward, even while the standby's replay is paused; without
// it, the standby's older state is what it gets.
func TestReadReplica(t *testing.T) {
	t.Parallel()
	p := startReplicaPair(t)
	ctx := t.Context()
	dbURL := p.primary.URL("recall")
	if err := store.Migrate(ctx, dbURL, nil); err != nil {
		t.Fatal(err)
	}
	// Wait until the standby has the database and its schema.
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, p.standby.URL("recall"))
		if err == nil {
			var n int
			err = conn.QueryRow(ctx, `SELECT count(*) FROM recall_conversation`).Scan(&n)
			conn.Close(ctx)
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby has no recall schema after 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !sqlValue[bool](t, p.standby, "recall", `SELECT pg_is_in_recovery()`) {
		t.Fatal("the standby is not in recovery: it is no replica")
	}

	ns := natstest.Start(t)
	cfg := runConfig(dbURL, ns.URL())
	cfg.ReadDatabaseURL = p.standby.URL("recall")
	secret := cfg.JWTSecret
	logger := slog.New(slog.DiscardHandler)
	a, err := start(ctx, cfg, roles{worker: true, api: true}, false, logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.stop(logger) })
	if a.replica == nil {
		t.Fatal("RECALL_READ_DATABASE_URL is set but the API reads no replica")
	}
	tok, err := serviceToken(secret, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)

	type answer struct {
		Version int64 `json:"version"`
		Cursor  int   `json:"cursor"`
		Lagging bool  `json:"lagging"`
	}
	base := fmt.Sprintf("http://%s/v1/users/u/conversations/c", a.Addr)
	do := func(method, target, body string) answer {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, target, res.StatusCode, b)
		}
		var ans answer
		if err := json.Unmarshal(b, &ans); err != nil {
			t.Fatal(err)
		}
		return ans
	}
	get := func(query string) answer { return do(http.MethodGet, base+"/evidence?"+query, "") }
	var history []json.RawMessage
	turn := func(i int) {
		t.Helper()
		history = append(history,
			json.RawMessage(fmt.Sprintf(`{"id":"m%d","role":"user","content":"We must ship step %d by Friday."}`, 2*i, i)),
			json.RawMessage(fmt.Sprintf(`{"id":"m%d","role":"assistant","content":"Agreed: step %d first."}`, 2*i+1, i)))
		h := append(history[:len(history):len(history)], json.RawMessage(fmt.Sprintf(`{"id":"q%d","role":"user","content":"next"}`, i)))
		id := fmt.Sprintf("e%d", i)
		if err := nc.PublishMsg(&nats.Msg{Subject: worker.DefaultSubject, Data: pt.Event(id, "u", "c", h), Header: nats.Header{"Nats-Msg-Id": []string{id}}}); err != nil {
			t.Fatal(err)
		}
	}

	// A long-poll started before the event wakes on the primary's
	// notification and answers the new state.
	polled := make(chan answer, 1)
	go func() { polled <- get("min_cursor=2&wait=20s") }()
	time.Sleep(200 * time.Millisecond)
	turn(0)
	first := <-polled
	if first.Cursor < 2 || first.Lagging {
		t.Fatalf("long-poll answered cursor %d lagging %v, want cursor >= 2", first.Cursor, first.Lagging)
	}
	// Plain reads come from the standby once it has replayed the change.
	deadline = time.Now().Add(20 * time.Second)
	for {
		before, _ := a.replica.ReadCounts()
		ans := get("")
		after, _ := a.replica.ReadCounts()
		if ans.Version >= first.Version && after > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no read answered by the standby with version %d after 20s (last %+v)", first.Version, ans)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Replay paused: the standby lags behind the primary.
	sqlValue[string](t, p.standby, "recall", `SELECT pg_wal_replay_pause()::text`)
	paused := true
	defer func() {
		if paused {
			sqlValue[string](t, p.standby, "recall", `SELECT pg_wal_replay_resume()::text`)
		}
	}()
	polled = make(chan answer, 1)
	go func() { polled <- get(fmt.Sprintf("min_cursor=4&wait=20s&min_version=%d", first.Version)) }()
	time.Sleep(200 * time.Millisecond)
	turn(1)
	second := <-polled
	if second.Cursor < 4 || second.Lagging || second.Version <= first.Version {
		t.Fatalf("long-poll with the standby paused answered %+v, want cursor >= 4 and version > %d (read on the primary)", second, first.Version)
	}
	// The client passes the last version it saw: never backward, though the
	// standby still has the older state.
	for range 5 {
		if got := get(fmt.Sprintf("min_version=%d", second.Version)); got.Version < second.Version {
			t.Fatalf("min_version=%d answered version %d: backward", second.Version, got.Version)
		}
		if got := do(http.MethodPost, base+fmt.Sprintf("/evidence/search?min_version=%d", second.Version), `{"query":"the schema"}`); got.Version < second.Version {
			t.Fatalf("search with min_version=%d answered version %d: backward", second.Version, got.Version)
		}
	}
	// Without it, the answer is the standby's: older (this is what
	// min_version is for).
	if got := get(""); got.Version >= second.Version {
		t.Errorf("a plain read answered version %d while the standby's replay is paused at an older state: it did not read the standby", got.Version)
	}

	// Replay resumed: the standby catches up and answers again; a client
	// polling with min_version across more turns never goes backward.
	sqlValue[string](t, p.standby, "recall", `SELECT pg_wal_replay_resume()::text`)
	paused = false
	last := second.Version
	for i := 2; i < 8; i++ {
		turn(i)
		for range 10 {
			got := get(fmt.Sprintf("min_version=%d", last))
			if got.Version < last {
				t.Fatalf("turn %d: min_version=%d answered version %d", i, last, got.Version)
			}
			last = got.Version
			time.Sleep(10 * time.Millisecond)
		}
	}
	final := get(fmt.Sprintf("min_cursor=%d&wait=20s", 2*8))
	if final.Cursor < 16 {
		t.Errorf("final state cursor %d, want 16", final.Cursor)
	}
	// The same counts are on /metrics.
	res, err := http.Get(fmt.Sprintf("http://%s/metrics", a.Addr))
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{`recall_read_replica_reads_total{source="replica"}`, `recall_read_replica_reads_total{source="primary"}`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	replicaReads, primaryReads := a.replica.ReadCounts()
	t.Logf("reads answered by the standby: %d, by the primary: %d", replicaReads, primaryReads)
	if replicaReads == 0 || primaryReads == 0 {
		t.Errorf("reads: %d from the standby, %d from the primary; want both", replicaReads, primaryReads)
	}
}
