package publisher_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/recallhq/recall/publisher"
)

// sentTrace returns the span context the stored event at seq carries in its
// traceparent header (invalid when it carries none), and the raw header.
func (b *testBundle) sentTrace(t *testing.T, seq uint64) (trace.SpanContext, string) {
	t.Helper()
	raw, err := b.stream.GetMsg(t.Context(), seq)
	if err != nil {
		t.Fatalf("get message %d: %v", seq, err)
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), publisher.HeaderCarrier(raw.Header))
	return trace.SpanContextFromContext(ctx), nats.Header(raw.Header).Get("traceparent")
}

// TestPublishCarriesTraceContext: an event carries its publish span's
// context in a W3C traceparent header, under the caller's trace; the span
// names the event and never holds its text.
func TestPublishCarriesTraceContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	ctx, turn := tp.Tracer("test").Start(t.Context(), "turn")
	const text = "We must never ship on a Friday, says the traced turn."
	p := newPublisher(t, b.js, publisher.WithTracerProvider(tp), publisher.WithMode(publisher.Append))
	ack, err := p.PublishMessages(ctx, "u-1", "c-1", []publisher.Message{{ID: "m0", Role: "user", Content: text}})
	if err != nil {
		t.Fatal(err)
	}
	turn.End()

	sc, header := b.sentTrace(t, ack.Sequence)
	if !sc.IsValid() {
		t.Fatalf("the event carries no valid traceparent (header %q)", header)
	}
	if sc.TraceID() != turn.SpanContext().TraceID() {
		t.Errorf("traceparent trace id %s, want the caller's %s", sc.TraceID(), turn.SpanContext().TraceID())
	}
	var pub *tracetest.SpanStub
	spans := exp.GetSpans()
	for i := range spans {
		if spans[i].Name == publisher.SpanPublish {
			pub = &spans[i]
		}
	}
	if pub == nil {
		t.Fatalf("no %s span among %d", publisher.SpanPublish, len(spans))
	}
	if pub.SpanContext.SpanID() != sc.SpanID() {
		t.Errorf("traceparent span id %s, want the publish span's %s", sc.SpanID(), pub.SpanContext.SpanID())
	}
	if pub.Parent.SpanID() != turn.SpanContext().SpanID() || pub.SpanKind != trace.SpanKindProducer {
		t.Errorf("publish span: parent %s kind %s, want parent %s (the turn) and kind producer", pub.Parent.SpanID(), pub.SpanKind, turn.SpanContext().SpanID())
	}
	for _, kv := range pub.Attributes {
		if strings.Contains(kv.Value.String(), "Friday") {
			t.Errorf("attribute %s holds message text: %q", kv.Key, kv.Value.String())
		}
	}
}

// TestPublishWithoutTracing: with the default (global, no-op) provider, an
// event carries the caller's own span context when there is one, and no
// traceparent header when there is none.
func TestPublishWithoutTracing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := newPublisher(t, b.js)

	ack, err := p.PublishMessages(t.Context(), "u-1", "c-1", []publisher.Message{{ID: "m0", Role: "user", Content: "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if sc, header := b.sentTrace(t, ack.Sequence); sc.IsValid() || header != "" {
		t.Errorf("an untraced publish sent traceparent %q", header)
	}

	caller := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	ctx := trace.ContextWithRemoteSpanContext(t.Context(), caller)
	ack, err = p.PublishMessages(ctx, "u-1", "c-2", []publisher.Message{{ID: "m0", Role: "user", Content: "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if sc, header := b.sentTrace(t, ack.Sequence); sc.TraceID() != caller.TraceID() || sc.SpanID() != caller.SpanID() {
		t.Errorf("traceparent %q, want the caller's span context %s/%s", header, caller.TraceID(), caller.SpanID())
	}
}

// TestOpenTelemetryAPIOnly: the publisher depends on OpenTelemetry's API,
// never on its SDK, exporters or contrib instrumentations, which are the
// program's choice.
func TestOpenTelemetryAPIOnly(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/recallhq/recall/publisher").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, heavy := range []string{"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters", "go.opentelemetry.io/contrib"} {
			if dep == heavy || strings.HasPrefix(dep, heavy+"/") {
				t.Errorf("publisher depends on %s", dep)
			}
		}
	}
}
