package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/internal/devpg"
	"github.com/recallhq/recall/testutil/pgtest"
)

// TestDevWithPostgres runs recall dev against the machine's Postgres, with
// a database of its own that dev creates: the banner's publish command,
// the read API against the pure fold, its authorisation, and a drain on
// SIGINT.
func TestDevWithPostgres(t *testing.T) {
	dbURL := pgtest.UncreatedDatabase(t)
	d := startDev(t, devConfig{DatabaseURL: dbURL})

	// dev created the database DATABASE_URL names.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("the database of DATABASE_URL does not exist after recall dev started: %v", err)
	}
	conn.Close(ctx)
	u, _ := url.Parse(dbURL)
	if !strings.Contains(d.PostgresURL, u.Path) {
		t.Errorf("the banner's Postgres is %q, want the database %s", d.PostgresURL, u.Path)
	}

	for _, path := range []string{"/healthz", "/readyz"} {
		if status, body := get(t, d.APIURL+path, ""); status != 200 {
			t.Errorf("GET %s: %d %s, want 200", path, status, body)
		}
	}

	// The example the banner prints.
	c := sample(t, "planning")
	out := runRecall(t, d.env(), "publish", "--example", "planning", "--turns", "--wait")
	t.Run("publish output", func(t *testing.T) { requireEvidence(t, out, c) })

	endpoint := evidenceURL(d.APIURL, c.UserID, c.ConversationID)
	status, body := get(t, endpoint, d.Token)
	if status != 200 {
		t.Fatalf("GET evidence with the banner's token: %d %s", status, body)
	}
	t.Run("read API", func(t *testing.T) { requireEvidence(t, body, c) })

	secret := devSecret(t, d.dataDir)
	tests := []struct {
		name       string
		token      string
		wantStatus int
	}{
		{"banner's service token", d.Token, 200},
		{"the user's own token", sign(t, secret, c.UserID, time.Hour), 200},
		{"another user's token", sign(t, secret, "someone-else", time.Hour), 403},
		{"no token", "", 401},
		{"token signed with another secret", sign(t, "not-the-dev-secret-but-just-as-long-as-one", c.UserID, time.Hour), 401},
		{"expired token", sign(t, secret, c.UserID, -time.Minute), 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := get(t, endpoint, tt.token)
			if status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", status, tt.wantStatus, body)
			}
			if status == 200 {
				requireEvidence(t, body, c)
				return
			}
			var e struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Errorf("error body %s, want {\"error\":{\"code\",\"message\"}}", body)
			}
			if bytes.Contains(body, []byte("billing")) {
				t.Errorf("a refused request saw evidence: %s", body)
			}
		})
	}

	d.interrupt()
	requireClosed(t, "the read API", d.APIURL)
	requireClosed(t, "NATS", d.NATSURL)
}

