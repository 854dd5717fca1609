package api

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/metrics"
)

// Source is what the handler reads and deletes evidence through.
type Source interface {
	// Evidence returns the stored record; for an unknown or deleted key a
	// Record with only the key set (Version 0, Body nil).
	Evidence(ctx context.Context, userID, conversationID string) (evidence.Record, error)
	// Search returns the stored record with its message and buckets chosen
	// for query instead of the current request (the focus view); in the
	// seed profile, the stored record. Unknown and deleted keys are as in
	// Evidence.
	Search(ctx context.Context, userID, conversationID, query string) (evidence.Record, error)
	// DeleteConversation deletes evidence and held messages and writes a
	// tombstone. It is idempotent.
	DeleteConversation(ctx context.Context, userID, conversationID string) error
}

// Notifier wakes long-polling requests.
type Notifier interface {
	// Subscribe returns a channel that receives after each state change of
	// the key (and whenever changes may have been missed, such as after a
	// reconnect), and a function that ends the subscription. The channel
	// is never closed; receivers re-read the state on each wake-up.
	Subscribe(userID, conversationID string) (<-chan struct{}, func())
}

// A Waker wakes the requests that wait on a conversation in every process.
type Waker interface {
	// Wake announces that the key's state changed; it never blocks.
	Wake(ctx context.Context, userID, conversationID string, cursor int)
}

// DefaultMaxWait is the longest wait a request may ask for.
const DefaultMaxWait = 30 * time.Second

// DefaultReadyTimeout bounds one /readyz check.
const DefaultReadyTimeout = 2 * time.Second

// Config configures a Handler.
type Config struct {
	// JWTSecret is the HS256 key bearer tokens are signed with
	// (RECALL_JWT_SECRET). Defaults to none: New refuses to run without it
	// unless IdentityProvider is set.
	JWTSecret []byte
	// JWTPreviousSecrets are older HS256 secrets that still verify tokens,
	// never sign them, so that JWTSecret can be rotated without logging
	// anyone out (RECALL_JWT_PREVIOUS_SECRETS). Defaults to none.
	JWTPreviousSecrets [][]byte
	// IdentityProvider verifies the RS256, ES256 and EdDSA tokens of an
	// identity provider with the keys of its JWKS (RECALL_JWKS_URL), beside
	// the HS256 tokens of JWTSecret. Defaults to none: HS256 tokens only.
	IdentityProvider *IdentityProvider
	// Notifier wakes long-polling requests (?min_cursor=N&wait=D) when a
	// conversation's state changes; usually a *wake.Subscriber. Defaults to
	// none: New refuses to run without it, as waiting would mean polling.
	Notifier Notifier
	// Waker tells the waiters of other processes that a conversation was
	// deleted through this API (the waiters of this one read it again
	// directly); usually a *wake.Publisher. Defaults to none: theirs find
	// out at their next poll.
	Waker Waker
	// Ready reports whether the process's dependencies (Postgres, NATS) are
	// reachable, for /readyz. Defaults to always ready.
	Ready func(ctx context.Context) error
	// ReadyTimeout bounds one call to Ready. Defaults to 2s.
	ReadyTimeout time.Duration
	// MaxWait is the longest wait a request may ask for; longer ones are
	// answered 400. Defaults to 30s.
	MaxWait time.Duration
	// MaxWaiters bounds the requests of this process that wait for a state
	// change at once (RECALL_MAX_WAITERS); past it, a request that would
	// wait is answered 429 with Retry-After. Defaults to 1000.
	MaxWaiters int
	// ReadTimeout bounds one read of the store; a read that takes longer is
	// answered 503. Defaults to 5s.
	ReadTimeout time.Duration
	// Metrics receives request counts, latencies and the waiter gauge, and
	// is served on /metrics. Defaults to a fresh metrics.New().
	Metrics *metrics.Metrics
	// Logger receives server errors and a summary of each context assembly
	// (estimates and counts; never ids or message text). Defaults to a
	// logger that discards.
	Logger *slog.Logger
	// Publisher publishes the events of POST /v1/checkpoints to the stream.
	// Defaults to none: the route answers 503.
	Publisher Publisher
	// Limits bound the events POST /v1/checkpoints accepts; use the
	// worker's, so that what the API accepts the worker accepts. Defaults
	// to evidence's defaults.
	Limits checkpoint.Limits
	// PublishTimeout bounds the wait for the stream's ack of one event.
	// Defaults to 10s.
	PublishTimeout time.Duration
	// Rejections lists a conversation's recorded rejections for
	// GET …/rejections. Defaults to none: the route answers 503.
	Rejections RejectionLister
	// Users lists, exports and deletes all of a user's conversations, for
	// GET /v1/users/{user_id}/conversations, GET …/export and
	// DELETE /v1/users/{user_id}. Defaults to none: those routes answer 503.
	Users UserSource
	// TracerProvider, when set, receives a server span per request (but
	// health checks and /metrics), named after its route, that continues
	// the trace of the request's traceparent header; the reads and the
	// publish of POST /v1/checkpoints run under it. Defaults to none: no
	// spans.
	TracerProvider trace.TracerProvider
	// Inspector reads conversations for the evidence inspector's page
	// (/inspect/). Defaults to none: the page's data routes answer 503.
	Inspector Inspector
	// MCP builds the handler of /mcp, the Model Context Protocol over the
	// streamable HTTP transport, from the handler's own Reads; New calls it
	// once. The API verifies each request's bearer token (401 otherwise)
	// and passes it on with its Caller in the context (CallerFrom).
	// Defaults to none: /mcp answers 404.
	MCP func(*Reads) (http.Handler, error)
}

