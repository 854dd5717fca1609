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
	"unicode/utf8"

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
	// stopCollect tells the collector, which fetches batches, to stop
	// fetching; collected is closed when it has.
	stopCollect chan struct{}
	collected   chan struct{}
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

// createStreamAttempts bounds how often EnsureStream asks for a stream
// whose creation timed out.
const createStreamAttempts = 3

// MaxReplicas is the largest stream replica count JetStream allows.
const MaxReplicas = 5

// EnsureStream creates the stream when it is missing, with Replicas
// copies, and otherwise uses the existing stream as it is: recall never
// changes a stream an operator (or an older recall) made. The stream recall
// creates is a work queue: an event leaves it once a worker acknowledges
// (or terminates) it, so no copy of a conversation's text stays in NATS
// after it is handled. When an existing stream keeps acknowledged events
// (limits or interest retention, as an older recall created it), the worker
// warns and deletes each event from it itself once the event is handled.
func (w *Worker) EnsureStream(ctx context.Context) (jetstream.Stream, error) {
	s, err := w.js.Stream(ctx, w.cfg.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		cfg := jetstream.StreamConfig{
			Name:       w.cfg.Stream,
			Subjects:   []string{w.cfg.Subject},
			Storage:    jetstream.FileStorage,
			Retention:  jetstream.WorkQueuePolicy,
			Discard:    jetstream.DiscardOld,
			MaxAge:     w.cfg.MaxAge,
			Duplicates: w.cfg.Duplicates,
			Replicas:   w.cfg.Replicas,
		}
		// A cluster that has just started may take longer than one API
		// request's timeout to place a replicated stream: ask again while
		// ctx lasts (a request that did create it answers "already in use"
		// the next time, which is handled below).
		for attempt := 1; ; attempt++ {
			s, err = w.js.CreateStream(ctx, cfg)
			if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || attempt == createStreamAttempts {
				break
			}
			w.logger.WarnContext(ctx, "stream creation timed out; asking again", slog.String("stream", w.cfg.Stream), slog.Int("attempt", attempt))
		}
		if err == nil {
			w.logger.InfoContext(ctx, "stream created", slog.String("stream", w.cfg.Stream), slog.Int("replicas", w.cfg.Replicas))
			return s, nil
		}
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return nil, fmt.Errorf("worker: create stream %s with %d replicas: %w", w.cfg.Stream, w.cfg.Replicas, err)
		}
		// Another worker created it first.
		s, err = w.js.Stream(ctx, w.cfg.Stream)
	}
	if err != nil {
		return nil, fmt.Errorf("worker: look up stream %s: %w", w.cfg.Stream, err)
	}
	cfg := s.CachedInfo().Config
	if cfg.Retention != jetstream.WorkQueuePolicy {
		w.deleteHandled = true
		w.logger.WarnContext(ctx, "the stream keeps acknowledged events (limits retention, created by an older recall) and NATS cannot change "+
			"a stream's retention in place: recall deletes each event from it once handled; to switch to work-queue retention, stop the "+
			"publishers, let the workers drain the stream (consumer pending 0), delete the stream (nats stream rm) and restart recall",
			slog.String("stream", w.cfg.Stream), slog.String("retention", cfg.Retention.String()))
	}
	if cfg.Replicas != w.cfg.Replicas {
		w.logger.InfoContext(ctx, "using the existing stream as it is: its replica count is not the one configured, which applies only to a stream recall creates "+
			"(change it with nats stream edit --replicas)",
			slog.String("stream", w.cfg.Stream), slog.Int("replicas", cfg.Replicas), slog.Int("configured_replicas", w.cfg.Replicas))
	}
	return s, nil
}

