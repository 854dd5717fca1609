package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

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
	it, err := cons.Messages(jetstream.PullMaxMessages(min(w.cfg.MaxBatch, pullBuffer)))
	if err != nil {
		return fmt.Errorf("worker: subscribe to consumer %s: %w", w.cfg.Durable, err)
	}
	w.collected = make(chan struct{})
	// Handlers outlive ctx: a drain lets them finish.
	w.handleCtx, w.cancelHandle = context.WithCancel(context.WithoutCancel(ctx))
	w.cons, w.pull = cons, it
	go w.collect(w.handleCtx, it)
	w.logger.InfoContext(ctx, "worker consuming", slog.String("stream", w.cfg.Stream),
		slog.String("subject", w.cfg.Subject), slog.Int("concurrency", w.cfg.Concurrency), slog.Int("max_batch", w.cfg.MaxBatch))
	return nil
}

// maxBatchBytes bounds the payload bytes of a batch, from the size of the
// events read so far, so that batches of large snapshots are not held in
// memory many at once.
const maxBatchBytes = 1 << 20

// pullBuffer bounds the events the worker's one pull subscription holds
// before they are batched (nats.go asks for more when half are taken).
const pullBuffer = 16

// collect makes batches: it waits for a free transaction, then takes the
// events that are ready, up to MaxBatch, without waiting for more (when
// none is, it waits for one and then takes the others that are ready with
// it), and hands the batch to a goroutine of its own. Events that arrive
// while every transaction is busy wait and make the next batch larger.
//
// The events come from one long-lived pull subscription (one inbox), never
// from a fetch request of their own: a fetch that ends before a large event
// has arrived in full would leave that event counted as delivered and
// unread until AckWait. A stop drains the subscription: every event it has
// taken is handled, so a stop leaves no event unhandled but those in
// flight, which it waits for.
func (w *Worker) collect(ctx context.Context, it jetstream.MessagesContext) {
	defer close(w.collected)
	ready := make(chan jetstream.Msg, w.cfg.MaxBatch)
	go func() {
		defer close(ready)
		failures := 0
		for {
			m, err := it.Next()
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || errors.Is(err, nats.ErrConnectionClosed) {
				return
			}
			if err != nil {
				failures++
				if failures == 1 || failures%100 == 0 {
					w.logger.WarnContext(ctx, "reading events", slog.String("error", err.Error()), slog.Int("failures", failures))
				}
				time.Sleep(min(time.Duration(failures)*50*time.Millisecond, time.Second))
				continue
			}
			failures = 0
			ready <- m
		}
	}()
	avg := 1024 // running estimate of an event's size in bytes
	for {
		w.sem <- struct{}{}
		first, ok := <-ready
		if !ok {
			<-w.sem
			return
		}
		batch := []jetstream.Msg{first}
		size := len(first.Data())
		n := max(1, min(w.cfg.MaxBatch, maxBatchBytes/max(avg, 1)))
	more:
		for len(batch) < n && size < maxBatchBytes {
			select {
			case m, ok := <-ready:
				if !ok {
					break more
				}
				batch = append(batch, m)
				size += len(m.Data())
			default:
				break more
			}
		}
		avg = (3*avg + size/len(batch)) / 4
		w.inflight.Add(1)
		go func() {
			defer func() { <-w.sem; w.inflight.Done() }()
			w.HandleBatch(w.handleCtx, batch)
		}()
	}
}

// Stop stops reading events, lets in-flight events finish and be acknowledged,
// and flushes the acknowledgements. When ctx ends first, in-flight handlers
// are cancelled; their events are nak'd or redelivered, never lost.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	cons, pull := w.cons, w.pull
	w.cons, w.pull = nil, nil
	w.mu.Unlock()
	if cons == nil {
		return nil
	}
	// The subscription stops asking for events and hands on those it
	// holds; the collector batches them and returns.
	pull.Drain()
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
