package publisher

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/recallhq/recall/checkpoint"
)

// SpanPublish is the name of the span Publish, Delete and PublishEvent make
// around sending one event.
const SpanPublish = "recall.publish"

// tracerName names the publisher's spans' instrumentation scope.
const tracerName = "github.com/recallhq/recall/publisher"

// WithTracerProvider sets the OpenTelemetry tracer provider of the publish
// spans. Whatever the provider, each event carries the trace context of
// the caller's ctx (the publish span's, when there is one) in its W3C
// traceparent header, so that recall's spans for the event join the
// caller's trace. Defaults to the global provider (otel.GetTracerProvider),
// which makes no spans until the program sets one.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(p *Publisher) error {
		if tp == nil {
			return fmt.Errorf("%w: the tracer provider must not be nil", ErrInvalidOption)
		}
		p.tracer = tp.Tracer(tracerName)
		return nil
	}
}

// HeaderCarrier lets OpenTelemetry propagators read and write the headers of
// a NATS message (HeaderCarrier(msg.Header)). It is the wire format's
// [checkpoint.HeaderCarrier], through which recall's workers read the
// traceparent header Publish writes: keys are written as given and read in
// any case.
type HeaderCarrier = checkpoint.HeaderCarrier

// traceContext is the propagation form of events: W3C Trace Context.
var traceContext = propagation.TraceContext{}

// startPublish starts the publish span of ev, a producer span under ctx's.
// Its attributes name the event (the id, kind, offset and message count),
// never its messages.
func (p *Publisher) startPublish(ctx context.Context, ev *Event) (context.Context, trace.Span) {
	return p.tracer.Start(ctx, SpanPublish, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		attribute.String("messaging.system", "nats"),
		attribute.String("messaging.operation.type", "send"),
		attribute.String("messaging.destination.name", p.subject),
		attribute.String("messaging.message.id", ev.EventID),
		attribute.String("recall.event.kind", ev.Kind),
		attribute.Int("recall.event.offset", ev.Offset),
		attribute.Int("recall.event.messages", len(ev.Messages)),
	))
}

// endPublish ends a publish span with the outcome.
func endPublish(span trace.Span, ack *Ack, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "the event was not published")
	} else {
		span.SetAttributes(attribute.Int64("messaging.nats.stream_sequence", int64(ack.Sequence)), attribute.Bool("recall.duplicate", ack.Duplicate))
	}
	span.End()
}

// defaultTracer is the tracer of a Publisher built without
// WithTracerProvider: the global provider's at the time.
func defaultTracer() trace.Tracer { return otel.GetTracerProvider().Tracer(tracerName) }