// Handler serves the read API. It is an http.Handler.
type Handler struct {
	src          Source
	notifier     Notifier
	waker        Waker
	secrets      []jwt.VerificationKey // HS256: JWTSecret, then JWTPreviousSecrets
	idp          *IdentityProvider
	parser       *jwt.Parser
	tokens       tokenCache
	ready        func(ctx context.Context) error
	readyTimeout time.Duration
	maxWait      time.Duration
	waiters      *waiters
	metrics      *metrics.Metrics
	logger       *slog.Logger
	mux          *http.ServeMux
	// root serves every request: serve, in a span when tracing is on.
	root http.Handler

	publisher      Publisher
	limits         checkpoint.Limits
	publishTimeout time.Duration
	rejections     RejectionLister
	users          UserSource
	inspector      Inspector

	draining  atomic.Bool
	drainOnce sync.Once
	drained   chan struct{} // closed by SetDraining
}

// Route patterns; they are also the "route" label of the HTTP metrics.
const (
	routeEvidence = "GET /v1/users/{user_id}/conversations/{conversation_id}/evidence"
	routeSearch   = "POST /v1/users/{user_id}/conversations/{conversation_id}/evidence/search"
	routeDelete   = "DELETE /v1/users/{user_id}/conversations/{conversation_id}"
	routeIngest   = "POST /v1/checkpoints"
	routeRejected = "GET /v1/users/{user_id}/conversations/{conversation_id}/rejections"
	routeContext  = "POST /v1/users/{user_id}/conversations/{conversation_id}/context"
	routeHealthz  = "GET /healthz"
	routeReadyz   = "GET /readyz"
	routeMetrics  = "GET /metrics"
	// routeUnmatched labels requests that match no route (404, 405).
	routeUnmatched = "unmatched"
)