// Start ensures the stream and the durable consumer and starts consuming.
func (w *Worker) Start(ctx context.Context) error {
	stream, err := w.EnsureStream(ctx)
	if err != nil {
		return err
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       w.cfg.Durable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       w.cfg.AckWait,
		MaxDeliver:    -1,
		FilterSubject: w.cfg.Subject,
		MaxAckPending: max(1024, (w.cfg.Concurrency+4)*w.cfg.MaxBatch),
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("worker: create consumer %s: %w", w.cfg.Durable, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stream = stream
	w.created = stream.CachedInfo().Created
	w.sem = make(chan struct{}, w.cfg.Concurrency)
	w.stopCollect, w.collected = make(chan struct{}), make(chan struct{})
	// Handlers outlive ctx: a drain lets them finish.
	w.handleCtx, w.cancelHandle = context.WithCancel(context.WithoutCancel(ctx))
	w.cons = cons
	go w.collect(w.handleCtx, cons)
	w.logger.InfoContext(ctx, "worker consuming", slog.String("stream", w.cfg.Stream),
		slog.String("subject", w.cfg.Subject), slog.Int("concurrency", w.cfg.Concurrency), slog.Int("max_batch", w.cfg.MaxBatch))
	return nil
}

// maxBatchBytes bounds the payload bytes a fetch asks for, from the size
// of the events fetched so far, so that batches of large snapshots are not
// held in memory many at once.
const maxBatchBytes = 1 << 20

// fetchWait is how long one fetch waits for an event when none is ready:
// the longest a stop waits for the collector.
const fetchWait = 500 * time.Millisecond

// collect makes batches: it waits for a free transaction, then fetches the
// events that are ready, up to MaxBatch, without waiting for more (when
// none is, it waits for one and then takes the others that are ready with
// it), and hands the batch to a goroutine of its own. Events that arrive
// while every transaction is busy wait in the stream and make the next
// batch larger. Every fetched message is handled, so a stop leaves no
// message unhandled but those in flight, which it waits for.
//
// Each batch is its own fetch request, so the worker never depends on the
// client's count of messages still owed by earlier requests.
func (w *Worker) collect(ctx context.Context, cons jetstream.Consumer) {
	defer close(w.collected)
	avg := 1024 // running estimate of an event's size in bytes
	failures := 0
	for {
		select {
		case w.sem <- struct{}{}:
		case <-w.stopCollect:
			return
		}
		n := max(1, min(w.cfg.MaxBatch, maxBatchBytes/max(avg, 1)))
		batch, err := w.fetch(cons, n)
		if err != nil {
			failures++
			if failures == 1 || failures%100 == 0 {
				w.logger.WarnContext(ctx, "fetching events", slog.String("error", err.Error()), slog.Int("failures", failures))
			}
		} else {
			failures = 0
		}
		if len(batch) == 0 {
			<-w.sem
			select {
			case <-w.stopCollect:
				return
			case <-time.After(min(time.Duration(failures)*50*time.Millisecond, time.Second)):
			}
			continue
		}
		size := 0
		for _, m := range batch {
			size += len(m.Data())
		}
		avg = (3*avg + size/len(batch)) / 4
		w.inflight.Add(1)
		go func() {
			defer func() { <-w.sem; w.inflight.Done() }()
			w.HandleBatch(w.handleCtx, batch)
		}()
	}
}

// fetch returns up to n messages: those ready now, or, when none is, the
// first that arrives within fetchWait and those ready with it.
func (w *Worker) fetch(cons jetstream.Consumer, n int) ([]jetstream.Msg, error) {
	got, err := drainBatch(cons.FetchNoWait(n))
	if len(got) > 0 || err != nil {
		return got, err
	}
	got, err = drainBatch(cons.Fetch(1, jetstream.FetchMaxWait(fetchWait)))
	if len(got) == 0 || err != nil || n == 1 {
		return got, err
	}
	more, err := drainBatch(cons.FetchNoWait(n - 1))
	return append(got, more...), err
}

// drainBatch reads every message of a fetch.
func drainBatch(b jetstream.MessageBatch, err error) ([]jetstream.Msg, error) {
	if err != nil {
		return nil, err
	}
	var msgs []jetstream.Msg
	for m := range b.Messages() {
		msgs = append(msgs, m)
	}
	if err := b.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
		return msgs, err
	}
	return msgs, nil
}

// Stop stops fetching, lets in-flight events finish and be acknowledged,
// and flushes the acknowledgements. When ctx ends first, in-flight handlers
// are cancelled; their events are nak'd or redelivered, never lost.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	cons := w.cons
	w.cons = nil
	w.mu.Unlock()
	if cons == nil {
		return nil
	}
	// The collector finishes its fetch, hands on what it fetched, and
	// returns.
	close(w.stopCollect)
	done := make(chan struct{})
	go func() { <-w.collected; w.inflight.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		w.cancelHandle()
		<-done
		err = fmt.Errorf("worker: drain: %w", ctx.Err())
	}
	w.cancelHandle()
	if ferr := w.nc.FlushTimeout(5 * time.Second); ferr != nil && err == nil && !errors.Is(ferr, nats.ErrConnectionClosed) {
		err = fmt.Errorf("worker: flush acknowledgements: %w", ferr)
	}
	return err
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

// settlement is how a message whose event the store has handled ends.
type settlement int

const (
	settleAck       settlement = iota // applied, or a no-op: acknowledged
	settleRetry                       // the store failed: redelivered after a backoff
	settleTerm                        // rejected with a recorded row: terminated
	settleGapWait                     // a gap younger than GapTimeout: redelivered once the gap may have closed
	settleGapReject                   // a gap as old as GapTimeout: recorded as a rejection, then terminated
)

// settle decides how a message ends from the store's answer (res, or err)
// and how long ago the event was published.
func settle(res store.Result, err error, age, gapTimeout time.Duration) settlement {
	switch {
	case err != nil:
		return settleRetry
	case res.Outcome == checkpoint.Rejected:
		return settleTerm
	case res.Outcome == checkpoint.Gap && age < gapTimeout:
		return settleGapWait
	case res.Outcome == checkpoint.Gap:
		return settleGapReject
	}
	return settleAck
}

// finish ends a message whose event the store has recorded (or failed to
// record, err).
func (w *Worker) finish(ctx context.Context, p *pending, res store.Result, err error) {
	msg, meta, ev := p.msg, p.meta, p.ev
	age := time.Since(meta.Timestamp)
	switch settle(res, err, age, w.cfg.GapTimeout) {
	case settleRetry:
		p.attrs = append(p.attrs, slog.String("error", err.Error()))
		w.nak(msg, meta)
		p.outcome = checkpoint.Retried
	case settleTerm:
		p.attrs = append(p.attrs, slog.String("detail", res.Detail))
		w.term(msg, res.Reason)
		p.outcome, p.reason = checkpoint.Rejected, res.Reason
	case settleGapWait:
		_ = msg.NakWithDelay(min(backoff(meta.NumDelivered), w.cfg.GapTimeout-age+10*time.Millisecond))
		p.outcome = checkpoint.GapRetried
	case settleGapReject:
		p.outcome, p.reason = w.reject(ctx, msg, meta, store.Rejection{Reason: checkpoint.ReasonGap,
			Detail:  fmt.Sprintf("messages before offset %d never arrived within %s", ev.Offset, w.cfg.GapTimeout),
			EventID: ev.EventID, UserID: ev.UserID, ConversationID: ev.ConversationID,
			Stream: meta.Stream, StreamCreated: p.smeta.StreamCreated, StreamSeq: meta.Sequence.Stream, Payload: p.smeta.Payload}, &p.attrs)
	default:
		if err := msg.Ack(); err != nil {
			p.attrs = append(p.attrs, slog.String("error", err.Error()))
		}
		p.outcome = res.Outcome
	}
}

// record deletes an ended message from a stream that keeps it, counts it
// and logs it.
func (w *Worker) record(ctx context.Context, p *pending) {
	outcome, reason, attrs := p.outcome, p.reason, p.attrs
	if w.deleteHandled && outcome != checkpoint.Retried && outcome != checkpoint.GapRetried {
		w.deleteFromStream(ctx, p.meta.Sequence.Stream, &attrs)
	}
	if w.cfg.Metrics != nil {
		w.cfg.Metrics.Events.WithLabelValues(outcome.String(), string(reason)).Inc()
		w.cfg.Metrics.IngestSeconds.Observe(time.Since(p.start).Seconds())
	}
	level := slog.LevelDebug
	if outcome == checkpoint.Rejected || outcome == checkpoint.Retried {
		level = slog.LevelWarn
	}
	attrs = append(attrs, slog.String("outcome", outcome.String()))
	if reason != "" {
		attrs = append(attrs, slog.String("reason", string(reason)))
	}
	w.logger.LogAttrs(ctx, level, "event", attrs...)
}

// heartbeat tells JetStream every third of AckWait that msgs are still
// being handled, so that a slow batch (large snapshots, a Postgres that
// answers slowly) is not redelivered meanwhile. It returns the function
// that stops it.
func (w *Worker) heartbeat(msgs ...jetstream.Msg) func() {
	every := w.cfg.AckWait / 3
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	mu.Lock() // the callback reads t
	defer mu.Unlock()
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		for _, msg := range msgs {
			_ = msg.InProgress()
		}
		t.Reset(every)
	})
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		t.Stop()
	}
}

