// Package bench measures recall end to end on the machine's Postgres and
// NATS, each scenario beside a baseline measured in the same run, so that
// the ratios stay meaningful on a shared, noisy machine:
//
//  1. pipeline throughput (publish to committed state) beside River working
//     as many no-op jobs inserted the same way, and coalescing of a burst;
//  2. the paced load agents make: the capacity (the highest rate of
//     conversations taking turns every few seconds at which the backlog
//     stays bounded), the lag at half and at 80% of it, and the CPU and
//     commits of an event beside River's no-op job at the same rate; then
//     the lag at half scenario 1's maximum and of small bursts;
//  3. the cost of a turn against the conversation's length, for append
//     events and full snapshots;
//  4. read API throughput beside a bare handler doing the same select;
//  5. the worker's peak RSS, as a child process;
//  6. search: the cost of a turn at an archive of 20,000 entries, and
//     POST …/evidence/search on it beside GET …/evidence.
//  7. context assembly: assemble.Build's latency on a 1 MB checkpoint, and
//     POST …/context beside a handler that only decodes the same body.
//  8. users: GET …/evidence with RS256 tokens verified through a JWKS
//     beside HS256 tokens; the export of a user with 100 conversations
//     and 200,000 archive entries from a child `recall api` (its rate and
//     the child's RSS growth), and the deletion of that user.
//
// It works in a throwaway database with a unique name and on JetStream
// streams and subjects of its own, and removes them at the end.
package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/internal/redact"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/worker"
)

// Scenario names, for Config.Scenarios.
const (
	ScenarioPipeline = "pipeline" // 1: throughput and coalescing
	ScenarioPaced    = "paced"    // 2: capacity, lag and cost at paced load
	ScenarioLag      = "lag"      // 2: lag at half of scenario 1's maximum
	ScenarioCost     = "cost"     // 3
	ScenarioRead     = "read"     // 4
	ScenarioMemory   = "memory"   // 5
	ScenarioSearch   = "search"   // 6
	ScenarioContext  = "context"  // 7
	ScenarioUsers    = "users"    // 8: export, deletion, JWKS
)

// Scenarios lists every scenario in the order they run.
var Scenarios = []string{ScenarioPipeline, ScenarioPaced, ScenarioLag, ScenarioCost, ScenarioRead, ScenarioMemory, ScenarioSearch, ScenarioContext, ScenarioUsers}

// Config configures a run.
type Config struct {
	// DatabaseURL names the Postgres server; the run creates a database of
	// its own on it and drops it at the end. Defaults to
	// postgres://postgres@127.0.0.1:5432/recall?sslmode=disable.
	DatabaseURL string
	// NATSURL is the NATS server with JetStream. Defaults to
	// nats://127.0.0.1:4222.
	NATSURL string
	// Concurrency is the worker's concurrency (ingest transactions at once and
	// extraction workers), and the baseline's inserting goroutines and River
	// workers. Defaults to 16.
	Concurrency int
	// LagRate, when positive, is the rate of the lag scenario in events per
	// second, instead of half of scenario 1's maximum: to compare lag at
	// the same load across versions. Defaults to 0.
	LagRate float64
	// Capacity, when positive, is taken as the paced scenario's capacity
	// instead of searching for it: to compare lag and cost at the same load
	// across versions. Defaults to 0.
	Capacity float64
	// Quick runs a reduced version of every scenario. Defaults to false.
	Quick bool
	// Tiny shrinks every scenario to a smoke test, for the command's own
	// test. Defaults to false.
	Tiny bool
	// Scenarios selects the scenarios to run. Defaults to all of them.
	Scenarios []string
	// Executable is the recall binary run as the child worker of the memory
	// and paced scenarios ("recall worker") and the child API of the paced
	// and users scenarios ("recall api"). Defaults to os.Executable().
	Executable string
	// Progress receives a line per step. Defaults to discarding.
	Progress io.Writer
	// SQLStats adds up the client-side time of each SQL statement the
	// in-process parts run, per scenario, into Result.SQL. Defaults to
	// false.
	SQLStats bool
	// InProcess runs the paced scenario's recall in this process rather
	// than as child processes, so that a CPU profile or SQLStats covers it;
	// recall's CPU then includes the load generator's. Defaults to false.
	InProcess bool
}