// WithDefaults returns a copy of c (which may be nil) with every zero
// field that has a default set to it.
func (c *Config) WithDefaults() *Config {
	var out Config
	if c != nil {
		out = *c
	}
	out.ReadyTimeout = cmp.Or(out.ReadyTimeout, DefaultReadyTimeout)
	out.MaxWait = cmp.Or(out.MaxWait, DefaultMaxWait)
	out.MaxWaiters = cmp.Or(out.MaxWaiters, DefaultMaxWaiters)
	out.ReadTimeout = cmp.Or(out.ReadTimeout, DefaultReadTimeout)
	out.PublishTimeout = cmp.Or(out.PublishTimeout, DefaultPublishTimeout)
	out.Limits.MaxEventBytes = cmp.Or(out.Limits.MaxEventBytes, checkpoint.DefaultMaxEventBytes)
	out.Limits.MaxMessages = cmp.Or(out.Limits.MaxMessages, checkpoint.DefaultMaxMessages)
	if out.Ready == nil {
		out.Ready = func(context.Context) error { return nil }
	}
	if out.Metrics == nil {
		out.Metrics = metrics.New()
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return &out
}

// validate reports the first field of a defaulted Config that cannot work,
// saying how to fix it.
func (c *Config) validate() error {
	switch {
	case len(c.JWTSecret) == 0 && c.IdentityProvider == nil:
		return errors.New("api: Config.JWTSecret or Config.IdentityProvider must be set: set RECALL_JWT_SECRET to the HS256 secret tokens are signed with, " +
			"or RECALL_JWKS_URL to the JWKS of the identity provider that issues them")
	case slices.ContainsFunc(c.JWTPreviousSecrets, func(s []byte) bool { return len(s) == 0 }):
		return errors.New("api: Config.JWTPreviousSecrets holds an empty secret: leave it out (RECALL_JWT_PREVIOUS_SECRETS is a comma-separated list)")
	case c.Notifier == nil:
		return errors.New("api: Config.Notifier must be set: pass a wake.Subscriber so that waiting requests wake on state changes")
	case c.MaxWait < 0:
		return fmt.Errorf("api: Config.MaxWait is %v: it must be positive, or 0 for the default %v", c.MaxWait, DefaultMaxWait)
	case c.MaxWaiters < 0:
		return fmt.Errorf("api: Config.MaxWaiters is %d: it must be positive, or 0 for the default %d", c.MaxWaiters, DefaultMaxWaiters)
	case c.ReadTimeout < 0:
		return fmt.Errorf("api: Config.ReadTimeout is %v: it must be positive, or 0 for the default %v", c.ReadTimeout, DefaultReadTimeout)
	case c.PublishTimeout < 0:
		return fmt.Errorf("api: Config.PublishTimeout is %v: it must be positive, or 0 for the default %v", c.PublishTimeout, DefaultPublishTimeout)
	case c.Limits.MaxEventBytes < 0 || c.Limits.MaxMessages < 0:
		return errors.New("api: Config.Limits must not be negative; 0 means the default")
	case c.ReadyTimeout < 0:
		return fmt.Errorf("api: Config.ReadyTimeout is %v: it must be positive, or 0 for the default %v", c.ReadyTimeout, DefaultReadyTimeout)
	}
	return nil
}

// New returns a Handler that reads through src.
func New(src Source, cfg *Config) (*Handler, error) {
	if src == nil {
		return nil, errors.New("api: src must not be nil: pass the store the API reads from")
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	h := &Handler{
		src:      src,
		notifier: c.Notifier,
		waker:    c.Waker,
		secrets:  hsSecrets(c.JWTSecret, c.JWTPreviousSecrets),
		idp:      c.IdentityProvider,
		parser: jwt.NewParser(
			jwt.WithValidMethods(tokenAlgorithms),
			jwt.WithExpirationRequired(),
		),
		ready:        c.Ready,
		readyTimeout: c.ReadyTimeout,
		maxWait:      c.MaxWait,
		metrics:      c.Metrics,
		logger:       c.Logger,
		mux:          http.NewServeMux(),
		drained:      make(chan struct{}),

		publisher:      c.Publisher,
		limits:         c.Limits,
		publishTimeout: c.PublishTimeout,
		rejections:     c.Rejections,
		users:          c.Users,
		inspector:      c.Inspector,
	}
	h.waiters = newWaiters(src, c.Notifier, c.MaxWaiters, c.ReadTimeout)
	h.metrics.MaxWaiters.Set(float64(c.MaxWaiters))
	h.mux.HandleFunc(routeEvidence, h.handle(h.getEvidence))
	h.mux.HandleFunc(routeSearch, h.handle(h.searchEvidence))
	h.mux.HandleFunc(routeDelete, h.handle(h.deleteConversation))
	h.mux.HandleFunc(routeIngest, h.handle(h.postCheckpoint))
	h.mux.HandleFunc(routeRejected, h.handle(h.getRejections))
	h.mux.HandleFunc(routeContext, h.handle(h.postContext))
	h.registerUserRoutes()
	h.registerInspector()
	if c.MCP != nil {
		if err := h.mountMCP(c.MCP); err != nil {
			return nil, err
		}
	}
	h.mux.HandleFunc(routeHealthz, h.healthz)
	h.mux.HandleFunc(routeReadyz, h.readyz)
	h.mux.Handle(routeMetrics, promhttp.HandlerFor(h.metrics.Registry, promhttp.HandlerOpts{}))
	h.root = traced(http.HandlerFunc(h.serve), c.TracerProvider)
	return h, nil
}

// hsSecrets returns copies of the HS256 secrets that verify tokens, the
// current one first.
func hsSecrets(current []byte, previous [][]byte) []jwt.VerificationKey {
	var keys []jwt.VerificationKey
	if len(current) > 0 {
		keys = append(keys, bytes.Clone(current))
	}
	for _, s := range previous {
		keys = append(keys, bytes.Clone(s))
	}
	return keys
}

// MaxWait returns the longest wait a request may ask for.
func (h *Handler) MaxWait() time.Duration { return h.maxWait }

// SetDraining makes /readyz answer 503 from now on, so that load balancers
// stop sending requests, and answers waiting requests at once with the state
// they have. Call it when shutdown begins, before http.Server.Shutdown.
func (h *Handler) SetDraining() {
	h.drainOnce.Do(func() {
		h.draining.Store(true)
		close(h.drained)
	})
}

// ServeHTTP serves the request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.root.ServeHTTP(w, r) }

// serve routes the request and records its metrics.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, r: r}
	h.mux.ServeHTTP(sw, r)
	route := routeLabel(r)
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	h.metrics.HTTPRequests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	h.metrics.HTTPSeconds.WithLabelValues(route).Observe(time.Since(start).Seconds())
}

// routeLabel is the route pattern the mux matched, never the raw path.
func routeLabel(r *http.Request) string {
	return cmp.Or(r.Pattern, routeUnmatched)
}

// handle adapts a handler that returns an error.
func (h *Handler) handle(fn func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			h.writeError(w, r, err)
		}
	}
}

