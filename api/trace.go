package api

import (
	"context"
	"net/http"
	"slices"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traced wraps next in a server span per request (otelhttp) when tp is
// set: the span continues the trace of the request's W3C traceparent header
// (a read sent with the traceparent of the turn it reads joins that turn's
// trace), is named after the route ("GET /v1/users/{user_id}/…/evidence"),
// and carries the method, route, status and sizes, never the path or the
// query string, which hold user and conversation ids that the API never
// logs. Health checks and /metrics are not traced.
func traced(next http.Handler, tp trace.TracerProvider) http.Handler {
	if tp == nil {
		return next
	}
	return otelhttp.NewHandler(next, "recall.api",
		otelhttp.WithTracerProvider(pathlessProvider{tp}),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()), // recall's metrics are Prometheus's
		otelhttp.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case "/healthz", "/readyz", "/metrics":
				return false
			}
			return true
		}),
	)
}

// pathlessProvider hands out tracers that leave the URL's path, query and
// whole form out of the spans they start.
type pathlessProvider struct{ trace.TracerProvider }

func (p pathlessProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return pathlessTracer{p.TracerProvider.Tracer(name, opts...)}
}

type pathlessTracer struct{ trace.Tracer }

// idAttributes are the URL attributes that hold ids.
var idAttributes = []attribute.Key{"url.path", "url.query", "url.full", "http.target", "http.url"}

func (t pathlessTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	attrs := slices.DeleteFunc(cfg.Attributes(), func(kv attribute.KeyValue) bool { return slices.Contains(idAttributes, kv.Key) })
	out := []trace.SpanStartOption{trace.WithAttributes(attrs...), trace.WithSpanKind(cfg.SpanKind()), trace.WithLinks(cfg.Links()...)}
	if cfg.NewRoot() {
		out = append(out, trace.WithNewRoot())
	}
	if ts := cfg.Timestamp(); !ts.IsZero() {
		out = append(out, trace.WithTimestamp(ts))
	}
	return t.Tracer.Start(ctx, name, out...)
}
