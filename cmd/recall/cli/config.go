package cli

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/apiclient"

	"github.com/lmittmann/tint"
	"go.opentelemetry.io/otel/trace"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/redact"
	"github.com/recallhq/recall/jobs"
	"github.com/recallhq/recall/wake"
	"github.com/recallhq/recall/worker"
)

// Defaults of the configuration.
const (
	defaultDatabaseURL     = "postgres://postgres@127.0.0.1:5432/recall?sslmode=disable"
	defaultNATSURL         = "nats://127.0.0.1:4222"
	defaultHTTPAddr        = "127.0.0.1:8080"
	defaultShutdownTimeout = 30 * time.Second
)

// config is the configuration every serving command shares. Each field is a
// flag whose default comes from an environment variable.
type config struct {
	DatabaseURL string
	// DatabaseURLSet says that DATABASE_URL or -database-url named the
	// database explicitly (recall dev then fails when it does not answer,
	// instead of starting a private cluster).
	DatabaseURLSet bool
	NATSURL        string
	HTTPAddr       string
	// ReadDatabaseURL, when set, is a streaming read replica of
	// DatabaseURL the API reads evidence from (GET evidence, search,
	// context); "" reads the primary. Defaults to "".
	ReadDatabaseURL string
	// JWTSecret is the HTTP API's HS256 secret, from RECALL_JWT_SECRET or
	// the file JWTSecretFile names (never from a flag value, which any
	// user on the machine could read with ps).
	JWTSecret     string
	JWTSecretFile string
	// JWTPreviousSecrets are older HS256 secrets that still verify tokens
	// (never sign), for a rotation, from RECALL_JWT_PREVIOUS_SECRETS
	// (comma-separated; never a flag value).
	JWTPreviousSecrets []string
	// JWKSURL names the JWKS of an identity provider whose RS256, ES256 and
	// EdDSA tokens the API accepts, beside the HS256 ones; JWTIssuer and
	// JWTAudience, when set, are the iss and aud its tokens must carry.
	// Default to "": no identity provider.
	JWKSURL     string
	JWTIssuer   string
	JWTAudience string
	Subject     string
	Stream      string
	// WakeSubject is the subject of the partition's wake-ups, which the
	// worker sends and the API listens to; "" means wake.SubjectFor(Stream)
	// (see wakeSubject).
	WakeSubject string
	// StreamReplicas is the replica count of the stream the worker creates
	// when it is missing (3 on a JetStream cluster); an existing stream is
	// used as it is. From 1 to 5. Defaults to 1.
	StreamReplicas int
	// streamReplicasGiven is RECALL_STREAM_REPLICAS or -stream-replicas as
	// given, for the error that refuses it.
	streamReplicasGiven string
	ShutdownTimeout     time.Duration
	LogFormat           string
	LogLevel            string
	// Concurrency bounds the ingest transactions (batches of events) at
	// once and the River workers of the extraction queue.
	Concurrency int
	// MaxBatch bounds the events one ingest transaction records.
	MaxBatch int
	// MaxEventBytes bounds an event's size; larger ones are rejected as
	// too_large.
	MaxEventBytes int
	// GapTimeout is how long an append event whose prefix recall does not
	// hold yet is retried before it is rejected as gap.
	GapTimeout time.Duration
	// RejectionRetention is how long rejection rows and the tombstones of
	// deleted conversations are kept.
	RejectionRetention time.Duration
	// APIMaxConns bounds the HTTP API's own Postgres pool, apart from the
	// pool ingest and extraction use, so that reads never starve them.
	APIMaxConns int
	// MaxWaiters bounds the requests waiting for a state change at once.
	MaxWaiters int
	// RiverUIAddr is where the River UI listens for operators; "" (the
	// default) serves none.
	RiverUIAddr string
	// APIReadTimeout bounds one read of the HTTP API.
	APIReadTimeout time.Duration
	// Profile names the evidence profile (focus or seed).
	Profile string
	// ArchiveMaxEntries bounds a conversation's archive (focus profile).
	ArchiveMaxEntries int
	// Model is the extractor's settings (RECALL_EXTRACTOR and the model
	// lane's RECALL_MODEL_*).
	Model modelSettings
	// getenv reads the OTEL_* variables that turn traces on
	// (telemetry.Setup); nil turns them off.
	getenv func(string) string
	// tracerProvider, when set, receives every part's spans in place of
	// what the OTEL_* variables configure (the tests' in-memory exporter).
	tracerProvider trace.TracerProvider
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
	// flagsStream: -subject, -stream, -stream-replicas, -wake-subject.
	flagsStream
	// flagsAPI: -http-addr, -jwt-secret-file (and the refused -jwt-secret),
	// -jwks-url, -jwt-issuer, -jwt-audience, -api-max-conns, -max-waiters,
	// -api-read-timeout, -read-database-url.
	flagsAPI
	// flagsLog: -log-format, -log-level.
	flagsLog
	// flagsWorker: -concurrency, -gap-timeout, -rejection-retention.
	flagsWorker
	// flagsLimits: -max-event-bytes.
	flagsLimits
	// flagsShutdown: -shutdown-timeout.
	flagsShutdown
	// flagsProfile: -evidence-profile, -archive-max-entries.
	flagsProfile
	// flagsModel: -extractor and the model lane's -model-… flags.
	flagsModel
)

