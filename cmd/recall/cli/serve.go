package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"riverqueue.com/riverui"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/internal/redact"
	"github.com/recallhq/recall/internal/telemetry"
	"github.com/recallhq/recall/jobs"
	"github.com/recallhq/recall/pipeline"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/wake"
	"github.com/recallhq/recall/worker"
)

func init() {
	register("migrate", "apply recall's and River's migrations (idempotent)", runMigrate)
	register("worker", "consume checkpoint events from NATS and run extraction jobs", func(ctx context.Context, env *Env, args []string) error {
		return runServe(ctx, env, "worker", args, roles{worker: true})
	})
	register("api", "serve the HTTP API (reads, search, context, deletes and HTTP ingest)", func(ctx context.Context, env *Env, args []string) error {
		return runServe(ctx, env, "api", args, roles{api: true})
	})
	register("run", "worker and HTTP API in one process (the usual deployment)", func(ctx context.Context, env *Env, args []string) error {
		return runServe(ctx, env, "run", args, roles{worker: true, api: true})
	})
}

func runMigrate(ctx context.Context, env *Env, args []string) error {
	var cfg config
	fs := newFlags(env, "migrate", "")
	cfg.bind(fs, env, flagsDB|flagsLog)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logger, err := cfg.logger(env.Stderr)
	if err != nil {
		return err
	}
	if err := store.Migrate(ctx, cfg.DatabaseURL, logger); err != nil {
		return err
	}
	logger.InfoContext(ctx, "migrations applied", slog.String("database", redact.ConnString(cfg.DatabaseURL)))
	return nil
}

// roles says which parts a process runs.
type roles struct{ worker, api bool }

// flags returns the flag groups of a process that runs r.
func (r roles) flags() flagGroup {
	g := flagsDB | flagsNATS | flagsStream | flagsLog | flagsLimits | flagsShutdown | flagsProfile
	if r.worker {
		g |= flagsWorker | flagsModel
	}
	if r.api {
		g |= flagsAPI
	}
	return g
}

