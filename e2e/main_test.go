package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/examples"
	"github.com/recallhq/recall/testutil/pgtest"
	"github.com/recallhq/recall/testutil/proctest"
)

// recallBin is the recall binary, built once by TestMain.
var recallBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	bin, remove, err := proctest.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer remove()
	recallBin = bin
	return m.Run()
}

// drainTimeout is the RECALL_SHUTDOWN_TIMEOUT the tests give recall dev; it
// must exit 0 within it after SIGINT.
const drainTimeout = 10 * time.Second

// devProc is a running `recall dev` and what its banner said.
type devProc struct {
	*proctest.Process
	t       *testing.T
	dataDir string

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
	if err := d.WaitFor(2*time.Minute, "its banner", d.parseBanner); err != nil {
		t.Fatal(err)
	}
	t.Logf("recall dev: API %s, NATS %s, Postgres %s", d.APIURL, d.NATSURL, d.PostgresURL)
	return d
}

// startDevProcess starts recall dev and does not wait for anything.
func startDevProcess(t *testing.T, cfg devConfig) *devProc {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	env := []string{
		"DATABASE_URL=" + cfg.DatabaseURL,
		"RECALL_HTTP_ADDR=127.0.0.1:0",
		"RECALL_DEV_DIR=" + cfg.DataDir,
		"RECALL_SHUTDOWN_TIMEOUT=" + drainTimeout.String(),
		"RECALL_LOG_FORMAT=text",
	}
	args := []string{"dev", "--nats-port", fmt.Sprint(proctest.FreePort(t))}
	if cfg.OwnNATSPort {
		args = args[:1]
	}
	cmd := exec.Command(recallBin, args...)
	cmd.Env = proctest.Env(append(env, cfg.Env...)...)
	p, err := proctest.Start(cmd)
	if err != nil {
		t.Fatalf("start recall dev: %v", err)
	}
	t.Cleanup(func() {
		// A test that failed before it stopped dev: drain, then kill.
		p.Stop(drainTimeout + 30*time.Second)
		if t.Failed() {
			t.Logf("recall dev stdout:\n%s\nrecall dev stderr:\n%s", p.Stdout.String(), p.Stderr.String())
		}
	})
	return &devProc{Process: p, t: t, dataDir: cfg.DataDir}
}

// parseBanner reads the export lines of the banner, and reports whether
// all three were printed.
func (d *devProc) parseBanner() bool {
	sc := bufio.NewScanner(strings.NewReader(d.Stdout.String()))
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
	return proctest.Env("RECALL_API_URL="+d.APIURL, "NATS_URL="+d.NATSURL, "RECALL_TOKEN="+d.Token)
}

// interrupt sends SIGINT, waits for the exit and requires exit 0 within
// the drain timeout. It returns how long the exit took.
func (d *devProc) interrupt() time.Duration {
	d.t.Helper()
	took, err := d.Interrupt(drainTimeout + 30*time.Second)
	if err != nil {
		d.t.Fatal(err)
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

// closedPostgresURL returns a DATABASE_URL at which nothing answers.
func closedPostgresURL(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/recall?sslmode=disable", proctest.FreePort(t))
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
	user, conv, history := sampleHistory(t, name)
	msgs := decode(t, history)
	st, outcome, err := evidence.Fold(evidence.NewState(), msgs, nil)
	if err != nil || outcome != checkpoint.Applied {
		t.Fatalf("fold example %s: %v, %v", name, outcome, err)
	}
	if st.Cursor != evidence.NewestRequest(msgs) || st.Buckets.Len() == 0 {
		t.Fatalf("example %s folds to cursor %d with %d entries: not a useful sample", name, st.Cursor, st.Buckets.Len())
	}
	return conversation{UserID: user, ConversationID: conv, Want: st}
}

// sampleHistory returns an example conversation's key and messages.
func sampleHistory(t *testing.T, name string) (user, conv string, history []json.RawMessage) {
	t.Helper()
	data, err := examples.Conversation(name)
	if err != nil {
		t.Fatalf("example %s: %v", name, err)
	}
	var c struct {
		UserID         string            `json:"user_id"`
		ConversationID string            `json:"conversation_id"`
		Messages       []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("example %s: %v", name, err)
	}
	return c.UserID, c.ConversationID, c.Messages
}

func decode(t *testing.T, history []json.RawMessage) []checkpoint.Message {
	t.Helper()
	raw, err := json.Marshal(history)
	pgtest.Must(t, err, "encode history")
	msgs, err := checkpoint.DecodeMessages(raw)
	pgtest.Must(t, err, "decode history")
	return msgs
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