// bind sets every field from the environment or its default, and registers
// the flags of groups on fs, each with that value as its default.
func (c *config) bind(fs *flag.FlagSet, env *Env, groups flagGroup) {
	str := func(g flagGroup, p *string, name, envName, def, usage string) {
		*p = cmp.Or(env.Getenv(envName), def)
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
	c.getenv = env.Getenv
	c.DatabaseURL = cmp.Or(env.Getenv("DATABASE_URL"), defaultDatabaseURL)
	c.DatabaseURLSet = env.Getenv("DATABASE_URL") != ""
	if groups&flagsDB != 0 {
		fs.Var(redactedFlag{p: &c.DatabaseURL, set: &c.DatabaseURLSet, redact: redact.ConnString}, "database-url", "Postgres URL; the database is created if missing (env DATABASE_URL)")
	}
	c.NATSURL = cmp.Or(env.Getenv("NATS_URL"), defaultNATSURL)
	if groups&flagsNATS != 0 {
		fs.Var(redactedFlag{p: &c.NATSURL, redact: redact.ConnString}, "nats-url", "NATS server URL (env NATS_URL)")
	}
	c.ReadDatabaseURL = env.Getenv("RECALL_READ_DATABASE_URL")
	if groups&flagsAPI != 0 {
		fs.Var(redactedFlag{p: &c.ReadDatabaseURL, redact: redact.ConnString}, "read-database-url",
			"Postgres URL of a streaming read replica the API reads evidence from; empty: the primary (env RECALL_READ_DATABASE_URL)")
	}
	str(flagsAPI, &c.HTTPAddr, "http-addr", "RECALL_HTTP_ADDR", defaultHTTPAddr, "address the HTTP API listens on")
	str(flagsAPI, &c.RiverUIAddr, "river-ui-addr", "RECALL_RIVER_UI_ADDR", "", "address of the River UI for operators, behind tokens with the recall:service scope (empty: off)")
	c.bindJWTSecret(fs, env, groups&flagsAPI != 0)
	str(flagsAPI, &c.JWKSURL, "jwks-url", "RECALL_JWKS_URL", "", "JWKS URL of an identity provider whose RS256, ES256 and EdDSA tokens the API accepts beside HS256 ones (empty: none)")
	str(flagsAPI, &c.JWTIssuer, "jwt-issuer", "RECALL_JWT_ISSUER", "", "the iss the identity provider's tokens must carry (empty: not checked)")
	str(flagsAPI, &c.JWTAudience, "jwt-audience", "RECALL_JWT_AUDIENCE", "", "an aud the identity provider's tokens must carry (empty: not checked)")
	str(flagsStream, &c.Subject, "subject", "RECALL_SUBJECT", worker.DefaultSubject, "NATS subject of checkpoint events")
	str(flagsStream, &c.Stream, "stream", "RECALL_STREAM", worker.DefaultStream, "JetStream stream of checkpoint events (created if missing)")
	c.bindStreamReplicas(fs, env, groups&flagsStream != 0)
	str(flagsStream, &c.WakeSubject, "wake-subject", "RECALL_WAKE_SUBJECT", "",
		"NATS subject the worker wakes the API's waiting requests on (core NATS; empty: "+wake.SubjectPrefix+".STREAM)")
	dur(flagsShutdown, &c.ShutdownTimeout, "shutdown-timeout", "RECALL_SHUTDOWN_TIMEOUT", defaultShutdownTimeout, "how long running jobs may finish on shutdown before they are cancelled")
	str(flagsLog, &c.LogFormat, "log-format", "RECALL_LOG_FORMAT", "text", "log format: text or json")
	str(flagsLog, &c.LogLevel, "log-level", "RECALL_LOG_LEVEL", "info", "log level: debug, info, warn or error")
	num(flagsWorker, &c.Concurrency, "concurrency", "RECALL_CONCURRENCY", worker.DefaultConcurrency, "ingest transactions (batches of events) at once, and extraction workers")
	num(flagsWorker, &c.MaxBatch, "max-batch", "RECALL_MAX_BATCH", worker.DefaultMaxBatch, "events one ingest transaction records at most (1: each event alone)")
	num(flagsLimits, &c.MaxEventBytes, "max-event-bytes", "RECALL_MAX_EVENT_BYTES", checkpoint.DefaultMaxEventBytes, "largest event accepted; larger ones are rejected as too_large")
	str(flagsProfile, &c.Profile, "evidence-profile", "RECALL_EVIDENCE_PROFILE", string(evidence.ProfileFocus), "evidence profile: focus (sentences, an archive, a view per request) or seed (the seed system's rules exactly)")
	num(flagsProfile, &c.ArchiveMaxEntries, "archive-max-entries", "RECALL_ARCHIVE_MAX_ENTRIES", evidence.DefaultMaxArchiveEntries, "entries a conversation's archive keeps (focus profile); the oldest recent_context entries go first")
	c.Model.bind(fs, env, groups&flagsModel != 0)
	dur(flagsWorker, &c.GapTimeout, "gap-timeout", "RECALL_GAP_TIMEOUT", worker.DefaultGapTimeout, "how long an append event with a gap is retried before it is rejected")
	dur(flagsWorker, &c.RejectionRetention, "rejection-retention", "RECALL_REJECTION_RETENTION", jobs.DefaultRejectionRetention, "how long rejections and the tombstones of deleted conversations are kept")
	num(flagsAPI, &c.APIMaxConns, "api-max-conns", "RECALL_API_MAX_CONNS", 8, "connections of the HTTP API's own Postgres pool (apart from ingest's)")
	num(flagsAPI, &c.MaxWaiters, "max-waiters", "RECALL_MAX_WAITERS", api.DefaultMaxWaiters, "requests that may wait for a state change at once; more are answered 429")
	dur(flagsAPI, &c.APIReadTimeout, "api-read-timeout", "RECALL_API_READ_TIMEOUT", api.DefaultReadTimeout, "how long one read of the HTTP API may take before it is answered 503")
}

// bindStreamReplicas sets StreamReplicas from RECALL_STREAM_REPLICAS and,
// when withFlag, registers -stream-replicas. Unlike the other numbers, a
// value that does not parse is not ignored (a cluster would silently get an
// unreplicated stream): validateStream refuses it.
func (c *config) bindStreamReplicas(fs *flag.FlagSet, env *Env, withFlag bool) {
	f := replicasFlag{c}
	if s := env.Getenv("RECALL_STREAM_REPLICAS"); s != "" {
		_ = f.Set(s)
	}
	if withFlag {
		fs.Var(f, "stream-replicas", "replicas of the stream the worker creates when it is missing, 1 to 5 (3 on a JetStream cluster); "+
			"an existing stream is used as it is (env RECALL_STREAM_REPLICAS) (default 1)")
	}
}

// replicasFlag is -stream-replicas: it keeps the value as given, so that
// validateStream can quote what it refuses.
type replicasFlag struct{ c *config }

func (f replicasFlag) String() string {
	if f.c == nil || f.c.streamReplicasGiven == "" {
		return ""
	}
	return f.c.streamReplicasGiven
}

func (f replicasFlag) Set(s string) error {
	f.c.streamReplicasGiven = s
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		n = -1 // refused by validateStream
	}
	f.c.StreamReplicas = n
	return nil
}

