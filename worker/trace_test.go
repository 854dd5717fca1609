package worker_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/recallhq/recall/publisher"
	pt "github.com/recallhq/recall/testutil/pipelinetest"
	"github.com/recallhq/recall/worker"
)

// TestBatchSpan: a batch of several events is a trace of its own with a
// link to each event's publish span (named by its event id); a batch of
// one continues its event's trace.
func TestBatchSpan(t *testing.T) {
	t.Parallel()
	b := pt.New(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	w, stream := handFedWorker(t, b, &worker.Config{TracerProvider: tp}, nil)
	pub, err := publisher.New(b.JS, publisher.WithSubject(b.Subject), publisher.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	published := map[trace.SpanID]string{} // publish span → event id
	for i := range 4 {
		ctx, turn := tp.Tracer("agent").Start(t.Context(), "turn")
		ack, err := pub.PublishMessages(ctx, "u", fmt.Sprintf("c%d", i), []publisher.Message{{ID: "m0", Role: "user", Content: "keep this"}})
		if err != nil {
			t.Fatal(err)
		}
		turn.End()
		spans := exp.GetSpans()
		published[spans[len(spans)-2].SpanContext.SpanID()] = ack.EventID // the publish span ends before the turn
	}
	cons, err := stream.CreateOrUpdateConsumer(t.Context(), jetstream.ConsumerConfig{Durable: "trace", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(n int) []jetstream.Msg {
		batch, err := cons.FetchNoWait(n)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []jetstream.Msg
		for m := range batch.Messages() {
			msgs = append(msgs, m)
		}
		if len(msgs) != n {
			t.Fatalf("fetched %d messages, want %d", len(msgs), n)
		}
		return msgs
	}
	batchSpan := func() tracetest.SpanStub {
		t.Helper()
		spans := exp.GetSpans()
		last := spans[len(spans)-1]
		if last.Name != worker.SpanBatch {
			t.Fatalf("the last span is %q, want %q", last.Name, worker.SpanBatch)
		}
		return last
	}

	w.HandleBatch(t.Context(), fetch(3))
	s := batchSpan()
	if s.Parent.IsValid() || len(s.Links) != 3 {
		t.Errorf("batch of 3: parent %v and %d links, want no parent and 3 links", s.Parent.SpanID(), len(s.Links))
	}
	for _, l := range s.Links {
		id, ok := published[l.SpanContext.SpanID()]
		if !ok || len(l.Attributes) != 1 || l.Attributes[0].Value.AsString() != id {
			t.Errorf("link to %s (%v) is to no publish span, or does not name its event %q", l.SpanContext.SpanID(), l.Attributes, id)
		}
	}

	w.HandleBatch(t.Context(), fetch(1))
	s = batchSpan()
	if _, ok := published[s.Parent.SpanID()]; !ok || len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != s.Parent.SpanID() {
		t.Errorf("batch of 1: parent %s and links %v, want a publish span as parent and link", s.Parent.SpanID(), s.Links)
	}
}
