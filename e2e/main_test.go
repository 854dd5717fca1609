package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/examples"
	"github.com/recallhq/recall/testutil/pgtest"
)

// recallBin is the recall binary, built once by TestMain.
var recallBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "recall-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	recallBin = filepath.Join(dir, "recall")
	// go test puts its own go first on PATH.
	build := exec.Command("go", "build", "-o", recallBin, "github.com/recallhq/recall/cmd/recall")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/recall: %v\n", err)
		return 1
	}
	return m.Run()
}

// drainTimeout is the RECALL_SHUTDOWN_TIMEOUT the tests give recall dev; it
// must exit 0 within it after SIGINT.
const drainTimeout = 10 * time.Second

// childEnv returns the test's environment without recall's settings, plus
// extra (KEY=value).
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DATABASE_URL" || k == "NATS_URL" || strings.HasPrefix(k, "RECALL_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// devProc is a running `recall dev` and what its banner said.
type devProc struct {
	t       *testing.T
	cmd     *exec.Cmd
	dataDir string
	stdout  syncBuffer
	stderr  syncBuffer
	exited  chan struct{} // closed when the process has exited

	// From the banner.
	APIURL, NATSURL, Token, PostgresURL string
}

// devConfig is what a test gives recall dev.
type devConfig struct {
	// DatabaseURL is DATABASE_URL.
	DatabaseURL string
	// DataDir is RECALL_DEV_DIR. Defaults to a temp dir.
	DataDir string
	// Env is more of the environment (KEY=value).
	Env []string
	// OwnNATSPort lets dev choose its NATS port (the last run's, else
	// 4222, else a free one) instead of giving it a free one.
	OwnNATSPort bool
}

// startDev starts recall dev on free ports and returns once its banner is
// printed. It fails the test when dev exits or prints no banner within
// two minutes. At the end of the test a dev still running gets SIGINT, then
// SIGKILL.
func startDev(t *testing.T, cfg devConfig) *devProc {
	t.Helper()
	d := startDevProcess(t, cfg)
	deadline := time.After(2 * time.Minute)
	for {
		if d.parseBanner() {
			t.Logf("recall dev: API %s, NATS %s, Postgres %s", d.APIURL, d.NATSURL, d.PostgresURL)
			return d
		}
		select {
		case <-d.exited:
			if d.parseBanner() {
				// Printed and then exited: the test's checks will fail.
				return d
			}
			t.Fatalf("recall dev exited before its banner: %v\nstdout:\n%s\nstderr:\n%s", d.cmd.ProcessState, d.stdout.String(), d.stderr.String())
		case <-deadline:
			t.Fatalf("recall dev printed no banner within 2m\nstdout:\n%s\nstderr:\n%s", d.stdout.String(), d.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startDevProcess starts recall dev and does not wait for anything.
func startDevProcess(t *testing.T, cfg devConfig) *devProc {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	d := &devProc{t: t, dataDir: cfg.DataDir, exited: make(chan struct{})}
	env := []string{
		"DATABASE_URL=" + cfg.DatabaseURL,
		"RECALL_HTTP_ADDR=127.0.0.1:0",
		"RECALL_DEV_DIR=" + cfg.DataDir,
		"RECALL_SHUTDOWN_TIMEOUT=" + drainTimeout.String(),
		"RECALL_LOG_FORMAT=text",
	}
	args := []string{"dev", "--nats-port", fmt.Sprint(freePort(t))}
	if cfg.OwnNATSPort {
		args = args[:1]
	}
	d.cmd = exec.Command(recallBin, args...)
	d.cmd.Env = childEnv(append(env, cfg.Env...)...)
	d.cmd.Stdout, d.cmd.Stderr = &d.stdout, &d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start recall dev: %v", err)
	}
	go func() {
		_ = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			// The test failed before it stopped dev: drain, then kill.
			_ = d.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-d.exited:
			case <-time.After(drainTimeout + 30*time.Second):
				_ = d.cmd.Process.Kill()
				<-d.exited
			}
		}
		if t.Failed() {
			t.Logf("recall dev stdout:\n%s\nrecall dev stderr:\n%s", d.stdout.String(), d.stderr.String())
		}
	})
	return d
}

// parseBanner reads the export lines of the banner, and reports whether
// all three were printed.
func (d *devProc) parseBanner() bool {
	sc := bufio.NewScanner(strings.NewReader(d.stdout.String()))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "export RECALL_API_URL="); ok {
			d.APIURL = v
		}
		if v, ok := strings.CutPrefix(line, "export NATS_URL="); ok {
			d.NATSURL = v
		}
		if v, ok := strings.CutPrefix(line, "export RECALL_TOKEN="); ok {
			d.Token = v
		}
		if v, ok := strings.CutPrefix(line, "Postgres "); ok {
			d.PostgresURL = strings.TrimSpace(v)
		}
	}
	return d.APIURL != "" && d.NATSURL != "" && d.Token != ""
}

// env returns what a user pastes from the banner.
func (d *devProc) env() []string {
	return childEnv("RECALL_API_URL="+d.APIURL, "NATS_URL="+d.NATSURL, "RECALL_TOKEN="+d.Token)
}