// runsChildren says whether a scenario of the run starts recall as child
// processes: the memory scenario's worker, the users scenario's API, and
// the paced scenario's worker and API unless they run in this process.
func (c *Config) runsChildren() bool {
	return slices.Contains(c.Scenarios, ScenarioMemory) || slices.Contains(c.Scenarios, ScenarioUsers) ||
		(slices.Contains(c.Scenarios, ScenarioPaced) && !c.InProcess)
}

// sizes are a run's workloads.
type sizes struct {
	convs, users, turns, trials int
	burst                       int
	lagDuration                 time.Duration
	lagTurns                    int
	lagBurstRounds              int
	costLengths                 []int
	costTurns, costWarm         int
	readRounds                  int
	readDuration                time.Duration
	readClients                 int
	bigEvent                    int
	memConvs, memTurns          int
	searchEntries               int // the search scenario's archive
	searchTurns                 int
	searchClients               int
	contextCalls                int
	contextRounds               int
	contextDuration             time.Duration
	contextClients              int
	bestJobs                    int           // River at its best: jobs per setting tried
	commitDuration              time.Duration // the commit limit's run
	digestRounds                int
	usersConvs, usersEntries    int // the users scenario's user
	usersClients                int
	exportRounds                int
	pacedPeriod                 time.Duration // between a conversation's turns
	pacedWindow                 time.Duration // of each rate tried
	pacedStart                  float64       // the first rate tried
	pacedSteps                  int           // rates tried at most
	pacedPollers                int           // long-polls at once
}

func sizesFor(cfg *Config) sizes {
	switch {
	case cfg.Tiny:
		return sizes{convs: 20, users: 4, turns: 4, trials: 1, burst: 30,
			lagDuration: time.Second, lagTurns: 4, lagBurstRounds: 5,
			costLengths: []int{10, 100}, costTurns: 2, costWarm: 1,
			readRounds: 1, readDuration: 300 * time.Millisecond, readClients: 64,
			bigEvent: 1 << 20, memConvs: 20, memTurns: 4, bestJobs: 2000, commitDuration: 300 * time.Millisecond, digestRounds: 3,
			searchEntries: 400, searchTurns: 2, searchClients: 4,
			contextCalls: 20, contextRounds: 1, contextDuration: 300 * time.Millisecond, contextClients: 2,
			usersConvs: 4, usersEntries: 400, usersClients: 4, exportRounds: 1,
			pacedPeriod: time.Second, pacedWindow: 2 * time.Second, pacedStart: 20, pacedSteps: 2, pacedPollers: 16}
	case cfg.Quick:
		return sizes{convs: 300, users: 30, turns: 10, trials: 1, burst: 100,
			lagDuration: 5 * time.Second, lagTurns: 10, lagBurstRounds: 25,
			costLengths: []int{10, 100, 1000, 10000}, costTurns: 5, costWarm: 1,
			readRounds: 2, readDuration: time.Second, readClients: 64,
			bigEvent: 8 << 20, memConvs: 300, memTurns: 10, bestJobs: 10000, commitDuration: 2 * time.Second, digestRounds: 15,
			searchEntries: 20000, searchTurns: 9, searchClients: 16,
			contextCalls: 300, contextRounds: 2, contextDuration: 2 * time.Second, contextClients: 4,
			usersConvs: 20, usersEntries: 20000, usersClients: 16, exportRounds: 3,
			pacedPeriod: 4 * time.Second, pacedWindow: 15 * time.Second, pacedStart: 100, pacedSteps: 7, pacedPollers: 256}
	}
	return sizes{convs: 1000, users: 100, turns: 20, trials: 3, burst: 100,
		lagDuration: 20 * time.Second, lagTurns: 20, lagBurstRounds: 60,
		costLengths: []int{10, 100, 1000, 10000}, costTurns: 15, costWarm: 2,
		readRounds: 5, readDuration: 3 * time.Second, readClients: 64,
		bigEvent: 8 << 20, memConvs: 1000, memTurns: 20, bestJobs: 30000, commitDuration: 5 * time.Second, digestRounds: 41,
		searchEntries: 20000, searchTurns: 25, searchClients: 16,
		contextCalls: 1000, contextRounds: 5, contextDuration: 3 * time.Second, contextClients: 4,
		usersConvs: 100, usersEntries: 200000, usersClients: 16, exportRounds: 3,
		pacedPeriod: 4 * time.Second, pacedWindow: time.Minute, pacedStart: 100, pacedSteps: 9, pacedPollers: 256}
}

