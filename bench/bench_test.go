package bench_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/recallhq/recall/cmd/recall/cli"
	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/testutil/pgtest"
)

// childEnv makes this test binary act as the recall command, so that the
// memory scenario can run it as its child `recall worker`.
const childEnv = "RECALL_BENCH_TEST_AS_RECALL"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestBenchCommand runs `recall bench --quick --json` at smoke-test sizes
// through every scenario, so that the command cannot rot unnoticed.
func TestBenchCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every scenario against Postgres and NATS")
	}
	ns := natstest.Start(t)
	t.Setenv("DATABASE_URL", pgtest.ServerURL())
	t.Setenv("NATS_URL", ns.URL())
	t.Setenv("RECALL_CONCURRENCY", "4")
	t.Setenv(childEnv, "1") // inherited by the child worker only
	var stdout, stderr bytes.Buffer
	code := cli.Main([]string{"bench", "--quick", "--json", "--tiny"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("recall bench exited %d\nstderr:\n%s", code, stderr.String())
	}
	var res map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout.String())
	}
	for _, field := range []string{
		"pipeline_events_per_s", "river_noop_jobs_per_s", "pipeline_ratio",
		"lag_p50_ms", "lag_p99_ms", "lag_p999_ms",
		"append_cost_ratio_10k_vs_10", "full_snapshot_mb_per_s", "cost_archive_entries",
		"read_requests_per_s", "read_baseline_requests_per_s", "read_ratio", "read_p99_ms",
		"worker_rss_mib", "worker_rss_big_event_mib", "worker_rss_pipeline_mib",
		"coalesce_extractions_per_100",
		"search_archive_entries", "append_20k_archive_ms", "append_10_messages_ms", "append_cost_ratio_20k_archive",
		"search_p50_ms", "search_p99_ms", "search_requests_per_s", "search_baseline_get_p99_ms",
		"context_build_p99_ms", "context_requests_per_s", "context_baseline_requests_per_s", "context_ratio",
		"users_archive_entries", "export_mb_per_s", "delete_user_seconds", "jwks_requests_per_s", "jwks_read_ratio",
	} {
		v, ok := res[field].(float64)
		if !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", field, res[field])
		}
	}
	if plan, _ := res["search_plan"].([]any); len(plan) == 0 {
		t.Errorf("search_plan = %v, want the gist of the candidates query's plan", res["search_plan"])
	}
	if !strings.Contains(stderr.String(), "dropped") {
		t.Errorf("the benchmark's database was not reported dropped:\n%s", stderr.String())
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr.String())
	}
}

// TestBenchPacedAlone runs `recall bench --only paced` without --recall: the
// paced scenario starts recall as child processes, so the run must find its
// own executable even when no other scenario that does so is selected.
func TestBenchPacedAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the paced scenario against Postgres and NATS")
	}
	ns := natstest.Start(t)
	t.Setenv("DATABASE_URL", pgtest.ServerURL())
	t.Setenv("NATS_URL", ns.URL())
	t.Setenv("RECALL_CONCURRENCY", "4")
	t.Setenv(childEnv, "1") // inherited by the child worker and API only
	var stdout, stderr bytes.Buffer
	code := cli.Main([]string{"bench", "--json", "--tiny", "--only", "paced"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("recall bench exited %d\nstderr:\n%s", code, stderr.String())
	}
	var res map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout.String())
	}
	if failed, ok := res["failed"]; ok {
		t.Errorf("failed = %v, want no scenario failed", failed)
	}
	if v, _ := res["capacity_events_per_s"].(float64); v <= 0 {
		t.Errorf("capacity_events_per_s = %v, want a positive number", res["capacity_events_per_s"])
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr.String())
	}
}