// reject records a rejection, then terminates the message. When the record
// cannot be written the message is nak'd, so it is never dropped unrecorded.
func (w *Worker) reject(ctx context.Context, msg jetstream.Msg, meta *jetstream.MsgMetadata, r store.Rejection, attrs *[]slog.Attr) (checkpoint.Outcome, checkpoint.Reason) {
	*attrs = append(*attrs, slog.String("detail", r.Detail))
	if err := w.ing.Reject(ctx, r); err != nil {
		*attrs = append(*attrs, slog.String("error", err.Error()))
		w.nak(msg, meta)
		return checkpoint.Retried, ""
	}
	w.term(msg, r.Reason)
	return checkpoint.Rejected, r.Reason
}

// keyAttrs are the log attributes naming an event and its conversation. An
// id no event may have (too long, not UTF-8, holding a NUL: the ids of an
// event that failed to parse are whatever it held, message text included)
// is logged as "(invalid)".
func keyAttrs(eventID, userID, conversationID string) []slog.Attr {
	return []slog.Attr{
		slog.String("event_id", loggableID(eventID, checkpoint.MaxEventIDBytes)),
		slog.String("user_id", loggableID(userID, checkpoint.MaxKeyBytes)),
		slog.String("conversation_id", loggableID(conversationID, checkpoint.MaxKeyBytes)),
	}
}

