package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lmittmann/tint"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/internal/redact"
	"github.com/recallhq/recall/jobs"
)

// Defaults of the contract (§1).
const (
	defaultDatabaseURL     = "postgres://postgres@127.0.0.1:5432/recall?sslmode=disable"
	defaultNATSURL         = "nats://127.0.0.1:4222"
	defaultHTTPAddr        = "127.0.0.1:8080"
	defaultSubject         = "recall.checkpoints"
	defaultStream          = "RECALL_CHECKPOINTS"
	defaultShutdownTimeout = 30 * time.Second
)

// config is the configuration every serving command shares. Each field is a
// flag whose default comes from an environment variable.
type config struct {
	DatabaseURL string
	NATSURL     string
	HTTPAddr    string
	// JWTSecret is the read API's HS256 secret, from RECALL_JWT_SECRET or
	// the file JWTSecretFile names (never from a flag value, which any
	// user on the machine could read with ps).
	JWTSecret       string
	JWTSecretFile   string
	Subject         string
	Stream          string
	ShutdownTimeout time.Duration
	LogFormat       string
	LogLevel        string
	// Concurrency bounds the NATS messages handled at once and the River
	// workers of the extraction queue.
	Concurrency int
	// MaxEventBytes bounds an event's size; larger ones are rejected as
	// too_large.
	MaxEventBytes int
	// GapTimeout is how long an append event whose prefix recall does not
	// hold yet is retried before it is rejected as gap.
	GapTimeout time.Duration
	// RejectionRetention is how long rejection rows and the tombstones of
	// deleted conversations are kept.
	RejectionRetention time.Duration
	// APIMaxConns bounds the read API's own Postgres pool, apart from the
	// pool ingest and extraction use, so that reads never starve them.
	APIMaxConns int
	// MaxWaiters bounds the requests waiting for a state change at once.
	MaxWaiters int
	// APIReadTimeout bounds one read of the read API.
	APIReadTimeout time.Duration
}

// bind registers the shared flags on fs with defaults from the environment.
func (c *config) bind(fs *flag.FlagSet, env *Env) {
	str := func(p *string, name, envName, def, usage string) {
		v := env.Getenv(envName)
		if v == "" {
			v = def
		}
		fs.StringVar(p, name, v, usage+" (env "+envName+")")
	}
	dur := func(p *time.Duration, name, envName string, def time.Duration, usage string) {
		v := def
		if s := env.Getenv(envName); s != "" {
			if d, err := time.ParseDuration(s); err == nil {
				v = d
			} else {
				fmt.Fprintf(env.Stderr, "recall: ignoring %s=%q: %v\n", envName, s, err)
			}
		}
		fs.DurationVar(p, name, v, usage+" (env "+envName+")")
	}
	num := func(p *int, name, envName string, def int, usage string) {
		v := def
		if s := env.Getenv(envName); s != "" {
			if n, err := strconv.Atoi(s); err == nil {
				v = n
			} else {
				fmt.Fprintf(env.Stderr, "recall: ignoring %s=%q: %v\n", envName, s, err)
			}
		}
		fs.IntVar(p, name, v, usage+" (env "+envName+")")
	}
	c.DatabaseURL = or(env.Getenv("DATABASE_URL"), defaultDatabaseURL)
	fs.Var(redactedFlag{&c.DatabaseURL, redact.ConnString}, "database-url", "Postgres URL; the database is created if missing (env DATABASE_URL)")
	c.NATSURL = or(env.Getenv("NATS_URL"), defaultNATSURL)
	fs.Var(redactedFlag{&c.NATSURL, redact.ConnString}, "nats-url", "NATS server URL (env NATS_URL)")
	str(&c.HTTPAddr, "http-addr", "RECALL_HTTP_ADDR", defaultHTTPAddr, "address the read API listens on")
	c.JWTSecret = env.Getenv("RECALL_JWT_SECRET")
	str(&c.JWTSecretFile, "jwt-secret-file", "RECALL_JWT_SECRET_FILE", "", "file holding the HS256 secret of the read API's bearer tokens, instead of RECALL_JWT_SECRET")
	fs.Var(refusedSecretFlag{}, "jwt-secret", "not accepted: a secret on the command line shows in ps; use RECALL_JWT_SECRET or -jwt-secret-file")
	str(&c.Subject, "subject", "RECALL_SUBJECT", defaultSubject, "NATS subject of checkpoint events")
	str(&c.Stream, "stream", "RECALL_STREAM", defaultStream, "JetStream stream of checkpoint events (created if missing)")
	dur(&c.ShutdownTimeout, "shutdown-timeout", "RECALL_SHUTDOWN_TIMEOUT", defaultShutdownTimeout, "how long running jobs may finish on shutdown before they are cancelled")
	str(&c.LogFormat, "log-format", "RECALL_LOG_FORMAT", "text", "log format: text or json")
	str(&c.LogLevel, "log-level", "RECALL_LOG_LEVEL", "info", "log level: debug, info, warn or error")
	num(&c.Concurrency, "concurrency", "RECALL_CONCURRENCY", 16, "events handled at once and extraction workers")
	num(&c.MaxEventBytes, "max-event-bytes", "RECALL_MAX_EVENT_BYTES", 16<<20, "largest event accepted; larger ones are rejected as too_large")
	dur(&c.GapTimeout, "gap-timeout", "RECALL_GAP_TIMEOUT", 10*time.Second, "how long an append event with a gap is retried before it is rejected")
	num(&c.APIMaxConns, "api-max-conns", "RECALL_API_MAX_CONNS", 8, "connections of the read API's own Postgres pool (apart from ingest's)")
	num(&c.MaxWaiters, "max-waiters", "RECALL_MAX_WAITERS", api.DefaultMaxWaiters, "requests that may wait for a state change at once; more are answered 429")
	dur(&c.APIReadTimeout, "api-read-timeout", "RECALL_API_READ_TIMEOUT", api.DefaultReadTimeout, "how long one read of the read API may take before it is answered 503")
	dur(&c.RejectionRetention, "rejection-retention", "RECALL_REJECTION_RETENTION", jobs.DefaultRejectionRetention, "how long rejections and the tombstones of deleted conversations are kept")
}

