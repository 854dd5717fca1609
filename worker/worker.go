// Package worker is recall's JetStream adapter: a durable pull consumer on
// the checkpoint subject that decodes each event with the evidence core,
// records it through the store (which enqueues the extraction job in the
// same transaction) and only then acknowledges it.
//
// Events are recorded in batches: the worker takes what the consumer has
// ready, up to Config.MaxBatch events, without waiting for more, and records
// them in one transaction (store.IngestBatch). Each event of a batch is
// acknowledged, nak'd or terminated after that transaction commits; when it
// fails, each event is recorded alone, so one event that cannot be recorded
// never holds back the others.
//
// Every message ends explicitly: acknowledged once Postgres has recorded it
// (accepted, duplicate, stale, deleted), terminated once a rejection row
// records it, or nak'd with a delay when Postgres cannot be reached, so it
// is retried and never lost.
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/store"
)

// Ingester records events; *store.Store implements it.
type Ingester interface {
	Ingest(ctx context.Context, ev *checkpoint.Event, meta store.Meta) (store.Result, error)
	IngestBatch(ctx context.Context, events []store.BatchEvent) ([]store.Result, error)
	Reject(ctx context.Context, r store.Rejection) error
}

// Waker tells the read API's waiting requests that a conversation's state
// changed, after the change has committed; *wake.Publisher implements it.
type Waker interface {
	Wake(ctx context.Context, userID, conversationID string, cursor int)
}

// The defaults of Config.
const (
	// DefaultStream is the JetStream stream of checkpoint events.
	DefaultStream = "RECALL_CHECKPOINTS"
	// DefaultSubject is the checkpoint subject, the one the publisher
	// package publishes to ([checkpoint.Subject]).
	DefaultSubject = checkpoint.Subject
	// DefaultDurable is the durable consumer every worker process shares.
	DefaultDurable = "recall-worker"
	// DefaultConcurrency bounds the batches (transactions) one process
	// handles at once.
	DefaultConcurrency = 16
	// DefaultMaxBatch bounds the events one transaction records.
	DefaultMaxBatch = 64
	// DefaultGapTimeout is how long an append event that starts after the
	// history recall holds is retried before it is rejected as gap.
	DefaultGapTimeout = 10 * time.Second
	// DefaultDuplicates is the stream's deduplication window.
	DefaultDuplicates = 2 * time.Minute
	// DefaultMaxAge bounds how long the stream keeps an unconsumed event.
	DefaultMaxAge = 7 * 24 * time.Hour
	// DefaultReplicas is the stream's replica count.
	DefaultReplicas = 1
	// DefaultAckWait is how long JetStream waits for an acknowledgement.
	DefaultAckWait = 20 * time.Second
)

// Config configures a Worker.
type Config struct {
	// Stream is the JetStream stream, created on Start when it is missing
	// (an existing stream is used as it is). Defaults to DefaultStream
	// (RECALL_CHECKPOINTS).
	Stream string
	// Subject is the checkpoint subject. Defaults to DefaultSubject
	// (recall.checkpoints).
	Subject string
	// Durable is the durable consumer shared by every worker process.
	// Defaults to DefaultDurable (recall-worker).
	Durable string
	// Concurrency bounds the batches handled at once, each one transaction
	// of up to MaxBatch events. Defaults to DefaultConcurrency (16).
	Concurrency int
	// MaxBatch bounds the events recorded in one transaction. A batch takes
	// the events the consumer has ready when a transaction is free, up to
	// MaxBatch (and about 1 MiB of payload), and never waits for more: under
	// a light load batches hold one event, under a heavy one they fill up.
	// 1 records each event alone. Defaults to DefaultMaxBatch (64).
	MaxBatch int
	// Limits bound the events accepted. Defaults to evidence's defaults.
	Limits checkpoint.Limits
	// GapTimeout is how long an append event that starts after the history
	// recall holds is retried before it is rejected as gap. Defaults to 10s.
	GapTimeout time.Duration
	// Duplicates is the stream's window for Nats-Msg-Id deduplication.
	// Defaults to 2m.
	Duplicates time.Duration
	// MaxAge bounds how long the stream keeps events that no worker has
	// consumed yet (acknowledged events leave the stream at once: it is a
	// work queue). Defaults to 7 days.
	MaxAge time.Duration
	// Replicas is the replica count of the stream the worker creates (use
	// 3 on a JetStream cluster), from 1 to MaxReplicas; an existing stream
	// keeps its own. Defaults to 1.
	Replicas int
	// AckWait is how long JetStream waits for an acknowledgement before it
	// redelivers (an event held by a killed worker comes back after it).
	// Handlers that run longer tell JetStream they are in progress.
	// Defaults to 20s.
	AckWait time.Duration
	// Waker, when set, is told of each conversation an event deleted,
	// once the deletion has committed, so that requests waiting on it read
	// it at once and none answers the deleted state when its wait ends
	// (the only change of ingest a waiter sees: the cursor moves with
	// extractions). Defaults to none: waiters find the deletion at their
	// next poll.
	Waker Waker
	// Metrics, when set, counts events by outcome. Defaults to none.
	Metrics *metrics.Metrics
	// TracerProvider, when set, receives a span per batch (SpanBatch) that
	// continues or links the trace context of its events, and under which
	// the batch's SQL and job inserts run. Defaults to none: no spans.
	TracerProvider trace.TracerProvider
	// Logger receives operational logs; never message text. Defaults to
	// discarding.
	Logger *slog.Logger
}

