package cli

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/testutil/pgtest"
	"github.com/recallhq/recall/worker"
)

// TestStreamReplicasSetting: RECALL_STREAM_REPLICAS and -stream-replicas
// take 1 to 5 and default to 1; anything else stops the process with a
// message that names the setting, before it connects to anything.
func TestStreamReplicasSetting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     string
		args    []string
		want    int
		wantErr string
	}{
		{name: "default", want: 1},
		{name: "env", env: "3", want: 3},
		{name: "flag over env", env: "3", args: []string{"-stream-replicas", "5"}, want: 5},
		{name: "env zero", env: "0", wantErr: `not "0"`},
		{name: "env six", env: "6", wantErr: `not "6"`},
		{name: "env words", env: "three", wantErr: `not "three"`},
		{name: "flag negative", args: []string{"-stream-replicas", "-1"}, wantErr: `not "-1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg config
			env := &Env{Stderr: io.Discard, Getenv: func(k string) string {
				if k == "RECALL_STREAM_REPLICAS" {
					return tt.env
				}
				return ""
			}}
			fs := flag.NewFlagSet("worker", flag.ContinueOnError)
			cfg.bind(fs, env, roles{worker: true}.flags())
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := cfg.validateStream()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "RECALL_STREAM_REPLICAS") {
					t.Errorf("error %v, want one naming RECALL_STREAM_REPLICAS and %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || cfg.StreamReplicas != tt.want {
				t.Errorf("replicas %d (%v), want %d", cfg.StreamReplicas, err, tt.want)
			}
		})
	}
	// The whole command refuses it, exit 1, before it connects.
	var stderr bytes.Buffer
	env := &Env{Stdout: io.Discard, Stderr: &stderr, Getenv: func(k string) string {
		return map[string]string{"RECALL_STREAM_REPLICAS": "7", "DATABASE_URL": "postgres://postgres@127.0.0.1:1/x?sslmode=disable"}[k]
	}}
	if code := mainEnv(env, []string{"worker", "--no-migrate"}); code != 1 || !strings.Contains(stderr.String(), "from 1 to 5") ||
		strings.Contains(stderr.String(), "connect to Postgres") {
		t.Errorf("exit %d, stderr %q; want 1 and the replica count refused before Postgres", code, stderr.String())
	}
}

// TestStreamReplicasCluster: `recall worker` with RECALL_STREAM_REPLICAS=3
// on a three-node JetStream cluster creates a stream with three replicas.
func TestStreamReplicasCluster(t *testing.T) {
	t.Parallel()
	c := natstest.StartCluster(t, 3)
	var cfg config
	env := &Env{Stderr: io.Discard, Getenv: func(k string) string {
		return map[string]string{"RECALL_STREAM_REPLICAS": "3", "NATS_URL": c.URLs(), "DATABASE_URL": pgtest.NewDatabase(t)}[k]
	}}
	cfg.bind(flag.NewFlagSet("worker", flag.ContinueOnError), env, roles{worker: true}.flags())
	cfg.ShutdownTimeout, cfg.Concurrency = 5*time.Second, 2
	cfg.Profile = string(evidence.ProfileFocus)
	logger := slog.New(slog.DiscardHandler)
	a, err := start(t.Context(), &cfg, roles{worker: true}, true, logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.stop(logger) })
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	s, err := js.Stream(t.Context(), worker.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if info := s.CachedInfo(); info.Config.Replicas != 3 {
		t.Errorf("stream replicas %d, want 3", info.Config.Replicas)
	}
}