// interrupt sends SIGINT, waits for the exit and requires exit 0 within
// the drain timeout. It returns how long the exit took.
func (d *devProc) interrupt() time.Duration {
	d.t.Helper()
	start := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		d.t.Fatalf("SIGINT: %v", err)
	}
	select {
	case <-d.exited:
	case <-time.After(drainTimeout + 30*time.Second):
		d.t.Fatalf("recall dev did not exit within %s of SIGINT", drainTimeout+30*time.Second)
	}
	took := time.Since(start)
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		d.t.Fatalf("recall dev exited %d after SIGINT, want 0 (%v)", code, d.cmd.ProcessState)
	}
	if took > drainTimeout {
		d.t.Fatalf("recall dev took %s to exit after SIGINT, longer than its drain timeout %s", took, drainTimeout)
	}
	d.t.Logf("recall dev exited 0, %s after SIGINT", took.Round(time.Millisecond))
	return took
}

// requireClosed fails unless nothing accepts connections at the address of
// rawURL (http://host:port or nats://host:port).
func requireClosed(t *testing.T, what, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("parse %s URL %q: %v", what, rawURL, err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err == nil {
		conn.Close()
		t.Fatalf("%s at %s still accepts connections after recall dev exited", what, u.Host)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// closedPostgresURL returns a DATABASE_URL at which nothing answers.
func closedPostgresURL(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/recall?sslmode=disable", freePort(t))
}

// newDatabaseURL returns the URL of a database that does not exist yet on
// the test server (recall dev creates it), and drops it at the end.
func newDatabaseURL(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, pgtest.ServerURL())
	if err != nil {
		t.Fatalf("Postgres is not reachable at TEST_DATABASE_URL (default %s): start it, or set TEST_DATABASE_URL: %v", pgtest.DefaultURL, err)
	}
	admin.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "recall_e2e_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, pgtest.ServerURL())
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// runRecall runs the recall binary to its end, and returns its stdout.
// It fails the test on a non-zero exit.
func runRecall(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, recallBin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("recall %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	t.Logf("recall %s: exit 0 in %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return stdout.Bytes()
}

// get makes a GET request with token (none when "") and returns the
// status and body.
func get(t *testing.T, rawURL, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 40 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read the body: %v", rawURL, err)
	}
	return resp.StatusCode, body
}

func evidenceURL(apiURL, user, conv string) string {
	return strings.TrimRight(apiURL, "/") + "/v1/users/" + url.PathEscape(user) + "/conversations/" + url.PathEscape(conv) + "/evidence"
}

// conversation is a sample conversation and its pure fold.
type conversation struct {
	UserID, ConversationID string
	// Want is evidence.Fold of the whole history over a new state.
	Want evidence.State
}

func sample(t *testing.T, name string) conversation {
	t.Helper()
	data, err := examples.Conversation(name)
	if err != nil {
		t.Fatalf("example %s: %v", name, err)
	}
	var c struct {
		UserID         string          `json:"user_id"`
		ConversationID string          `json:"conversation_id"`
		Messages       json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("example %s: %v", name, err)
	}
	msgs, err := checkpoint.DecodeMessages(c.Messages)
	if err != nil {
		t.Fatalf("example %s: %v", name, err)
	}
	st, outcome, err := evidence.Fold(evidence.NewState(), msgs, nil)
	if err != nil || outcome != checkpoint.Applied {
		t.Fatalf("fold example %s: %v, %v", name, outcome, err)
	}
	if st.Cursor != evidence.NewestRequest(msgs) || st.Buckets.Len() == 0 {
		t.Fatalf("example %s folds to cursor %d with %d entries: not a useful sample", name, st.Cursor, st.Buckets.Len())
	}
	return conversation{UserID: c.UserID, ConversationID: c.ConversationID, Want: st}
}

// requireEvidence checks a read API answer against the pure fold: every
// field but version and updated_at must equal the answer rendered from the
// fold's state, version must be positive and updated_at set.
func requireEvidence(t *testing.T, body []byte, c conversation) {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("evidence is not JSON: %v\n%s", err, body)
	}
	var meta struct {
		Version   int64   `json:"version"`
		UpdatedAt *string `json:"updated_at"`
	}
	if err := json.Unmarshal(body, &meta); err != nil {
		t.Fatalf("evidence: %v", err)
	}
	if meta.Version <= 0 || meta.UpdatedAt == nil {
		t.Errorf("version %d, updated_at %v: want a positive version and a time", meta.Version, meta.UpdatedAt)
	}
	rec := evidence.Record{
		UserID:         c.UserID,
		ConversationID: c.ConversationID,
		Cursor:         c.Want.Cursor,
		MessageCount:   c.Want.MessageCount,
		PrefixDigest:   c.Want.PrefixDigest,
		Body:           evidence.AppendBody(nil, &c.Want, 0),
	}
	var want map[string]any
	if err := json.Unmarshal(rec.AppendJSON(nil, false), &want); err != nil {
		t.Fatal(err)
	}
	for _, m := range []map[string]any{got, want} {
		delete(m, "version")
		delete(m, "updated_at")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("evidence differs from the pure fold (-want +got):\n%s", diff)
	}
	// The same, spelled out, so that a failure says what matters.
	var state struct {
		Cursor  int              `json:"cursor"`
		Buckets evidence.Buckets `json:"buckets"`
	}
	_ = json.Unmarshal(body, &state)
	if state.Cursor != c.Want.Cursor {
		t.Errorf("cursor %d, want %d", state.Cursor, c.Want.Cursor)
	}
	if diff := cmp.Diff(c.Want.Buckets, state.Buckets); diff != "" {
		t.Errorf("buckets (-want +got):\n%s", diff)
	}
}
