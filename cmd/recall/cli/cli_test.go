package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/testutil/pgtest"
	"github.com/recallhq/recall/testutil/proctest"
)

// runCLI runs recall with args and environment env and returns the exit
// code, stdout and stderr.
func runCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
	code := mainEnv(e, args)
	return code, stdout.String(), stderr.String()
}

// TestHelp: every command's -h exits 0 and shows its synopsis, its
// one-line description and only its own flags.
func TestHelp(t *testing.T) {
	t.Parallel()
	absent := map[string][]string{
		"migrate":    {"-http-addr", "-nats-url", "-jwt-secret", "-jwt-secret-file", "-concurrency", "-no-migrate", "-rejection-retention"},
		"worker":     {"-http-addr", "-jwt-secret", "-jwt-secret-file", "-max-waiters", "-api-max-conns"},
		"api":        {"-concurrency", "-gap-timeout", "-rejection-retention"},
		"dev":        {"-nats-url"},
		"state":      {"-nats-url", "-http-addr", "-log-format"},
		"rejections": {"-nats-url", "-http-addr"},
		"token":      {"-database-url", "-nats-url"},
		"publish":    {"-database-url"},
		"mcp":        {"-database-url", "-nats-url", "-http-addr", "-jwt-secret"},
	}
	present := map[string][]string{
		"migrate":    {"-database-url", "-log-level"},
		"worker":     {"-nats-url", "-concurrency", "-gap-timeout", "-no-migrate", "-rejection-retention"},
		"api":        {"-http-addr", "-jwt-secret", "-jwt-secret-file", "-max-event-bytes", "-max-waiters", "-api-max-conns", "-api-read-timeout"},
		"run":        {"-http-addr", "-concurrency", "-nats-url", "-jwt-secret-file", "-max-waiters", "-api-max-conns", "-rejection-retention"},
		"dev":        {"-data-dir", "-nats-port", "-postgres", "-http-addr", "-jwt-secret-file", "-max-waiters"},
		"state":      {"-database-url", "-format"},
		"rejections": {"-since", "-reason", "-json", "-payloads"},
		"token":      {"-service", "-ttl", "-jwt-secret", "-jwt-secret-file"},
		"mcp":        {"-api-url", "-log-format"},
	}
	for name, cmd := range commands {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runCLI(t, nil, name, "-h")
			if code != 0 {
				t.Errorf("recall %s -h exits %d, want 0", name, code)
			}
			if !strings.Contains(stderr, "Usage: recall "+name) || !strings.Contains(strings.ToLower(stderr), strings.ToLower(cmd.summary)) {
				t.Errorf("recall %s -h lacks its usage line or its description %q:\n%s", name, cmd.summary, stderr)
			}
			for _, f := range absent[name] {
				if strings.Contains(stderr, "  "+f+" ") || strings.Contains(stderr, "  "+f+"\n") {
					t.Errorf("recall %s -h lists %s, which it does not use", name, f)
				}
			}
			for _, f := range present[name] {
				if !strings.Contains(stderr, "  "+f) {
					t.Errorf("recall %s -h does not list %s:\n%s", name, f, stderr)
				}
			}
		})
	}
	if code, _, _ := runCLI(t, nil, "migrate", "--no-such-flag"); code != 2 {
		t.Errorf("a bad flag exits %d, want 2", code)
	}
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args           []string
		wantPositional []string
		wantFormat     string
	}{
		{[]string{"u", "c"}, []string{"u", "c"}, "json"},
		{[]string{"--format", "table", "u", "c"}, []string{"u", "c"}, "table"},
		{[]string{"u", "c", "--format", "table"}, []string{"u", "c"}, "table"},
		{[]string{"u", "-format=table", "c"}, []string{"u", "c"}, "table"},
		{[]string{"u", "--", "--format", "c"}, []string{"u", "--format", "c"}, "json"},
		{[]string{"-"}, []string{"-"}, "json"},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		format := fs.String("format", "json", "")
		got, err := parseArgs(fs, tt.args)
		if err != nil || !slices.Equal(got, tt.wantPositional) || *format != tt.wantFormat {
			t.Errorf("parseArgs(%q) = %q, format %q, %v; want %q, format %q", tt.args, got, *format, err, tt.wantPositional, tt.wantFormat)
		}
	}
}