// Run runs the selected scenarios and returns their figures.
func Run(ctx context.Context, cfg *Config) (res *Result, err error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	c.DatabaseURL = cmp.Or(c.DatabaseURL, "postgres://postgres@127.0.0.1:5432/recall?sslmode=disable")
	c.NATSURL = cmp.Or(c.NATSURL, nats.DefaultURL)
	c.Concurrency = cmp.Or(c.Concurrency, worker.DefaultConcurrency)
	if c.Concurrency < 1 {
		return nil, errors.New("bench: Concurrency must be at least 1")
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = Scenarios
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(Scenarios, s) {
			return nil, fmt.Errorf("bench: unknown scenario %q: choose from %s", s, strings.Join(Scenarios, ", "))
		}
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Executable == "" && c.runsChildren() {
		if c.Executable, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("bench: find the recall executable for the child worker and API: %w", err)
		}
	}

	started := time.Now()
	e, err := setup(ctx, &c)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := e.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	res = &Result{Quick: c.Quick, Tiny: c.Tiny, Concurrency: c.Concurrency, Machine: e.machine(ctx)}
	// A scenario that fails is reported and the others still run; the run
	// fails only when the context ends.
	run := func(name string, fn func(context.Context, *Result) error) error {
		if !slices.Contains(c.Scenarios, name) {
			return nil
		}
		e.progress("== %s", name)
		e.traceAs(name)
		if err := fn(ctx, res); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("bench: %s: %w", name, err)
			}
			e.progress("%s FAILED: %v", name, err)
			res.Failed = append(res.Failed, ScenarioFailure{Scenario: name, Error: err.Error()})
			// What the scenario left running goes, so that the next
			// starts afresh.
			if err := e.stopPipeline(); err != nil {
				e.progress("stop the pipeline after %s: %v", name, err)
			}
		}
		return nil
	}
	if err := run(ScenarioPipeline, e.pipelineScenario); err != nil {
		return nil, err
	}
	if err := run(ScenarioPaced, e.pacedScenario); err != nil {
		return nil, err
	}
	if err := run(ScenarioLag, e.lagScenario); err != nil {
		return nil, err
	}
	if err := run(ScenarioCost, e.costScenario); err != nil {
		return nil, err
	}
	if err := run(ScenarioRead, e.readScenario); err != nil {
		return nil, err
	}
	if err := run(ScenarioMemory, e.memoryScenario); err != nil {
		return nil, err
	}
	if err := run(ScenarioSearch, e.searchScenario); err != nil {
		return nil, err
	}
	if err := run(ScenarioContext, e.contextScenario); err != nil {
		return nil, err
	}
	if err := run(ScenarioUsers, e.usersScenario); err != nil {
		return nil, err
	}
	res.DurationS = time.Since(started).Seconds()
	if e.tracer != nil {
		res.SQL = e.tracer.top(12)
	}
	return res, nil
}

// env is one run's database, NATS connections and names.
type env struct {
	cfg     *Config
	sz      sizes
	id      string
	logger  *slog.Logger
	ids     *eventIDs
	dbName  string
	dbURL   string
	admin   string // URL of the server's database the run connects to for CREATE/DROP
	pool    *pgxpool.Pool
	nc      *nats.Conn // the in-process worker's
	pubNC   *nats.Conn // the publisher's
	js      jetstream.JetStream
	stream  string
	subject string
	streams []string // created on the configured server, deleted at the end

	pipe   *pipeline // the in-process pipeline, while it runs
	tracer *sqlTracer

	// warmUsers and warmConvs name conversations with full evidence, for
	// the read scenario, once scenario 1 (or warm) ran.
	warmKeys [][2]string
	// pipelineRate is the median pipeline throughput, for the lag scenario.
	pipelineRate float64
}

// traceAs labels the SQL statements that follow, with Config.SQLStats.
func (e *env) traceAs(label string) {
	if e.tracer != nil {
		e.tracer.setScenario(label)
	}
}

func (e *env) progress(format string, args ...any) {
	if e.cfg.Progress != nil {
		fmt.Fprintf(e.cfg.Progress, "bench: "+format+"\n", args...)
	}
}

