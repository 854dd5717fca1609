package jobs

import (
	"context"
	"encoding/json"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/recallhq/recall/store"
)

// Span names: River's middleware names the insert and work spans of
// extraction jobs; the extraction's own span is recall's.
const (
	SpanInsert  = "river.insert_many"
	SpanWork    = "river.work"
	SpanExtract = "recall.extract"
)

// tracerName names the jobs' spans' instrumentation scope.
const tracerName = "github.com/recallhq/recall/jobs"

// extractKind is the kind of the jobs that are traced.
var extractKind = store.ExtractArgs{}.Kind()

// tracing is River middleware that traces extraction jobs with River's own
// OpenTelemetry middleware (otelriver), which writes the inserting span's
// trace context into the job's metadata and starts the work span with a
// link to it. recall also makes the work span a child of the inserting span,
// so that the job joins the trace of the turn that asked for it: an
// extraction runs milliseconds after its insert, not days. The periodic
// sweep and prune are left untraced: a root trace every few seconds would
// bury the turns.
type tracing struct {
	river.MiddlewareDefaults
	otel *otelriver.Middleware
}

// newTracing returns the middleware of tp, or none when tp is nil.
func newTracing(tp trace.TracerProvider) []rivertype.Middleware {
	if tp == nil {
		return nil
	}
	return []rivertype.Middleware{&tracing{otel: otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
		EnableTracePropagation: true,
		TracerProvider:         tp,
		// recall's metrics are Prometheus's.
		MeterProvider: metricnoop.NewMeterProvider(),
	})}}
}

// InsertMany implements rivertype.JobInsertMiddleware.
func (t *tracing) InsertMany(ctx context.Context, params []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	for _, p := range params {
		if p.Kind == extractKind {
			return t.otel.InsertMany(ctx, params, doInner)
		}
	}
	return doInner(ctx)
}

// Work implements rivertype.WorkerMiddleware.
func (t *tracing) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	if job.Kind != extractKind {
		return doInner(ctx)
	}
	var carried struct {
		TraceParent string `json:"traceparent"`
		TraceState  string `json:"tracestate"`
	}
	if json.Unmarshal(job.Metadata, &carried) == nil && carried.TraceParent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": carried.TraceParent, "tracestate": carried.TraceState})
	}
	return t.otel.Work(ctx, job, doInner)
}

// newJobTracer returns tp's tracer, or a no-op one when tp is nil.
func newJobTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// endExtract ends an extraction's span with its outcome and the count of
// messages it summarised.
func endExtract(span trace.Span, res store.ExtractResult, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "the extraction failed; River retries it")
	} else {
		span.SetAttributes(attribute.String("recall.outcome", res.Outcome.String()), attribute.Int("recall.summarised", res.Summarised))
	}
	span.End()
}
