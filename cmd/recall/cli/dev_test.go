package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/recallhq/recall/testutil/pgtest"
	"github.com/recallhq/recall/testutil/proctest"
)

// devBannerFirstLine is the first line of recall dev's banner.
const devBannerFirstLine = "recall dev is running. Ctrl-C drains and stops it."

// TestDevGreetsFirst: recall dev prints its banner before any log line, and
// logs migrations at info only when it applies them: the second start
// against a migrated database logs none at info.
func TestDevGreetsFirst(t *testing.T) {
	t.Parallel()
	dbURL, dataDir := pgtest.NewDatabase(t), t.TempDir()
	tests := []struct {
		name string
		// wantInfoMigrations says whether the start applies migrations
		// and so logs them at info.
		wantInfoMigrations bool
	}{
		{"first start migrates", true},
		{"second start finds the database migrated", false},
	}
	for _, tt := range tests {
		// Not parallel: the second start runs on the first one's database.
		t.Run(tt.name, func(t *testing.T) {
			lines := runDevUntilBanner(t, dbURL, dataDir)
			banner, firstLog := -1, -1
			var infoMigrations, debugMigrations []string
			for i, line := range lines {
				if line == devBannerFirstLine && banner < 0 {
					banner = i
				}
				var rec struct{ Level, Msg string }
				if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &rec) != nil {
					continue
				}
				if firstLog < 0 {
					firstLog = i
				}
				if !strings.Contains(strings.ToLower(rec.Msg), "migration") {
					continue
				}
				if rec.Level == "DEBUG" {
					debugMigrations = append(debugMigrations, rec.Msg)
				} else {
					infoMigrations = append(infoMigrations, rec.Msg)
				}
			}
			output := strings.Join(lines, "\n")
			if banner < 0 {
				t.Fatalf("no banner line %q:\n%s", devBannerFirstLine, output)
			}
			if firstLog >= 0 && firstLog < banner {
				t.Errorf("log line %d comes before the banner's first line (%d):\n%s", firstLog+1, banner+1, output)
			}
			switch {
			case tt.wantInfoMigrations && len(infoMigrations) == 0:
				t.Errorf("no migration logged at info, want one line per applied migration:\n%s", output)
			case !tt.wantInfoMigrations && len(infoMigrations) > 0:
				t.Errorf("migration lines above debug on an up-to-date database: %q", infoMigrations)
			case !tt.wantInfoMigrations && len(debugMigrations) == 0:
				t.Errorf("no migration line at debug, want the up-to-date check logged there:\n%s", output)
			}
		})
	}
}

// runDevUntilBanner runs recall dev on dbURL and dataDir at log level
// debug, in JSON, until its banner is printed, then stops it. It returns
// stdout and stderr interleaved as they were written, line by line.
func runDevUntilBanner(t *testing.T, dbURL, dataDir string) []string {
	t.Helper()
	var out proctest.Buffer
	env := map[string]string{
		"DATABASE_URL":            dbURL,
		"RECALL_HTTP_ADDR":        "127.0.0.1:0",
		"RECALL_LOG_FORMAT":       "json",
		"RECALL_LOG_LEVEL":        "debug",
		"RECALL_SHUTDOWN_TIMEOUT": "5s",
	}
	e := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runDev(ctx, e, []string{"-data-dir", dataDir, "-nats-port", fmt.Sprint(proctest.FreePort(t))})
	}()
	deadline := time.After(time.Minute)
	for !strings.Contains(out.String(), "export RECALL_TOKEN=") {
		select {
		case err := <-done:
			t.Fatalf("recall dev returned before its banner: %v\n%s", err, out.String())
		case <-deadline:
			cancel()
			<-done
			t.Fatalf("recall dev printed no banner within a minute:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("recall dev: %v\n%s", err, out.String())
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}