// wakeSubject returns the partition's wake subject: WakeSubject, or the
// one its stream implies.
func (c *config) wakeSubject() string {
	return cmp.Or(c.WakeSubject, wake.SubjectFor(c.Stream))
}

// validateStream checks the stream settings; StreamReplicas 0 (not given)
// means 1.
func (c *config) validateStream() error {
	if c.StreamReplicas == 0 && c.streamReplicasGiven == "" {
		c.StreamReplicas = 1
	}
	if c.StreamReplicas >= 1 && c.StreamReplicas <= worker.MaxReplicas {
		return nil
	}
	return fmt.Errorf("RECALL_STREAM_REPLICAS (-stream-replicas) must be a whole number from 1 to %d (1 on a single NATS server, 3 on a JetStream cluster), not %q",
		worker.MaxReplicas, c.streamReplicasGiven)
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
		return slog.New(tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: time.TimeOnly, NoColor: noColor})), nil
	}
	return nil, fmt.Errorf("RECALL_LOG_FORMAT must be text or json, not %q", c.LogFormat)
}

// MinJWTSecretBytes is the shortest HS256 secret the HTTP API accepts: a
// shorter one falls to an offline brute force from any token it signed.
const MinJWTSecretBytes = apiclient.MinSecretBytes

// jwtSecretHint says how to make a good secret.
const jwtSecretHint = "make one with `openssl rand -hex 32` and export it as RECALL_JWT_SECRET, or write it to a file and pass -jwt-secret-file " +
	"(`recall dev` makes one for you)"

