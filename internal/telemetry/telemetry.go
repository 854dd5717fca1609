// Package telemetry sets up recall's OpenTelemetry traces from the standard
// OTEL_* variables, in one place: the commands call Setup, hand the provider
// it returns to every part they build, and shut it down (flushing the spans
// still held) on exit.
//
// Traces are off unless the environment asks for them: then Setup returns
// no provider, installs nothing (no exporter, no goroutine, no global
// provider or propagator), and the parts build no instrumentation at all.
//
// recall carries trace context in the W3C Trace Context form (traceparent,
// tracestate): in NATS message headers, River job metadata and HTTP
// headers. Which spans it makes, and what they may carry, is in
// docs/operations.md ("Traces").
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ServiceName is the service.name of recall's spans unless OTEL_SERVICE_NAME
// (or service.name in OTEL_RESOURCE_ATTRIBUTES) names another.
const ServiceName = "recall"

// Enabled reports whether the variables read through getenv ask for traces:
// OTEL_TRACES_EXPORTER names an exporter other than none, or, with it unset,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT names a
// collector; and OTEL_SDK_DISABLED is not true. OTEL_SERVICE_NAME or the
// sampler alone turn nothing on. A nil getenv asks for nothing.
func Enabled(getenv func(string) string) bool {
	if getenv == nil {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e != "" {
		return !strings.EqualFold(e, "none")
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Setup returns the tracer provider the OTEL_* variables ask for, or nil
// when Enabled(getenv) is false. The exporter is the one OTEL_TRACES_EXPORTER
// names (otlp, the default, or console), configured by the other standard
// variables (OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_*ENDPOINT,
// OTEL_EXPORTER_OTLP_*HEADERS, …); spans are sampled as OTEL_TRACES_SAMPLER
// and OTEL_TRACES_SAMPLER_ARG say (parentbased_always_on by default) and
// exported in batches (OTEL_BSP_*). getenv only decides whether traces are
// on: the exporter and the SDK read the process's environment themselves.
//
// The caller must Shutdown the provider on exit, which flushes the spans it
// still holds.
func Setup(ctx context.Context, getenv func(string) string) (*sdktrace.TracerProvider, error) {
	if !Enabled(getenv) {
		return nil, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("traces: the exporter the OTEL_* variables name: %w", err)
	}
	if autoexport.IsNoneSpanExporter(exp) {
		return nil, nil
	}
	tp, err := NewProvider(ctx, sdktrace.WithBatcher(exp))
	if err != nil {
		return nil, errors.Join(err, exp.Shutdown(ctx))
	}
	return tp, nil
}

// NewProvider returns an SDK tracer provider with recall's resource
// (service.name recall, the SDK's attributes, and OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES over them) and opts, which name where spans go:
// sdktrace.WithBatcher(exporter) in production, sdktrace.WithSyncer of an
// in-memory exporter in tests.
func NewProvider(ctx context.Context, opts ...sdktrace.TracerProviderOption) (*sdktrace.TracerProvider, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", ServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // last: the operator's names win
	)
	if err != nil {
		return nil, fmt.Errorf("traces: resource (check OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	return sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithResource(res)}, opts...)...), nil
}
