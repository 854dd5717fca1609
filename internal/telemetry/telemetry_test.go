package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestEnabled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		vars map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"service name alone", map[string]string{"OTEL_SERVICE_NAME": "recall-eu"}, false},
		{"sampler alone", map[string]string{"OTEL_TRACES_SAMPLER": "always_on"}, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{"exporter", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, false},
		{"SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false},
		{"SDK not disabled", map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, true},
	}
	for _, tt := range tests {
		if got := Enabled(env(tt.vars)); got != tt.want {
			t.Errorf("%s: Enabled = %v, want %v", tt.name, got, tt.want)
		}
	}
	if Enabled(nil) {
		t.Error("Enabled(nil) = true")
	}
}

// TestSetupOff: with no OTEL_* variable, Setup returns no provider and
// installs nothing: the global provider and propagator stay the API's
// no-op ones, and no goroutine is left (goleak in TestMain).
func TestSetupOff(t *testing.T) {
	t.Parallel()
	globalTP, globalProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	for _, vars := range []map[string]string{nil, {"OTEL_TRACES_EXPORTER": "none"}, {"OTEL_SERVICE_NAME": "x"}} {
		tp, err := Setup(t.Context(), env(vars))
		if err != nil || tp != nil {
			t.Errorf("Setup(%v) = %v, %v; want nil, nil", vars, tp, err)
		}
	}
	if otel.GetTracerProvider() != globalTP {
		t.Error("Setup replaced the global tracer provider")
	}
	if _, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider); ok {
		t.Error("the global tracer provider is an SDK provider")
	}
	if f := otel.GetTextMapPropagator().Fields(); len(f) != 0 || otel.GetTextMapPropagator() != globalProp {
		t.Errorf("Setup installed a global propagator (fields %v)", f)
	}
}

// TestSetupOn: a console exporter asked for gives a provider that Shutdown
// stops.
func TestSetupOn(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	tp, err := Setup(t.Context(), env(map[string]string{"OTEL_TRACES_EXPORTER": "console"}))
	if err != nil || tp == nil {
		t.Fatalf("Setup = %v, %v; want a provider", tp, err)
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestNewProviderResource: spans name the service recall unless
// OTEL_SERVICE_NAME names another.
func TestNewProviderResource(t *testing.T) {
	for _, tt := range []struct{ env, want string }{{"", ServiceName}, {"recall-eu", "recall-eu"}} {
		t.Setenv("OTEL_SERVICE_NAME", tt.env)
		exp := tracetest.NewInMemoryExporter()
		tp, err := NewProvider(t.Context(), sdktrace.WithSyncer(exp))
		if err != nil {
			t.Fatal(err)
		}
		_, span := tp.Tracer("test").Start(t.Context(), "s")
		span.End()
		spans := exp.GetSpans() // before Shutdown, which empties exp
		_ = tp.Shutdown(context.Background())
		if len(spans) != 1 {
			t.Fatalf("%d spans", len(spans))
		}
		got := ""
		for _, kv := range spans[0].Resource.Attributes() {
			if kv.Key == "service.name" {
				got = kv.Value.AsString()
			}
		}
		if got != tt.want {
			t.Errorf("OTEL_SERVICE_NAME=%q: service.name %q, want %q", tt.env, got, tt.want)
		}
	}
}