// loggableID returns id when an event may carry it (or it is empty), else
// "(invalid)".
func loggableID(id string, maxBytes int) string {
	if len(id) > maxBytes || !utf8.ValidString(id) || strings.IndexByte(id, 0) >= 0 {
		return "(invalid)"
	}
	return id
}

// deleteFromStream removes a handled event from a stream that would keep
// it. It runs after the acknowledgement: a failure leaves the event to the
// stream's MaxAge and is logged.
func (w *Worker) deleteFromStream(ctx context.Context, seq uint64, attrs *[]slog.Attr) {
	w.mu.Lock()
	s := w.stream
	w.mu.Unlock()
	if s == nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.DeleteMsg(dctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		*attrs = append(*attrs, slog.String("stream_delete_error", err.Error()))
	}
}

func (w *Worker) term(msg jetstream.Msg, reason checkpoint.Reason) {
	if w.termReason {
		_ = msg.TermWithReason(string(reason))
		return
	}
	_ = msg.Term()
}

func (w *Worker) nak(msg jetstream.Msg, meta *jetstream.MsgMetadata) {
	_ = msg.NakWithDelay(backoff(meta.NumDelivered))
}

// backoff is the redelivery delay after the n-th delivery: 250ms doubling
// to at most 5s.
func backoff(n uint64) time.Duration {
	n = max(n, 1)
	d := 250 * time.Millisecond << min(n-1, 5)
	return min(d, 5*time.Second)
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
