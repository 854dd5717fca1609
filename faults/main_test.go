package faults

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallhq/recall/testutil/proctest"
)

// recallBin is the binary TestMain builds from ./cmd/recall.
var recallBin string

// long reports whether RECALL_FAULTS=long asks for issue 7's sizes.
var long = os.Getenv("RECALL_FAULTS") == "long"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	start := time.Now()
	bin, remove, err := proctest.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	defer remove()
	recallBin = bin
	fmt.Fprintf(os.Stderr, "faults: built recall in %s (mode %s)\n", time.Since(start).Round(time.Millisecond), mode())
	sweepStaleClusters()
	code := m.Run()
	removeSuiteCluster()
	table := results.table()
	if table != "" {
		fmt.Println(table)
		if f := os.Getenv("RECALL_FAULTS_REPORT"); f != "" {
			_ = os.WriteFile(f, []byte(table+"\n"), 0o644)
		}
	}
	return code
}

func mode() string {
	if long {
		return "long"
	}
	return "short"
}

// row is one scenario's figures.
type row struct {
	Scenario  string
	Published int           // distinct events published
	Accepted  int           // events the stream acknowledged (stored)
	States    int           // conversations
	Matching  int           // conversations whose state equals the oracle
	Dups      int           // entries whose index appears twice in a state
	Lost      int           // conversations that differ from the oracle
	Recover   time.Duration // from the end of the last fault to convergence
	Note      string
}

type resultTable struct {
	mu   sync.Mutex
	rows []row
}

var results resultTable

func (r *resultTable) add(t *testing.T, x row) {
	t.Helper()
	r.mu.Lock()
	r.rows = append(r.rows, x)
	r.mu.Unlock()
	t.Log("\n" + formatRows([]row{x}))
}

func (r *resultTable) table() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rows) == 0 {
		return ""
	}
	return "fault suite (" + mode() + ")\n" + formatRows(r.rows)
}

func formatRows(rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %-28s | %9s | %8s | %15s | %4s | %4s | %10s | %s\n", "scenario", "published", "accepted", "states = oracle", "dups", "lost", "recover", "note")
	fmt.Fprintf(&b, "|%s|%s|%s|%s|%s|%s|%s|%s\n", strings.Repeat("-", 30), strings.Repeat("-", 11), strings.Repeat("-", 10), strings.Repeat("-", 17), strings.Repeat("-", 6), strings.Repeat("-", 6), strings.Repeat("-", 12), strings.Repeat("-", 6))
	for _, x := range rows {
		rec := "-"
		if x.Recover > 0 {
			rec = x.Recover.Round(10 * time.Millisecond).String()
		} else if x.Recover == 0 && x.Scenario[0] != '6' {
			rec = "0s"
		}
		fmt.Fprintf(&b, "| %-28s | %9d | %8d | %7d / %-5d | %4d | %4d | %10s | %s\n", x.Scenario, x.Published, x.Accepted, x.Matching, x.States, x.Dups, x.Lost, rec, x.Note)
	}
	return strings.TrimRight(b.String(), "\n")
}
