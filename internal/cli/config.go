package cli

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/lmittmann/tint"

	"github.com/recallhq/recall/evidence"
)

// Defaults of the configuration.
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
	// DatabaseURLSet says that DATABASE_URL or -database-url named the
	// database explicitly (recall dev then fails when it does not answer,
	// instead of starting a private cluster).
	DatabaseURLSet  bool
	NATSURL         string
	HTTPAddr        string
	JWTSecret       string
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
	// Profile names the evidence profile (focus or seed).
	Profile string
	// ArchiveMaxEntries bounds a conversation's archive (focus profile).
	ArchiveMaxEntries int
}

// foldConfig returns the evidence profile and bounds c names.
func (c *config) foldConfig() (*evidence.Config, error) {
	p, err := evidence.ParseProfile(c.Profile)
	if err != nil {
		return nil, fmt.Errorf("RECALL_EVIDENCE_PROFILE: %w", err)
	}
	if c.ArchiveMaxEntries < 1 {
		return nil, fmt.Errorf("RECALL_ARCHIVE_MAX_ENTRIES must be at least 1, not %d", c.ArchiveMaxEntries)
	}
	return &evidence.Config{Profile: p, MaxArchiveEntries: c.ArchiveMaxEntries}, nil
}

// flagGroup selects the shared flags a command registers, so that its -h
// lists only the flags it uses.
type flagGroup uint

const (
	// flagsDB: -database-url.
	flagsDB flagGroup = 1 << iota
	// flagsNATS: -nats-url.
	flagsNATS
	// flagsStream: -subject, -stream.
	flagsStream
	// flagsAPI: -http-addr, -jwt-secret.
	flagsAPI
	// flagsLog: -log-format, -log-level.
	flagsLog
	// flagsWorker: -concurrency, -gap-timeout.
	flagsWorker
	// flagsLimits: -max-event-bytes.
	flagsLimits
	// flagsShutdown: -shutdown-timeout.
	flagsShutdown
	// flagsProfile: -evidence-profile, -archive-max-entries.
	flagsProfile
)

// bind sets every field from the environment or its default, and registers
// the flags of groups on fs, each with that value as its default.
func (c *config) bind(fs *flag.FlagSet, env *Env, groups flagGroup) {
	str := func(g flagGroup, p *string, name, envName, def, usage string) {
		*p = or(env.Getenv(envName), def)
		if groups&g != 0 {
			fs.StringVar(p, name, *p, usage+" (env "+envName+")")
		}
	}
	dur := func(g flagGroup, p *time.Duration, name, envName string, def time.Duration, usage string) {
		*p = def
		if s := env.Getenv(envName); s != "" {
			if d, err := time.ParseDuration(s); err == nil {
				*p = d
			} else {
				fmt.Fprintf(env.Stderr, "recall: ignoring %s=%q: %v\n", envName, s, err)
			}
		}
		if groups&g != 0 {
			fs.DurationVar(p, name, *p, usage+" (env "+envName+")")
		}
	}
	num := func(g flagGroup, p *int, name, envName string, def int, usage string) {
		*p = def
		if s := env.Getenv(envName); s != "" {
			if n, err := strconv.Atoi(s); err == nil {
				*p = n
			} else {
				fmt.Fprintf(env.Stderr, "recall: ignoring %s=%q: %v\n", envName, s, err)
			}
		}
		if groups&g != 0 {
			fs.IntVar(p, name, *p, usage+" (env "+envName+")")
		}
	}
	c.DatabaseURL = or(env.Getenv("DATABASE_URL"), defaultDatabaseURL)
	c.DatabaseURLSet = env.Getenv("DATABASE_URL") != ""
	if groups&flagsDB != 0 {
		fs.Var(redactedFlag{p: &c.DatabaseURL, set: &c.DatabaseURLSet, redact: redactDatabaseURL}, "database-url", "Postgres URL; the database is created if missing (env DATABASE_URL)")
	}
	str(flagsNATS, &c.NATSURL, "nats-url", "NATS_URL", defaultNATSURL, "NATS server URL")
	str(flagsAPI, &c.HTTPAddr, "http-addr", "RECALL_HTTP_ADDR", defaultHTTPAddr, "address the HTTP API listens on")
	c.JWTSecret = env.Getenv("RECALL_JWT_SECRET")
	if groups&flagsAPI != 0 {
		fs.Var(redactedFlag{p: &c.JWTSecret, redact: func(string) string { return "" }}, "jwt-secret", "HS256 secret of the API's bearer tokens (env RECALL_JWT_SECRET)")
	}
	str(flagsStream, &c.Subject, "subject", "RECALL_SUBJECT", defaultSubject, "NATS subject of checkpoint events")
	str(flagsStream, &c.Stream, "stream", "RECALL_STREAM", defaultStream, "JetStream stream of checkpoint events (created if missing)")
	dur(flagsShutdown, &c.ShutdownTimeout, "shutdown-timeout", "RECALL_SHUTDOWN_TIMEOUT", defaultShutdownTimeout, "how long running jobs may finish on shutdown before they are cancelled")
	str(flagsLog, &c.LogFormat, "log-format", "RECALL_LOG_FORMAT", "text", "log format: text or json")
	str(flagsLog, &c.LogLevel, "log-level", "RECALL_LOG_LEVEL", "info", "log level: debug, info, warn or error")
	num(flagsWorker, &c.Concurrency, "concurrency", "RECALL_CONCURRENCY", 16, "events handled at once and extraction workers")
	num(flagsLimits, &c.MaxEventBytes, "max-event-bytes", "RECALL_MAX_EVENT_BYTES", 16<<20, "largest event accepted; larger ones are rejected as too_large")
	str(flagsProfile, &c.Profile, "evidence-profile", "RECALL_EVIDENCE_PROFILE", string(evidence.ProfileFocus), "evidence profile: focus (sentences, an archive, a view per request) or seed (the seed system's rules exactly)")
	num(flagsProfile, &c.ArchiveMaxEntries, "archive-max-entries", "RECALL_ARCHIVE_MAX_ENTRIES", evidence.DefaultMaxArchiveEntries, "entries a conversation's archive keeps (focus profile); the oldest recent_context entries go first")
	dur(flagsWorker, &c.GapTimeout, "gap-timeout", "RECALL_GAP_TIMEOUT", 10*time.Second, "how long an append event with a gap is retried before it is rejected")
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

// redactedFlag is a string flag whose value is never printed as it is (in
// -h output, say): secrets are hidden and URLs lose their passwords.
type redactedFlag struct {
	p      *string
	set    *bool // when not nil, set to true by Set
	redact func(string) string
}

func (f redactedFlag) String() string {
	if f.p == nil {
		return ""
	}
	return f.redact(*f.p)
}

func (f redactedFlag) Set(s string) error {
	*f.p = s
	if f.set != nil {
		*f.set = true
	}
	return nil
}

func redactDatabaseURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Redacted()
}