// loadJWTSecret reads the secret from JWTSecretFile when it is set, and
// checks it: the HTTP API refuses to start without one of at least
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
		return errors.New("RECALL_JWT_SECRET is not set: the HTTP API needs the HS256 secret its bearer tokens are signed with; " + jwtSecretHint)
	case n < MinJWTSecretBytes:
		return fmt.Errorf("the JWT secret is %d bytes: it must be at least %d bytes, or anyone holding a token can find it offline; %s",
			n, MinJWTSecretBytes, jwtSecretHint)
	}
	return nil
}

// loadAPIAuth checks how the HTTP API verifies tokens, after parsing: with
// the HS256 secret (loadJWTSecret), the previous secrets, an identity
// provider's JWKS, or the secret and the JWKS together. One of the secret
// and the JWKS must be set.
func (c *config) loadAPIAuth() error {
	if c.JWKSURL == "" && (c.JWTIssuer != "" || c.JWTAudience != "") {
		return errors.New("RECALL_JWT_ISSUER and RECALL_JWT_AUDIENCE check the tokens of an identity provider: set RECALL_JWKS_URL to its JWKS URL too, or unset them")
	}
	if c.JWKSURL == "" && c.JWTSecret == "" && c.JWTSecretFile == "" {
		return errors.New("RECALL_JWT_SECRET is not set: the HTTP API needs the HS256 secret its bearer tokens are signed with, " +
			"or RECALL_JWKS_URL, the JWKS of an identity provider whose tokens it accepts; " + jwtSecretHint)
	}
	if c.JWTSecret != "" || c.JWTSecretFile != "" {
		if err := c.loadJWTSecret(); err != nil {
			return err
		}
	}
	for i, s := range c.JWTPreviousSecrets {
		if len(s) < MinJWTSecretBytes {
			return fmt.Errorf("RECALL_JWT_PREVIOUS_SECRETS: secret %d of %d is %d bytes: each must be at least %d bytes, as RECALL_JWT_SECRET must",
				i+1, len(c.JWTPreviousSecrets), len(s), MinJWTSecretBytes)
		}
	}
	return nil
}

// previousSecrets returns JWTPreviousSecrets as the API takes them.
func (c *config) previousSecrets() [][]byte {
	out := make([][]byte, len(c.JWTPreviousSecrets))
	for i, s := range c.JWTPreviousSecrets {
		out[i] = []byte(s)
	}
	return out
}

// bindJWTSecret sets JWTSecret from RECALL_JWT_SECRET, JWTSecretFile from
// RECALL_JWT_SECRET_FILE and JWTPreviousSecrets from
// RECALL_JWT_PREVIOUS_SECRETS, and, when withFlags, registers
// -jwt-secret-file and the refused -jwt-secret on fs. Call loadJWTSecret
// (or loadAPIAuth) after parsing.
func (c *config) bindJWTSecret(fs *flag.FlagSet, env *Env, withFlags bool) {
	c.JWTSecret = env.Getenv("RECALL_JWT_SECRET")
	c.JWTSecretFile = env.Getenv("RECALL_JWT_SECRET_FILE")
	c.JWTPreviousSecrets = nil
	for s := range strings.SplitSeq(env.Getenv("RECALL_JWT_PREVIOUS_SECRETS"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.JWTPreviousSecrets = append(c.JWTPreviousSecrets, s)
		}
	}
	if withFlags {
		fs.StringVar(&c.JWTSecretFile, "jwt-secret-file", c.JWTSecretFile, "file holding the HS256 secret of the HTTP API's bearer tokens, instead of RECALL_JWT_SECRET (env RECALL_JWT_SECRET_FILE)")
		fs.Var(refusedSecretFlag{}, "jwt-secret", "not accepted: a secret on the command line shows in ps; use RECALL_JWT_SECRET or -jwt-secret-file")
	}
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

// refuseSecretArgs refuses -jwt-secret before the flag package parses it,
// since the flag package would quote the value in its error.
func refuseSecretArgs(fs *flag.FlagSet, args []string) error {
	f := fs.Lookup("jwt-secret")
	if f == nil {
		return nil
	}
	if _, ok := f.Value.(refusedSecretFlag); !ok {
		return nil
	}
	for _, a := range args {
		if a == "--" {
			return nil
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "jwt-secret" {
			fmt.Fprintf(fs.Output(), "flag -jwt-secret: %v\n", refusedSecretFlag{}.Set(""))
			fs.Usage()
			return errUsage
		}
	}
	return nil
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