func (h *Handler) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`+"\n"))
}

func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) {
	if h.draining.Load() {
		writeErrorBody(w, http.StatusServiceUnavailable, CodeDraining, "the process is shutting down")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.readyTimeout)
	defer cancel()
	if err := h.ready(ctx); err != nil {
		h.logger.WarnContext(ctx, "api: not ready", slog.String("error", err.Error()))
		writeErrorBody(w, http.StatusServiceUnavailable, CodeNotReady, "a dependency (Postgres or NATS) is not reachable")
		return
	}
	writeJSON(w, http.StatusOK, []byte(`{"status":"ready"}`+"\n"))
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// statusWriter records the status of a response. When the mux matched no
// route (r.Pattern is empty), it turns the mux's plain-text 404 and 405
// into the contract's error body, keeping the Allow header.
type statusWriter struct {
	http.ResponseWriter
	r       *http.Request
	status  int
	swallow bool // the mux's own body is dropped
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	if w.r.Pattern == "" && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		w.swallow = true
		h := w.ResponseWriter.Header()
		h.Del("X-Content-Type-Options")
		if code == http.StatusNotFound {
			writeErrorBody(w.ResponseWriter, code, CodeNotFound, "no such route")
		} else {
			writeErrorBody(w.ResponseWriter, code, CodeMethodNotAllowed, "method not allowed; allowed: "+h.Get("Allow"))
		}
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