// TestDevPrivateCluster runs recall dev where no Postgres answers: it must
// start a private cluster in its data folder, work as with any Postgres,
// keep its data across a restart, and stop the cluster when it exits.
func TestDevPrivateCluster(t *testing.T) {
	bin, err := devpg.Find()
	if err != nil {
		t.Fatalf("this test needs the PostgreSQL server binaries: %v", err)
	}
	dataDir := reachableTempDir(t)
	cluster, err := devpg.New(bin, filepath.Join(dataDir, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	pgData := filepath.Join(cluster.Dir, "data")
	t.Cleanup(func() {
		// Whatever happened, leave no server behind.
		if pgCtlStatus(t, bin, pgData) == 0 {
			t.Errorf("the private cluster in %s is still running at the end of the test; stopping it", pgData)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := cluster.Stop(ctx); err != nil {
				t.Errorf("stop the private cluster: %v", err)
			}
		}
	})
	// No DATABASE_URL: the machine's Postgres answers at the default URL,
	// so the private cluster is asked for.
	cfg := devConfig{DataDir: dataDir, Env: []string{"RECALL_DEV_POSTGRES=private"}}

	d := startDev(t, cfg)
	if _, err := os.Stat(filepath.Join(pgData, "PG_VERSION")); err != nil {
		t.Fatalf("no private cluster in %s: %v", pgData, err)
	}
	if code := pgCtlStatus(t, bin, pgData); code != 0 {
		t.Fatalf("pg_ctl status of %s: exit %d while recall dev runs, want 0", pgData, code)
	}
	pgURL, err := url.Parse(d.PostgresURL)
	if err != nil || pgURL.Port() == "" || pgURL.Port() == "5432" {
		t.Fatalf("the banner's Postgres is %q: want the private cluster's URL", d.PostgresURL)
	}

	// A conversation file, as a user would publish it.
	c := sample(t, "coding")
	out := runRecall(t, d.env(), "publish", "--turns", "--wait", filepath.Join("..", "examples", "conversations", "coding.json"))
	t.Run("publish output", func(t *testing.T) { requireEvidence(t, out, c) })
	status, body := get(t, evidenceURL(d.APIURL, c.UserID, c.ConversationID), d.Token)
	if status != 200 {
		t.Fatalf("GET evidence: %d %s", status, body)
	}
	t.Run("read API", func(t *testing.T) { requireEvidence(t, body, c) })
	status, body = get(t, evidenceURL(d.APIURL, c.UserID, c.ConversationID), sign(t, devSecret(t, dataDir), "someone-else", time.Hour))
	if status != 403 {
		t.Errorf("another user's token: %d %s, want 403", status, body)
	}

	d.interrupt()
	requireStopped(t, bin, pgData, pgURL)

	// Again on the same data folder: the same cluster, the same evidence.
	d = startDev(t, cfg)
	status, body = get(t, evidenceURL(d.APIURL, c.UserID, c.ConversationID), d.Token)
	if status != 200 {
		t.Fatalf("GET evidence after a restart: %d %s", status, body)
	}
	t.Run("after restart", func(t *testing.T) { requireEvidence(t, body, c) })
	d.interrupt()
	restarted, _ := url.Parse(d.PostgresURL)
	requireStopped(t, bin, pgData, restarted)
}

// TestDevNoPostgres runs recall dev where it cannot have the Postgres it
// is told to use: it must refuse, say why and what to do, print no banner
// and make no cluster.
func TestDevNoPostgres(t *testing.T) {
	nowhere := t.TempDir()
	tests := []struct {
		name string
		cfg  devConfig
		want []string
	}{
		{
			// A DATABASE_URL that was set and does not answer is an error,
			// not a reason to start a private cluster.
			name: "explicit DATABASE_URL that does not answer",
			cfg:  devConfig{DatabaseURL: closedPostgresURL(t)},
			want: []string{"no Postgres answers at", "the DATABASE_URL you set", "unset DATABASE_URL"},
		},
		{
			name: "private cluster without server binaries",
			cfg: devConfig{Env: []string{
				"RECALL_DEV_POSTGRES=private",
				"PATH=" + nowhere,
				devpg.BinGlobEnv + "=" + filepath.Join(nowhere, "*", "bin"),
			}},
			want: []string{"cannot start a private Postgres", "no PostgreSQL server binaries found",
				"apt-get install postgresql", "brew install postgresql", "DATABASE_URL"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := startDevProcess(t, tt.cfg)
			select {
			case <-d.Exited():
			case <-time.After(30 * time.Second):
				t.Fatal("recall dev still runs 30s after it was started")
			}
			if code := d.Cmd.ProcessState.ExitCode(); code == 0 || code == -1 {
				t.Fatalf("recall dev exited %d (%v), want a non-zero exit", code, d.Cmd.ProcessState)
			}
			if strings.Contains(d.Stdout.String(), "RECALL_TOKEN") {
				t.Errorf("recall dev printed its banner:\n%s", d.Stdout.String())
			}
			stderr := d.Stderr.String()
			for _, want := range tt.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("recall dev's error does not say %q:\n%s", want, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(d.dataDir, "postgres")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("recall dev made a cluster folder: %v", err)
			}
			t.Logf("recall dev refused with exit %d: %s", d.Cmd.ProcessState.ExitCode(), strings.TrimSpace(stderr))
		})
	}
}

// reachableTempDir returns a temp dir that the postgres user can reach,
// so that a private cluster stays inside it.
func reachableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// pgCtlStatus runs pg_ctl status on pgData (as the postgres user when the
// test runs as root) and returns its exit code: 0 running, 3 not.
func pgCtlStatus(t *testing.T, bin, pgData string) int {
	t.Helper()
	code, _ := pgCtl(t, bin, "status", "-D", pgData)
	return code
}

func pgCtl(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "pg_ctl"), args...)
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, pg_ctl needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		cmd.Dir = "/"
	}
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exitErr):
		return exitErr.ExitCode(), string(out)
	}
	t.Fatalf("pg_ctl %s: %v: %s", strings.Join(args, " "), err, out)
	return -1, ""
}

// requireStopped fails unless the private cluster in pgData is stopped:
// pg_ctl says no server is running, no process runs on pgData, and
// nothing answers at its port.
func requireStopped(t *testing.T, bin, pgData string, pgURL *url.URL) {
	t.Helper()
	code, out := pgCtl(t, bin, "status", "-D", pgData)
	if code != 3 || !strings.Contains(out, "no server running") {
		t.Errorf("pg_ctl status after recall dev exited: exit %d, %q; want 3, \"no server running\"", code, strings.TrimSpace(out))
	}
	if pids := processesWith(t, pgData); len(pids) > 0 {
		t.Errorf("processes still run on %s after recall dev exited: %v", pgData, pids)
	}
	if _, err := os.Stat(filepath.Join(pgData, "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("postmaster.pid remains in %s: %v", pgData, err)
	}
	requireClosed(t, "the private Postgres", "postgres://"+pgURL.Host)
}

// processesWith returns the pids and command lines of the processes whose
// command line mentions s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("list processes: %v", err)
	}
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone
		}
		line := string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		if strings.Contains(line, s) {
			out = append(out, e.Name()+": "+strings.TrimSpace(line))
		}
	}
	return out
}

// devSecret returns the JWT secret recall dev keeps in its data folder.
func devSecret(t *testing.T, dataDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "jwt-secret"))
	if err != nil {
		t.Fatalf("recall dev's JWT secret: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// sign returns a token for sub that expires in ttl.
func sign(t *testing.T, secret, sub string, ttl time.Duration) string {
	t.Helper()
	s, err := apiclient.Sign([]byte(secret), sub, ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