func runServe(ctx context.Context, env *Env, name string, args []string, r roles) error {
	var cfg config
	fs := newFlags(env, name, "")
	cfg.bind(fs, env, r.flags())
	noMigrate := fs.Bool("no-migrate", env.Getenv("RECALL_NO_MIGRATE") != "", "do not apply migrations at start (env RECALL_NO_MIGRATE)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logger, err := cfg.logger(env.Stderr)
	if err != nil {
		return err
	}
	if r.api {
		if err := cfg.loadAPIAuth(); err != nil {
			return err
		}
	}
	app, err := start(ctx, &cfg, r, !*noMigrate, logger, nil)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return app.stop(logger)
}

// app is a running recall process: the parts it started, in start order.
type app struct {
	cfg     *config
	logger  *slog.Logger
	pool    *pgxpool.Pool
	apiPool *pgxpool.Pool // the read API's own, when it runs
	// readPool is the read replica's, when RECALL_READ_DATABASE_URL names
	// one; replica reads through it.
	readPool *pgxpool.Pool
	replica  *store.ReplicaReader
	nc       *nats.Conn
	pipe     *pipeline.Pipeline // the worker's, when it runs
	// tracing is the tracer provider the OTEL_* variables asked for, which
	// stop flushes; nil when traces are off (or a test supplied its own).
	tracing *sdktrace.TracerProvider
	// tp receives every part's spans; nil when traces are off.
	tp trace.TracerProvider
	// stopQueue ends the count of the extraction queue (jobs.WatchQueue).
	stopQueue func()
	// wake wakes the API's waiters when the worker (of this process or
	// another) announces a change.
	wake    *wake.Subscriber
	handler *api.Handler
	server  *http.Server
	// uiServer serves the River UI, when asked for; stopUI ends the UI's
	// background services.
	uiServer *http.Server
	stopUI   context.CancelFunc
	serveErr chan error
	// Addr is where the API listens, when it runs; UIAddr where the River
	// UI does.
	Addr, UIAddr string
}

// start connects to Postgres and NATS, migrates when asked, and starts the
// parts of r. On error it stops what it started.
func start(ctx context.Context, cfg *config, r roles, migrate bool, logger *slog.Logger, m *metrics.Metrics) (a *app, err error) {
	started := &app{cfg: cfg, logger: logger, serveErr: make(chan error, 1)}
	a = started
	defer func() {
		// Error paths return a nil app: stop what was started through the
		// local copy.
		if err != nil {
			_ = started.stop(logger)
		}
	}()
	if m == nil {
		m = metrics.New()
	}
	if err := cfg.validateStream(); err != nil {
		return nil, err
	}
	var lane *jobs.ModelLane
	if r.worker {
		// Before anything else: a lane that cannot work stops the start.
		if lane, err = cfg.modelLane(); err != nil {
			return nil, err
		}
	}
	if a.tp = cfg.tracerProvider; a.tp == nil {
		if a.tracing, err = telemetry.Setup(ctx, cfg.getenv); err != nil {
			return nil, err
		}
		if a.tracing != nil {
			a.tp = a.tracing
			logger.InfoContext(ctx, "traces on, as the OTEL_* variables ask")
		}
	}
	var idp *api.IdentityProvider
	if r.api && cfg.JWKSURL != "" {
		// Before anything else: without the keys it was told to trust, the
		// API does not start.
		if idp, err = api.NewIdentityProvider(ctx, &api.IdentityProviderConfig{
			JWKSURL: cfg.JWKSURL, Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, Logger: logger,
		}); err != nil {
			return nil, err
		}
	}
	if migrate {
		if err := store.Migrate(ctx, cfg.DatabaseURL, logger); err != nil {
			return nil, err
		}
	}
	if a.pool, err = newPool(ctx, cfg.DatabaseURL, "recall", 0, int32(2*cfg.Concurrency+8), a.tp); err != nil {
		return nil, err
	}
	a.nc, err = nats.Connect(cfg.NATSURL,
		nats.Name("recall"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500*time.Millisecond),
		nats.RetryOnFailedConnect(r.api && !r.worker), // the API alone starts without NATS and reports not ready
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				logger.Warn("NATS disconnected", slog.String("error", err.Error()))
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { logger.Info("NATS reconnected") }),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", redact.ConnString(cfg.NATSURL), err)
	}
	fold, err := cfg.foldConfig()
	if err != nil {
		return nil, err
	}
	if r.worker {
		p, err := pipeline.New(a.pool, a.nc, &pipeline.Config{
			Store: &store.Config{Fold: fold},
			Jobs:  &jobs.Config{Workers: cfg.Concurrency, RejectionRetention: cfg.RejectionRetention},
			Worker: &worker.Config{Stream: cfg.Stream, Subject: cfg.Subject, Replicas: cfg.StreamReplicas, Concurrency: cfg.Concurrency, MaxBatch: cfg.MaxBatch,
				Limits: checkpoint.Limits{MaxEventBytes: cfg.MaxEventBytes}, GapTimeout: cfg.GapTimeout},
			WakeSubject: cfg.wakeSubject(),
			Model:       lane,
			Metrics:     m, TracerProvider: a.tp, Logger: logger,
		})
		if err != nil {
			return nil, err
		}
		if err := p.Start(ctx); err != nil {
			return nil, err
		}
		a.pipe = p
		if lane != nil {
			logger.InfoContext(ctx, "model lane on: notes of a model beside the profile's evidence", slog.String("model", cfg.Model.Name),
				slog.String("endpoint", redact.ConnString(cfg.Model.URL)), slog.Int("concurrency", lane.Concurrency), slog.Duration("timeout", lane.Timeout))
		}
	}
	if r.api {
		if a.apiPool, err = newPool(ctx, cfg.DatabaseURL, "recall_api", int32(max(cfg.APIMaxConns, 1)), 0, a.tp); err != nil {
			return nil, err
		}
		// The API's store searches with the profile extraction uses.
		apiStore, err := store.New(a.apiPool, &store.Config{Logger: logger, Fold: fold})
		if err != nil {
			return nil, err
		}
		src, err := a.readSource(ctx, apiStore, fold, m)
		if err != nil {
			return nil, err
		}
		// Waiters are woken over NATS by the workers of the partition that
		// share the wake subject, and poll besides.
		if a.wake, err = wake.NewSubscriber(a.nc, &wake.Config{Subject: cfg.wakeSubject(), Logger: logger}); err != nil {
			return nil, err
		}
		if err := a.wake.Start(ctx); err != nil {
			return nil, err
		}
		// Deletions through the API wake the waiters of other processes.
		waker, err := wake.NewPublisher(a.nc, cfg.wakeSubject(), logger)
		if err != nil {
			return nil, err
		}
		js, err := jetstream.New(a.nc)
		if err != nil {
			return nil, fmt.Errorf("jetstream: %w", err)
		}
		a.handler, err = api.New(src, &api.Config{
			JWTSecret:          []byte(cfg.JWTSecret),
			JWTPreviousSecrets: cfg.previousSecrets(),
			IdentityProvider:   idp,
			Notifier:           a.wake,
			Waker:              waker,
			Ready:              a.ready,
			MaxWaiters:         cfg.MaxWaiters,
			ReadTimeout:        cfg.APIReadTimeout,
			Metrics:            m,
			Logger:             logger,
			Publisher:          streamPublisher{js: js, subject: cfg.Subject, stream: cfg.Stream},
			Limits:             checkpoint.Limits{MaxEventBytes: cfg.MaxEventBytes},
			Rejections:         storeRejections{apiStore},
			Users:              storeUsers{apiStore},
			TracerProvider:     a.tp,
			Inspector:          apiStore, // the primary, as the user routes: what the worker last wrote
			MCP:                mcpHandler(logger),
		})
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return nil, fmt.Errorf("listen on %s (RECALL_HTTP_ADDR): %w", cfg.HTTPAddr, err)
		}
		a.Addr = ln.Addr().String()
		a.server = api.NewServer(cfg.HTTPAddr, a.handler)
		go func() {
			if err := a.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.serveErr <- err
			}
		}()
		logger.InfoContext(ctx, "read API listening", slog.String("addr", a.Addr))
		// The extraction queue's depth, for /metrics; counted until stop.
		a.stopQueue = jobs.WatchQueue(a.apiPool, m, jobs.QueueInterval, logger)
		if cfg.RiverUIAddr != "" {
			var rc *river.Client[pgx.Tx]
			if a.pipe != nil {
				rc = a.pipe.River
			}
			if err := a.startRiverUI(ctx, rc); err != nil {
				return nil, err
			}
		}
	}
	return a, nil
}

