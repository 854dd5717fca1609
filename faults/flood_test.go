package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// metricValue reads one unlabelled metric from a /metrics page.
func metricValue(t *testing.T, client *http.Client, base, name string) float64 {
	t.Helper()
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no metric %s on /metrics", name)
	return 0
}

// TestWaiterFlood sends many concurrent long-polls with one token to a
// `recall run` process while the pipeline ingests: at most
// RECALL_MAX_WAITERS of them wait, the others are answered 429 with
// Retry-After at once; ingest goes on; afterwards no goroutine, waiter or
// connection is left over, and the API never held more connections than
// its own pool's bound.
func TestWaiterFlood(t *testing.T) {
	t.Parallel()
	waiters, maxWaiters, convs, turns := 300, 50, 20, 6
	if long {
		waiters, maxWaiters, convs, turns = 5000, 1000, 200, 10
	}
	const apiConns = 4
	c := newCluster(t, "", "RECALL_JWT_SECRET="+jwtSecret, "RECALL_HTTP_ADDR=127.0.0.1:0",
		fmt.Sprintf("RECALL_MAX_WAITERS=%d", maxWaiters), fmt.Sprintf("RECALL_API_MAX_CONNS=%d", apiConns), "RECALL_LOG_LEVEL=info")
	srv := c.start("run", "run")
	base := "http://" + srv.waitLog(t, "read API listening", 60*time.Second)["addr"].(string)
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: waiters + 10}}
	token := "Bearer " + hs256(userClaims("flood"))
	ctx := context.Background()

	// Ingest alone first: it warms the process up (pools, River) before the
	// goroutines are counted, and is the comparison for the throughput
	// (asserted in the long version only: on two shared cores the short
	// run's figures are noise).
	ingest := func(prefix string) time.Duration {
		w := newWorkload(t, 21, prefix, convs, turns)
		start := time.Now()
		if err := c.pub.run(ctx, w.Events, 0, 4); err != nil {
			t.Fatal(err)
		}
		v, _ := waitConverged(t, c.pool, w.Convs, 3*time.Minute)
		requireOracle(t, v)
		return time.Since(start)
	}
	alone := ingest("alone")
	goroutinesBefore := metricValue(t, client, base, "go_goroutines")

	var ok, tooMany, other, noRetryAfter, notLagging atomic.Int64
	var wg sync.WaitGroup
	floodStart := time.Now()
	for i := range waiters {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/v1/users/flood/conversations/c-%d/evidence?min_cursor=1000000&wait=5s", base, i%5), nil)
			req.Header.Set("Authorization", token)
			resp, err := client.Do(req)
			if err != nil {
				other.Add(1)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				ok.Add(1)
				var r struct{ Lagging bool }
				if json.Unmarshal(body, &r) != nil || !r.Lagging {
					notLagging.Add(1)
				}
			case http.StatusTooManyRequests:
				tooMany.Add(1)
				if resp.Header.Get("Retry-After") == "" {
					noRetryAfter.Add(1)
				}
			default:
				other.Add(1)
			}
		})
	}
	// The pipeline runs during the flood.
	during := ingest("flood")
	wg.Wait()
	floodTook := time.Since(floodStart)

	var apiConnsSeen int
	if err := c.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'recall_api'`).Scan(&apiConnsSeen); err != nil {
		t.Fatal(err)
	}
	if ok.Load() > int64(maxWaiters) || ok.Load()+tooMany.Load() != int64(waiters) || other.Load() != 0 {
		t.Errorf("%d waited, %d answered 429, %d other; want at most %d waiting and the rest 429", ok.Load(), tooMany.Load(), other.Load(), maxWaiters)
	}
	if tooMany.Load() == 0 {
		t.Errorf("no request was answered 429: the flood did not pass the cap")
	}
	if noRetryAfter.Load() != 0 || notLagging.Load() != 0 {
		t.Errorf("%d 429s without Retry-After, %d waiters not answered lagging", noRetryAfter.Load(), notLagging.Load())
	}
	if apiConnsSeen > apiConns {
		t.Errorf("the API holds %d connections, more than its pool's bound %d", apiConnsSeen, apiConns)
	}
	// Nothing left over once the flood is answered: one goroutine per
	// request, or per connection, would show by hundreds; River's and
	// pgx's own come and go by ten or so (the API's unit tests check the
	// per-key watches exactly, with goleak).
	client.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	var goroutinesAfter, waitersAfter float64
	for {
		goroutinesAfter = metricValue(t, client, base, "go_goroutines")
		waitersAfter = metricValue(t, client, base, "recall_http_waiters")
		if goroutinesAfter <= goroutinesBefore+25 && waitersAfter == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("after the flood: %v goroutines (%v before), %v waiters", goroutinesAfter, goroutinesBefore, waitersAfter)
			break
		}
		client.CloseIdleConnections()
		time.Sleep(200 * time.Millisecond)
	}
	r := alone.Seconds() / during.Seconds()
	ratio := fmt.Sprintf("%.2f", r)
	if long {
		if r < 0.8 {
			t.Errorf("ingest during the flood took %v, alone %v: throughput %.2fx, want at least 0.8x", during, alone, r)
		}
	}
	requireCleanLogs(t, c.scanLogs())
	results.add(t, row{Scenario: "9 waiter flood", Published: c.pub.accepted(), Accepted: c.pub.accepted(), States: convs, Matching: convs,
		Note: fmt.Sprintf("%d long-polls, cap %d: %d waited, %d got 429 (flood answered in %v); ingest %v during (throughput vs alone %s); "+
			"API connections %d of %d; goroutines %v before, %v after", waiters, maxWaiters, ok.Load(), tooMany.Load(), floodTook.Round(time.Millisecond),
			during.Round(time.Millisecond), ratio, apiConnsSeen, apiConns, goroutinesBefore, goroutinesAfter)})
}
