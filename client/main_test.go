package client_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"
	"go.uber.org/goleak"

	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/testutil/pgtest"
)

// The recall under test: `recall run` (worker and API in one process), built
// from this module, on a database of its own and an in-process JetStream
// server. TestMain starts it once; each test uses users of its own.
var (
	apiURL    string
	jwtSecret = []byte("client-test-secret-client-test-secret")
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client tests:", err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "recall-client-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "recall")
	build := exec.Command("go", "build", "-o", bin, "github.com/recallhq/recall/cmd/recall")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return 0, fmt.Errorf("go build ./cmd/recall: %w", err)
	}

	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: filepath.Join(dir, "nats"), NoLog: true, NoSigs: true})
	if err != nil {
		return 0, fmt.Errorf("nats server: %w", err)
	}
	go ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(30 * time.Second) {
		return 0, fmt.Errorf("nats server not ready")
	}

	dbURL, drop, err := newDatabase()
	if err != nil {
		return 0, err
	}
	defer drop()

	stop, err := startRecall(bin, dbURL, ns.ClientURL())
	if err != nil {
		return 0, err
	}
	code := m.Run()
	if err := stop(); err != nil {
		return 0, err
	}
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreCurrent()); err != nil {
			return 0, err
		}
	}
	return code, nil
}

// newDatabase creates an empty database on the test server and returns its
// URL and a function that drops it.
func newDatabase() (string, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, pgtest.ServerURL())
	if err != nil {
		return "", nil, fmt.Errorf("Postgres is not reachable at TEST_DATABASE_URL (default %s): %w", pgtest.DefaultURL, err)
	}
	defer admin.Close(ctx)
	name := "recall_client_" + randomHex()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, err
	}
	u, err := url.Parse(pgtest.ServerURL())
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, pgtest.ServerURL()); err == nil {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			conn.Close(ctx)
		}
	}
	return u.String(), drop, nil
}

// startRecall starts `recall run` on a free port and returns once its API
// listens, with a function that stops it with SIGINT and waits for it.
func startRecall(bin, dbURL, natsURL string) (func() error, error) {
	cmd := exec.Command(bin, "run")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dbURL,
		"NATS_URL="+natsURL,
		"RECALL_JWT_SECRET="+string(jwtSecret),
		"RECALL_HTTP_ADDR=127.0.0.1:0",
		"RECALL_LOG_FORMAT=json",
		"RECALL_LOG_LEVEL=info",
	)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// Read the log for the API's address, keeping it for a failure.
	var (
		mu   sync.Mutex
		logs strings.Builder
	)
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "read API listening" {
				addr <- rec.Addr
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGINT)
		<-done
		if err := cmd.Wait(); err != nil {
			mu.Lock()
			defer mu.Unlock()
			return fmt.Errorf("recall run: %w\n%s", err, logs.String())
		}
		return nil
	}
	select {
	case a := <-addr:
		apiURL = "http://" + a
		return stop, nil
	case <-done:
	case <-time.After(time.Minute):
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	return nil, fmt.Errorf("recall run did not start its API:\n%s", logs.String())
}

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// token returns a bearer token for user, or with service for any user, as
// `recall token` prints it.
func token(user string, service bool) string {
	s, err := apiclient.Sign(jwtSecret, user, time.Hour, &apiclient.TokenOptions{Service: service})
	if err != nil {
		panic(err) // the secret is too short
	}
	return s
}