// startRiverUI serves the River UI on cfg.RiverUIAddr behind the API's
// service-scope check, over the worker's River client or, in an API-only
// process, a client that works no jobs.
func (a *app) startRiverUI(ctx context.Context, rc *river.Client[pgx.Tx]) error {
	if rc == nil {
		var err error
		if rc, err = jobs.NewInserter(a.pool, a.logger, nil); err != nil {
			//lint:ignore ST1005 begins with a proper noun (River UI), which ST1005 allows but cannot tell from a capitalized word
			return fmt.Errorf("River UI: %w", err)
		}
	}
	ui, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(rc, nil),
		// Job arguments carry only a conversation's key, but hide them
		// until asked all the same.
		JobListHideArgsByDefault: true,
		Logger:                   a.logger,
	})
	if err != nil {
		//lint:ignore ST1005 begins with a proper noun (River UI), which ST1005 allows but cannot tell from a capitalized word
		return fmt.Errorf("River UI: %w", err)
	}
	uiCtx, stopUI := context.WithCancel(context.WithoutCancel(ctx))
	a.stopUI = stopUI
	if err := ui.Start(uiCtx); err != nil {
		//lint:ignore ST1005 begins with a proper noun (River UI), which ST1005 allows but cannot tell from a capitalized word
		return fmt.Errorf("River UI: %w", err)
	}
	ln, err := net.Listen("tcp", a.cfg.RiverUIAddr)
	if err != nil {
		return fmt.Errorf("listen on %s (RECALL_RIVER_UI_ADDR): %w", a.cfg.RiverUIAddr, err)
	}
	a.UIAddr = ln.Addr().String()
	a.uiServer = api.NewServer(a.cfg.RiverUIAddr, a.handler.RequireService(ui))
	go func() {
		if err := a.uiServer.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.serveErr <- err
		}
	}()
	a.logger.InfoContext(ctx, "River UI listening", slog.String("addr", a.UIAddr))
	return nil
}