// WithDefaults returns a copy of c (which may be nil) with every zero
// field set to its default.
func (c *Config) WithDefaults() *Config {
	var out Config
	if c != nil {
		out = *c
	}
	out.Stream = cmp.Or(out.Stream, DefaultStream)
	out.Subject = cmp.Or(out.Subject, DefaultSubject)
	out.Durable = cmp.Or(out.Durable, DefaultDurable)
	out.Concurrency = cmp.Or(out.Concurrency, DefaultConcurrency)
	out.MaxBatch = cmp.Or(out.MaxBatch, DefaultMaxBatch)
	out.GapTimeout = cmp.Or(out.GapTimeout, DefaultGapTimeout)
	out.Duplicates = cmp.Or(out.Duplicates, DefaultDuplicates)
	out.MaxAge = cmp.Or(out.MaxAge, DefaultMaxAge)
	out.Replicas = cmp.Or(out.Replicas, DefaultReplicas)
	out.AckWait = cmp.Or(out.AckWait, DefaultAckWait)
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return &out
}

// validate reports the first field of a defaulted Config that cannot work,
// saying how to fix it.
func (c *Config) validate() error {
	if c.Concurrency < 1 {
		return fmt.Errorf("worker: Config.Concurrency is %d: it must be at least 1, or 0 for the default %d", c.Concurrency, DefaultConcurrency)
	}
	if c.Replicas < 1 || c.Replicas > MaxReplicas {
		return fmt.Errorf("worker: Config.Replicas is %d: it must be from 1 to %d (3 on a three-node JetStream cluster), or 0 for the default %d",
			c.Replicas, MaxReplicas, DefaultReplicas)
	}
	if c.MaxBatch < 1 {
		return fmt.Errorf("worker: Config.MaxBatch is %d: it must be at least 1 (1 records each event alone), or 0 for the default %d", c.MaxBatch, DefaultMaxBatch)
	}
	return nil
}

// Worker consumes checkpoint events.
type Worker struct {
	js     jetstream.JetStream
	nc     *nats.Conn
	ing    Ingester
	cfg    Config
	logger *slog.Logger
	tracer trace.Tracer

	termReason bool // the server understands a reason on Term (2.10.4+)

	// stream is the stream consumed; deleteHandled is set when it keeps
	// acknowledged events (limits retention, created by an older recall):
	// the worker then deletes each event from it once handled.
	stream        jetstream.Stream
	deleteHandled bool
	// created is the stream's creation time, which tells its rejections
	// apart from those of an earlier stream of the same name.
	created time.Time

	mu       sync.Mutex
	cons     jetstream.Consumer
	inflight sync.WaitGroup
	sem      chan struct{}
	// pull is the subscription the collector reads; collected is closed
	// when the collector has handed on every event it read.
	pull      jetstream.MessagesContext
	collected chan struct{}
	// handleCtx is the context of in-flight handlers; it is cancelled only
	// when a drain runs out of time.
	handleCtx    context.Context
	cancelHandle context.CancelFunc
}

// New returns a Worker that consumes from nc's JetStream.
func New(nc *nats.Conn, ing Ingester, cfg *Config) (*Worker, error) {
	if nc == nil || ing == nil {
		return nil, errors.New("worker: a NATS connection and an ingester are required")
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("worker: JetStream: %w", err)
	}
	return &Worker{js: js, nc: nc, ing: ing, cfg: *c, logger: c.Logger, tracer: newTracer(c.TracerProvider),
		termReason: serverAtLeast(nc.ConnectedServerVersion(), 2, 10, 4)}, nil
}

// Handle processes one message to its end, alone in its transaction: ack,
// term or nak.
func (w *Worker) Handle(ctx context.Context, msg jetstream.Msg) {
	defer w.heartbeat(msg)()
	ctx, span := w.startBatch(ctx, []jetstream.Msg{msg})
	p := w.prepare(ctx, msg, time.Now())
	if p == nil {
		span.End()
		return
	}
	defer endBatch(span, []*pending{p})
	if p.ev != nil {
		res, err := w.ing.Ingest(ctx, p.ev, p.smeta)
		w.finish(ctx, p, res, err)
	}
	w.record(ctx, p)
}

