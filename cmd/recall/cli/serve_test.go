package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeStartErrors: a process that cannot start says why and exits 1
// (it once panicked while stopping what it had started).
func TestServeStartErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"no Postgres", []string{"worker", "--no-migrate", "--database-url", "postgres://postgres@127.0.0.1:1/x?sslmode=disable"}, nil, "connect to Postgres"},
		{"api without a secret", []string{"api"}, nil, "RECALL_JWT_SECRET is not set"},
		{"run without a secret", []string{"run"}, nil, "RECALL_JWT_SECRET is not set"},
		{"bad log format", []string{"worker"}, map[string]string{"RECALL_LOG_FORMAT": "xml"}, "RECALL_LOG_FORMAT must be text or json"},
		{"api with a weak secret", []string{"api"}, map[string]string{"RECALL_JWT_SECRET": "x"}, "openssl rand -hex 32"},
		{"run with a 31-byte secret", []string{"run"}, map[string]string{"RECALL_JWT_SECRET": strings.Repeat("k", 31)}, "at least 32 bytes"},
		{"run with a weak secret file", []string{"run", "-jwt-secret-file", writeFile(t, "short\n")}, nil, "at least 32 bytes"},
		{"run with a missing secret file", []string{"run", "-jwt-secret-file", filepath.Join(t.TempDir(), "none")}, nil, "read the JWT secret file"},
		// A good secret passes the check and the start goes on to Postgres.
		{"run with a good secret file", []string{"run", "--no-migrate", "--database-url", "postgres://postgres@127.0.0.1:1/x?sslmode=disable",
			"-jwt-secret-file", writeFile(t, strings.Repeat("ab", 32)+"\n")}, nil, "connect to Postgres"},
		{"run with a good secret", []string{"run", "--no-migrate", "--database-url", "postgres://postgres@127.0.0.1:1/x?sslmode=disable"},
			map[string]string{"RECALL_JWT_SECRET": strings.Repeat("k", 32)}, "connect to Postgres"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := &Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return tt.env[k] }}
			code := mainEnv(env, tt.args)
			if code != 1 || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), tt.wantErr)
			}
		})
	}
	// The secret as a flag value is refused while parsing, a usage error.
	for _, name := range []string{"api", "run", "dev", "token"} {
		var stdout, stderr bytes.Buffer
		env := &Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
		code := mainEnv(env, []string{name, "-jwt-secret", strings.Repeat("k", 64)})
		if code != 2 || !strings.Contains(stderr.String(), "RECALL_JWT_SECRET or -jwt-secret-file") || strings.Contains(stderr.String(), "kkkk") {
			t.Errorf("recall %s -jwt-secret …: exit %d, stderr %q; want 2, a message naming RECALL_JWT_SECRET or -jwt-secret-file, and not the secret", name, code, stderr.String())
		}
	}
}

// TestSecretsNeverPrinted: a database password in a keyword/value
// connection string or a URL, and a NATS token, never reach -h, errors or
// logs.
func TestSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"-h with a keyword/value DSN", []string{"worker", "-h"}, map[string]string{"DATABASE_URL": "host=127.0.0.1 port=1 user=app password=hunter2hunter2 dbname=x"}},
		{"-h with a NATS token", []string{"worker", "-h"}, map[string]string{"NATS_URL": "nats://hunter2hunter2@127.0.0.1:4222"}},
		{"start error with a keyword/value DSN", []string{"worker", "--no-migrate"}, map[string]string{"DATABASE_URL": "host=127.0.0.1 port=1 user=app password=hunter2hunter2 dbname=x sslmode=disable"}},
		{"migrate error with a keyword/value DSN", []string{"migrate"}, map[string]string{"DATABASE_URL": "host=127.0.0.1 port=1 user=app password=hunter2hunter2 dbname=x sslmode=disable"}},
		{"start error with a URL", []string{"worker", "--no-migrate"}, map[string]string{"DATABASE_URL": "postgres://app:hunter2hunter2@127.0.0.1:1/x?sslmode=disable"}},
		{"rejections error with a keyword/value DSN", []string{"rejections"}, map[string]string{"DATABASE_URL": "host=127.0.0.1 port=1 user=app password=hunter2hunter2 dbname=x sslmode=disable connect_timeout=2"}},
		{"rejections -h with a keyword/value DSN", []string{"rejections", "-h"}, map[string]string{"DATABASE_URL": "host=127.0.0.1 port=1 user=app password=hunter2hunter2 dbname=x"}},
		{"dev error with a keyword/value DSN", []string{"dev"}, map[string]string{"DATABASE_URL": "host=127.0.0.1 port=1 user=app password=hunter2hunter2 dbname=x sslmode=disable connect_timeout=2",
			"RECALL_DEV_DIR": t.TempDir()}},
		{"api -h with a NATS token", []string{"api", "-h"}, map[string]string{"NATS_URL": "nats://hunter2hunter2@127.0.0.1:4222"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			env := &Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return tt.env[k] }}
			mainEnv(env, tt.args)
			if out := stdout.String() + stderr.String(); strings.Contains(out, "hunter2") {
				t.Errorf("the secret was printed:\n%s", out)
			}
		})
	}
}

// writeFile writes s to a file of its own and returns its path.
func writeFile(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