func setup(ctx context.Context, cfg *Config) (e *env, err error) {
	var b [5]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	e = &env{cfg: cfg, sz: sizesFor(cfg), id: id, logger: slog.New(slog.DiscardHandler),
		ids:     &eventIDs{prefix: "bench-" + id},
		dbName:  "recall_bench_" + id,
		stream:  "RECALL_BENCH_" + strings.ToUpper(id),
		subject: "recall.bench." + id + ".checkpoints"}
	defer func() {
		if err != nil {
			_ = e.close()
		}
	}()
	if err := e.createDatabase(ctx); err != nil {
		return nil, err
	}
	e.progress("database %s created on %s", e.dbName, redact.ConnString(cfg.DatabaseURL))
	if err := store.Migrate(ctx, e.dbURL, nil); err != nil {
		return nil, fmt.Errorf("bench: migrate %s: %w", e.dbName, err)
	}
	pcfg, err := pgxpool.ParseConfig(e.dbURL)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	// As recall run sizes its pool.
	pcfg.MaxConns = max(pcfg.MaxConns, int32(2*cfg.Concurrency+8))
	pcfg.ConnConfig.RuntimeParams["application_name"] = "recall_bench"
	if cfg.SQLStats {
		e.tracer = newSQLTracer()
		pcfg.ConnConfig.Tracer = e.tracer
	}
	if e.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return nil, fmt.Errorf("bench: connect to %s: %w", e.dbName, err)
	}
	connect := func(name string) (*nats.Conn, error) {
		nc, err := nats.Connect(cfg.NATSURL, nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(200*time.Millisecond))
		if err != nil {
			return nil, fmt.Errorf("bench: connect to NATS at %s: %w", redact.ConnString(cfg.NATSURL), err)
		}
		return nc, nil
	}
	if e.nc, err = connect("recall-bench-worker"); err != nil {
		return nil, err
	}
	if e.pubNC, err = connect("recall-bench-publisher"); err != nil {
		return nil, err
	}
	if e.js, err = jetstream.New(e.pubNC, jetstream.WithPublishAsyncMaxPending(4096)); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return e, nil
}

// createDatabase creates the run's database on DATABASE_URL's server.
func (e *env) createDatabase(ctx context.Context) error {
	ccfg, err := pgx.ParseConfig(e.cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("bench: parse DATABASE_URL: %w", err)
	}
	e.admin = e.cfg.DatabaseURL
	conn, err := pgx.ConnectConfig(ctx, ccfg)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "3D000" { // its database does not exist yet
		if e.admin, err = withDatabase(e.cfg.DatabaseURL, "postgres"); err != nil {
			return err
		}
		conn, err = pgx.Connect(ctx, e.admin)
	}
	if err != nil {
		return fmt.Errorf("bench: connect to Postgres at %s: %w", redact.ConnString(e.cfg.DatabaseURL), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{e.dbName}.Sanitize()); err != nil {
		return fmt.Errorf("bench: create database %s: %w", e.dbName, err)
	}
	if e.dbURL, err = withDatabase(e.cfg.DatabaseURL, e.dbName); err != nil {
		return err
	}
	return nil
}

// withDatabase returns connString naming database name instead.
func withDatabase(connString, name string) (string, error) {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			return "", fmt.Errorf("bench: parse DATABASE_URL: %w", err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// keyword/value: the last dbname wins.
	return connString + " dbname=" + name, nil
}

// close stops what runs and removes the database and the streams.
func (e *env) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	if e.pipe != nil {
		errs = append(errs, e.pipe.stop())
		e.pipe = nil
	}
	if e.js != nil {
		for _, s := range e.streams {
			if err := e.js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				errs = append(errs, fmt.Errorf("bench: delete stream %s: %w", s, err))
			}
		}
	}
	for _, nc := range []*nats.Conn{e.nc, e.pubNC} {
		if nc != nil {
			nc.Close()
		}
	}
	if e.pool != nil {
		e.pool.Close()
	}
	if e.dbURL != "" {
		conn, err := pgx.Connect(ctx, e.admin)
		if err == nil {
			_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{e.dbName}.Sanitize()+" WITH (FORCE)")
			_ = conn.Close(ctx)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("bench: drop database %s: %w", e.dbName, err))
		} else {
			e.progress("database %s dropped", e.dbName)
		}
	}
	return errors.Join(errs...)
}

// machine describes where the run happens.
func (e *env) machine(ctx context.Context) Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), NATS: e.nc.ConnectedServerVersion()}
	_ = e.pool.QueryRow(ctx, `SELECT current_setting('server_version')`).Scan(&m.Postgres)
	return m
}