// HandleBatch processes messages to their ends: it records the events in
// one transaction, then acks, terms or naks each as Handle would. Events
// that cannot be decoded are rejected one by one first; when the
// transaction fails, each event is recorded alone.
func (w *Worker) HandleBatch(ctx context.Context, msgs []jetstream.Msg) {
	start := time.Now()
	defer w.heartbeat(msgs...)()
	ctx, span := w.startBatch(ctx, msgs)
	items := make([]*pending, 0, len(msgs))
	defer func() { endBatch(span, items) }()
	var events []store.BatchEvent
	var ingest []*pending
	for _, msg := range msgs {
		p := w.prepare(ctx, msg, start)
		if p == nil {
			continue
		}
		items = append(items, p)
		if p.ev != nil {
			events = append(events, store.BatchEvent{Event: p.ev, Meta: p.smeta})
			ingest = append(ingest, p)
		}
	}
	switch {
	case len(ingest) == 1:
		res, err := w.ing.Ingest(ctx, ingest[0].ev, ingest[0].smeta)
		w.finish(ctx, ingest[0], res, err)
	case len(ingest) > 1:
		results, err := w.ing.IngestBatch(ctx, events)
		if err != nil {
			w.logger.WarnContext(ctx, "a batch could not be recorded; recording each event alone",
				slog.Int("events", len(ingest)), slog.String("error", err.Error()))
		}
		for i, p := range ingest {
			if err != nil {
				res, err := w.ing.Ingest(ctx, p.ev, p.smeta)
				w.finish(ctx, p, res, err)
				continue
			}
			w.finish(ctx, p, results[i], nil)
		}
	}
	for _, p := range items {
		w.record(ctx, p)
	}
}

// pending is a message on its way to its end.
type pending struct {
	msg   jetstream.Msg
	meta  *jetstream.MsgMetadata
	start time.Time
	attrs []slog.Attr
	// ev is the decoded event, nil once the message has ended (an event
	// that could not be decoded is rejected at once).
	ev      *checkpoint.Event
	smeta   store.Meta
	outcome checkpoint.Outcome
	reason  checkpoint.Reason
}

// prepare decodes a message's event. A message that is not a JetStream
// message is terminated and prepare returns nil; an event that cannot be
// decoded is rejected, and the pending it returns has no event.
func (w *Worker) prepare(ctx context.Context, msg jetstream.Msg, start time.Time) *pending {
	meta, err := msg.Metadata()
	if err != nil {
		w.logger.WarnContext(ctx, "not a JetStream message; terminated", slog.String("error", err.Error()))
		_ = msg.Term()
		return nil
	}
	p := &pending{msg: msg, meta: meta, start: start,
		attrs: []slog.Attr{slog.Uint64("stream_seq", meta.Sequence.Stream), slog.Uint64("delivered", meta.NumDelivered)}}
	data := msg.Data()
	w.mu.Lock()
	created := w.created
	w.mu.Unlock()
	p.smeta = store.Meta{Stream: meta.Stream, StreamCreated: created, StreamSeq: meta.Sequence.Stream, PublishedAt: meta.Timestamp, Payload: data}
	// data is the message's own and never changes: the event's texts may
	// share it.
	ev, err := checkpoint.ParseEventInPlace(data, w.cfg.Limits)
	if err != nil {
		var rej *checkpoint.RejectError
		if !errors.As(err, &rej) {
			rej = &checkpoint.RejectError{Reason: checkpoint.ReasonInvalid, Detail: "cannot decode the event"}
		}
		uid, cid, eid := checkpoint.ProbeKey(data)
		if eid == "" {
			// The payload names no event id it can be read by (it is not
			// JSON, not UTF-8, or has no event_id): the publisher's
			// deduplication id names the event instead.
			eid = msg.Headers().Get(jetstream.MsgIDHeader)
		}
		p.attrs = append(p.attrs, keyAttrs(eid, uid, cid)...)
		p.outcome, p.reason = w.reject(ctx, msg, meta, store.Rejection{Reason: rej.Reason, Detail: rej.Detail, EventID: eid,
			UserID: uid, ConversationID: cid, Stream: meta.Stream, StreamCreated: created, StreamSeq: meta.Sequence.Stream, Payload: data}, &p.attrs)
		return p
	}
	p.ev = ev
	p.attrs = append(p.attrs, keyAttrs(ev.EventID, ev.UserID, ev.ConversationID)...)
	p.attrs = append(p.attrs, slog.String("kind", ev.Kind), slog.Int("offset", ev.Offset), slog.Int("messages", len(ev.Messages)))
	return p
}

// serverAtLeast reports whether a server version string ("2.10.4") is at
// least major.minor.patch.
func serverAtLeast(version string, major, minor, patch int) bool {
	parts := strings.SplitN(strings.SplitN(version, "-", 2)[0], ".", 3)
	want := []int{major, minor, patch}
	for i := range want {
		if i >= len(parts) {
			return false
		}
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return false
		}
		if n != want[i] {
			return n > want[i]
		}
	}
	return true
}
