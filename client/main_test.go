package client_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"go.uber.org/goleak"

	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/testutil/pgtest"
	"github.com/recallhq/recall/testutil/proctest"
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
	bin, remove, err := proctest.Build()
	if err != nil {
		return 0, err
	}
	defer remove()

	natsDir, err := os.MkdirTemp("", "recall-client-nats-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(natsDir)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: natsDir, NoLog: true, NoSigs: true})
	if err != nil {
		return 0, fmt.Errorf("nats server: %w", err)
	}
	go ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(30 * time.Second) {
		return 0, fmt.Errorf("nats server not ready")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	dbURL, drop, err := pgtest.CreateDatabase(ctx)
	cancel()
	if err != nil {
		return 0, err
	}
	defer func() { _ = drop() }()

	p, err := startRecall(bin, dbURL, ns.ClientURL())
	if err != nil {
		return 0, err
	}
	code := m.Run()
	if _, err := p.Interrupt(time.Minute); err != nil {
		return 0, err
	}
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreCurrent()); err != nil {
			return 0, err
		}
	}
	return code, nil
}

// startRecall starts `recall run` on a free port and returns once its API
// listens (its log says where).
func startRecall(bin, dbURL, natsURL string) (*proctest.Process, error) {
	cmd := exec.Command(bin, "run")
	cmd.Env = proctest.Env(
		"DATABASE_URL="+dbURL,
		"NATS_URL="+natsURL,
		"RECALL_JWT_SECRET="+string(jwtSecret),
		"RECALL_HTTP_ADDR=127.0.0.1:0",
		"RECALL_LOG_FORMAT=json",
		"RECALL_LOG_LEVEL=info",
	)
	p, err := proctest.Start(cmd)
	if err != nil {
		return nil, err
	}
	listening := func() bool {
		for line := range strings.Lines(p.Stderr.String()) {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "read API listening" {
				apiURL = "http://" + rec.Addr
				return true
			}
		}
		return false
	}
	if err := p.WaitFor(time.Minute, "its API listening", listening); err != nil {
		p.Stop(time.Minute)
		return nil, err
	}
	return p, nil
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

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