func TestToken(t *testing.T) {
	t.Parallel()
	const secret = "0123456789abcdef0123456789abcdef"
	dir := t.TempDir()
	if _, err := devSecret(dir); err != nil {
		t.Fatal(err)
	}
	devKey, err := readDevSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		key       string
		wantSub   string
		wantScope any
		wantTTL   time.Duration
	}{
		{"user, flags after the user", map[string]string{"RECALL_JWT_SECRET": secret}, []string{"u-42", "--ttl", "2m"}, secret, "u-42", nil, 2 * time.Minute},
		{"service", map[string]string{"RECALL_JWT_SECRET": secret}, []string{"--service", "backend"}, secret, "backend", "recall:service", time.Hour},
		{"from the dev data folder", map[string]string{"RECALL_DEV_DIR": dir}, []string{"u-1"}, devKey, "u-1", nil, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, tt.env, append([]string{"token"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			claims := jwt.MapClaims{}
			if _, err := jwt.Parse(strings.TrimSpace(stdout), func(*jwt.Token) (any, error) { return []byte(tt.key), nil },
				jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired()); err != nil {
				t.Fatalf("the token does not verify: %v", err)
			}
			_, _, _ = jwt.NewParser().ParseUnverified(strings.TrimSpace(stdout), claims)
			exp, _ := claims.GetExpirationTime()
			if claims["sub"] != tt.wantSub || claims["scope"] != tt.wantScope || time.Until(exp.Time) > tt.wantTTL || time.Until(exp.Time) < tt.wantTTL-time.Minute {
				t.Errorf("claims %v, want sub %s scope %v ttl %s", claims, tt.wantSub, tt.wantScope, tt.wantTTL)
			}
		})
	}
	for _, args := range [][]string{{"token"}, {"token", "a", "b"}} {
		if code, _, _ := runCLI(t, map[string]string{"RECALL_JWT_SECRET": secret}, args...); code != 2 {
			t.Errorf("recall %v exits %d, want 2", args, code)
		}
	}
	if code, _, stderr := runCLI(t, map[string]string{"RECALL_DEV_DIR": t.TempDir()}, "token", "u"); code != 1 || !strings.Contains(stderr, "RECALL_JWT_SECRET") {
		t.Errorf("without a secret: exit %d, %q; want 1 and a message naming RECALL_JWT_SECRET", code, stderr)
	}
}

// TestTokenSecretRules: recall token takes its secret as the API does: at
// least 32 bytes, from RECALL_JWT_SECRET or -jwt-secret-file, never from a
// -jwt-secret value.
func TestTokenSecretRules(t *testing.T) {
	t.Parallel()
	good := strings.Repeat("ab", 32)
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
		wantErr  string
		key      string
	}{
		{"a weak secret", map[string]string{"RECALL_JWT_SECRET": "x"}, []string{"u"}, 1, "at least 32 bytes", ""},
		{"a 31-byte secret", map[string]string{"RECALL_JWT_SECRET": strings.Repeat("k", 31)}, []string{"u"}, 1, "openssl rand -hex 32", ""},
		{"the secret as a flag value", nil, []string{"u", "-jwt-secret", good}, 2, "RECALL_JWT_SECRET or -jwt-secret-file", ""},
		{"a weak secret file", nil, []string{"u", "-jwt-secret-file", writeFile(t, "short\n")}, 1, "at least 32 bytes", ""},
		{"a missing secret file", nil, []string{"u", "-jwt-secret-file", filepath.Join(t.TempDir(), "none")}, 1, "read the JWT secret file", ""},
		{"a weak dev secret", map[string]string{"RECALL_DEV_DIR": devDirWith(t, "short")}, []string{"u"}, 1, "at least 32 bytes", ""},
		{"a good secret file", nil, []string{"u", "-jwt-secret-file", writeFile(t, good+"\n")}, 0, "", good},
		{"a good secret file over the environment", map[string]string{"RECALL_JWT_SECRET": strings.Repeat("z", 40)}, []string{"u", "-jwt-secret-file", writeFile(t, good)}, 0, "", good},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, tt.env, append([]string{"token"}, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, tt.wantCode, tt.wantErr)
			}
			if tt.key == "" {
				if stdout != "" {
					t.Errorf("printed %q, want no token", stdout)
				}
				return
			}
			if _, err := jwt.Parse(strings.TrimSpace(stdout), func(*jwt.Token) (any, error) { return []byte(tt.key), nil },
				jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired()); err != nil {
				t.Errorf("the token does not verify with the file's secret: %v", err)
			}
		})
	}
}