// newPool connects a pool to dbURL whose connections carry appName. Its
// size is exactly maxConns when that is set, else at least minMax. With tp
// set, each statement run under a span is a span of its own (otelpgx),
// which names the statement, never its arguments.
func newPool(ctx context.Context, dbURL, appName string, maxConns, minMax int32, tp trace.TracerProvider) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	if maxConns > 0 {
		pcfg.MaxConns = maxConns
	} else {
		pcfg.MaxConns = max(pcfg.MaxConns, minMax)
	}
	pcfg.MinConns = min(pcfg.MinConns, pcfg.MaxConns)
	if pcfg.ConnConfig.RuntimeParams == nil {
		pcfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = appName
	if tp != nil {
		pcfg.ConnConfig.Tracer = otelpgx.NewTracer(otelpgx.WithTracerProvider(tp))
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = pool.Ping(pingCtx)
	cancel()
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to Postgres at %s: %w", redact.ConnString(dbURL), err)
	}
	return pool, nil
}

// streamPublisher publishes the API's checkpoint events to the stream the
// workers consume.
type streamPublisher struct {
	js      jetstream.JetStream
	subject string
	stream  string
}

func (p streamPublisher) Publish(ctx context.Context, eventID string, data []byte) (uint64, bool, error) {
	msg := nats.NewMsg(p.subject)
	msg.Header.Set(jetstream.MsgIDHeader, eventID)
	// The event carries the request's trace (its span, when the API traces).
	propagation.TraceContext{}.Inject(ctx, checkpoint.HeaderCarrier(msg.Header))
	msg.Data = data
	ack, err := p.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(p.stream))
	if err != nil {
		if errors.Is(err, jetstream.ErrNoStreamResponse) {
			err = fmt.Errorf("%w: %w", api.ErrNoStream, err)
		}
		return 0, false, err
	}
	return ack.Sequence, ack.Duplicate, nil
}

// storeRejections lists a conversation's rejections for the API, never
// with their payloads.
type storeRejections struct{ st *store.Store }

func (s storeRejections) ConversationRejections(ctx context.Context, userID, conversationID, eventID string, limit int) ([]api.Rejection, error) {
	rows, err := s.st.Rejections(ctx, store.RejectionFilter{UserID: userID, ConversationID: conversationID, EventID: eventID, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]api.Rejection, len(rows))
	for i, r := range rows {
		out[i] = api.Rejection{ID: r.ID, Reason: r.Reason, Detail: r.Detail, EventID: r.EventID,
			UserID: r.UserID, ConversationID: r.ConversationID, ReceivedAt: r.ReceivedAt}
	}
	return out, nil
}

// ready reports whether Postgres and NATS are reachable.
func (a *app) ready(ctx context.Context) error {
	if err := a.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if !a.nc.IsConnected() {
		return errors.New("nats: not connected")
	}
	return nil
}

// stop drains the process: the API reports not ready and answers its
// waiters, the worker stops taking NATS messages and finishes (and
// acknowledges) those in flight, running jobs get until the shutdown
// timeout and are then cancelled (River retries them later), and the HTTP
// server closes gracefully.
func (a *app) stop(logger *slog.Logger) error {
	timeout := a.cfg.ShutdownTimeout
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	logger.Info("draining", slog.Duration("timeout", timeout))
	if a.handler != nil {
		a.handler.SetDraining()
	}
	var wg sync.WaitGroup
	if a.server != nil {
		wg.Go(func() {
			if err := a.server.Shutdown(ctx); err != nil {
				logger.Warn("HTTP server shutdown", slog.String("error", err.Error()))
				_ = a.server.Close()
			}
		})
	}
	if a.uiServer != nil {
		wg.Go(func() {
			if err := a.uiServer.Shutdown(ctx); err != nil {
				_ = a.uiServer.Close()
			}
		})
	}
	if a.stopUI != nil {
		defer a.stopUI()
	}
	if a.stopQueue != nil {
		a.stopQueue()
	}
	if a.pipe != nil {
		wg.Go(func() { _ = a.pipe.Stop(ctx) })
	}
	wg.Wait()
	if a.wake != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = a.wake.Stop(stopCtx)
		cancel()
	}
	if a.nc != nil {
		_ = a.nc.Drain()
		a.nc.Close()
	}
	if a.apiPool != nil {
		a.apiPool.Close()
	}
	if a.readPool != nil {
		a.readPool.Close()
	}
	if a.pool != nil {
		a.pool.Close()
	}
	if a.tracing != nil {
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := a.tracing.Shutdown(flushCtx); err != nil {
			logger.Warn("traces: flushing the last spans", slog.String("error", err.Error()))
		}
		cancel()
	}
	logger.Info("stopped")
	return nil
}
