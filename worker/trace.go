package worker

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/recallhq/recall/checkpoint"
)

// SpanBatch is the name of the span of one batch of events (one ingest
// transaction, with the job inserts it makes).
const SpanBatch = "recall.worker.batch"

// tracerName names the worker's spans' instrumentation scope.
const tracerName = "github.com/recallhq/recall/worker"

// newTracer returns tp's tracer, or a no-op one when tp is nil.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// startBatch starts the span of a batch: a consumer span with a link to
// the trace context each event carries in its traceparent header (the
// publisher's span), named by the event id. A batch of one event continues
// that event's trace, so that a turn under a light load is one trace from
// the publisher to the read; a batch of several starts a trace of its own,
// linked to each of theirs, and the jobs it inserts follow it.
func (w *Worker) startBatch(ctx context.Context, msgs []jetstream.Msg) (context.Context, trace.Span) {
	links := make([]trace.Link, 0, len(msgs))
	var parent trace.SpanContext
	for _, msg := range msgs {
		h := msg.Headers()
		sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), checkpoint.HeaderCarrier(h)))
		if !sc.IsValid() {
			continue
		}
		parent = sc
		links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
			attribute.String("messaging.message.id", loggableID(h.Get(jetstream.MsgIDHeader), checkpoint.MaxEventIDBytes)),
		}})
	}
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithLinks(links...),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", w.cfg.Subject),
			attribute.String("messaging.consumer.group.name", w.cfg.Durable),
			attribute.Int("messaging.batch.message_count", len(msgs)),
		),
	}
	if len(msgs) == 1 && parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	return w.tracer.Start(ctx, SpanBatch, opts...)
}

// endBatch ends a batch's span with the count of its events of each
// outcome.
func endBatch(span trace.Span, items []*pending) {
	if !span.IsRecording() {
		span.End()
		return
	}
	counts := map[checkpoint.Outcome]int{}
	for _, p := range items {
		counts[p.outcome]++
	}
	for outcome, n := range counts {
		span.SetAttributes(attribute.Int("recall.events."+outcome.String(), n))
	}
	if counts[checkpoint.Retried] > 0 {
		span.SetStatus(codes.Error, "events could not be recorded and will be retried")
	}
	span.End()
}