// logger builds the process logger: tint for people (colour on a
// terminal), JSON for machines.
func (c *config) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("RECALL_LOG_LEVEL must be debug, info, warn or error")
	}
	switch c.LogFormat {
	case "json":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})), nil
	case "text", "":
		noColor := true
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				noColor = false
			}
		}
		return slog.New(tint.NewHandler(w, &tint.Options{Level: level, TimeFormat: time.TimeOnly, NoColor: noColor})), nil
	}
	return nil, fmt.Errorf("RECALL_LOG_FORMAT must be text or json, not %q", c.LogFormat)
}

// MinJWTSecretBytes is the shortest HS256 secret the read API accepts: a
// shorter one falls to an offline brute force from any token it signed.
const MinJWTSecretBytes = 32

// jwtSecretHint says how to make a good secret.
const jwtSecretHint = "make one with `openssl rand -hex 32` and export it as RECALL_JWT_SECRET, or write it to a file and pass -jwt-secret-file " +
	"(`recall dev` makes one for you)"

// loadJWTSecret reads the secret from JWTSecretFile when it is set, and
// checks it: the read API refuses to start without one of at least
// MinJWTSecretBytes bytes.
func (c *config) loadJWTSecret() error {
	if c.JWTSecretFile != "" {
		var err error
		if c.JWTSecret, err = readSecretFile(c.JWTSecretFile); err != nil {
			return err
		}
	}
	switch n := len(c.JWTSecret); {
	case n == 0:
		return errors.New("RECALL_JWT_SECRET is not set: the read API needs the HS256 secret its bearer tokens are signed with; " + jwtSecretHint)
	case n < MinJWTSecretBytes:
		return fmt.Errorf("the JWT secret is %d bytes: it must be at least %d bytes, or anyone holding a token can find it offline; %s",
			n, MinJWTSecretBytes, jwtSecretHint)
	}
	return nil
}

// readSecretFile reads a secret from a file, without its final newline.
func readSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the JWT secret file (-jwt-secret-file): %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// refusedSecretFlag is the old -jwt-secret flag: a value given on the
// command line is visible to every user of the machine (ps), so it is
// refused with a message that says what to do instead.
type refusedSecretFlag struct{}

func (refusedSecretFlag) String() string { return "" }

func (refusedSecretFlag) Set(string) error {
	return errors.New("the secret is not accepted on the command line, where ps shows it: set RECALL_JWT_SECRET or -jwt-secret-file")
}

// redactedFlag is a string flag whose value is never printed as it is (in
// -h output, say): secrets are hidden and URLs lose their passwords.
type redactedFlag struct {
	p      *string
	redact func(string) string
}

func (f redactedFlag) String() string {
	if f.p == nil {
		return ""
	}
	return f.redact(*f.p)
}

func (f redactedFlag) Set(s string) error { *f.p = s; return nil }