// devDirWith returns a dev data folder whose JWT secret is secret.
func devDirWith(t *testing.T, secret string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, devSecretFile), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRejectionsCommand(t *testing.T) {
	t.Parallel()
	pool, dbURL := pgtest.NewMigratedPool(t, store.Migrate)
	st, err := store.New(pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []store.Rejection{
		{Reason: checkpoint.ReasonGap, Detail: "gap", EventID: "e1", UserID: "u", ConversationID: "c", Stream: "S", StreamSeq: 1, Payload: []byte(`{"secret":"text"}`)},
		{Reason: checkpoint.ReasonInvalid, Detail: "bad role", EventID: "e2", UserID: "u", ConversationID: "c", Stream: "S", StreamSeq: 2, Payload: []byte(`{"secret":"text"}`)},
	} {
		if err := st.Reject(t.Context(), r); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	env := map[string]string{"DATABASE_URL": dbURL}

	code, stdout, stderr := runCLI(t, env, "rejections", "--json", "--reason", "gap", "--since", "1h")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("--json printed %q: want an array of one row", stdout)
	}
	var keys []string
	for k := range rows[0] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"conversation_id", "detail", "event_id", "id", "reason", "received_at", "user_id"}; !slices.Equal(keys, want) {
		t.Errorf("row keys %v, want %v", keys, want)
	}
	if rows[0]["event_id"] != "e1" || rows[0]["reason"] != "gap" {
		t.Errorf("row %v, want e1 gap", rows[0])
	}

	code, stdout, _ = runCLI(t, env, "rejections")
	if code != 0 || !strings.Contains(stdout, "e1") || !strings.Contains(stdout, "e2") || strings.Contains(stdout, "secret") {
		t.Errorf("table: exit %d\n%s\nwant both rows and no payload", code, stdout)
	}
	code, stdout, _ = runCLI(t, env, "rejections", "--payloads", "--event-id", "e2")
	if code != 0 || !strings.Contains(stdout, `{"secret":"text"}`) || strings.Contains(stdout, "e1") {
		t.Errorf("--payloads --event-id e2: exit %d\n%s\nwant e2 with its payload", code, stdout)
	}
	code, stdout, _ = runCLI(t, env, "rejections", "--json", "--since", "2999-01-01T00:00:00Z")
	if code != 0 || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("nothing since 2999: exit %d, %q; want []", code, stdout)
	}
	for _, args := range [][]string{{"--reason", "nope"}, {"--since", "yesterday"}} {
		if code, _, stderr := runCLI(t, env, append([]string{"rejections"}, args...)...); code != 1 {
			t.Errorf("rejections %v: exit %d (%s), want 1", args, code, stderr)
		}
	}
}

func TestDevNATSPort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if p := devNATSPort(dir); p != 4222 && p != -1 {
		t.Errorf("no remembered port: %d, want 4222 or any (-1)", p)
	}
	l := listen(t)
	taken := l.Addr().(*net.TCPAddr).Port
	free := proctest.FreePort(t)
	for _, tt := range []struct {
		remembered int
		want       func(int) bool
	}{
		{free, func(p int) bool { return p == free }},
		{taken, func(p int) bool { return p != taken }},
	} {
		if err := os.WriteFile(filepath.Join(dir, natsPortFile), []byte(strconv.Itoa(tt.remembered)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if p := devNATSPort(dir); !tt.want(p) {
			t.Errorf("remembered %d (taken: %v): got %d", tt.remembered, tt.remembered == taken, p)
		}
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
