package obs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// instrumentation names the tracer of sensorgate's own spans.
const instrumentation = "github.com/sensorgate/sensorgate/pkg/obs"

// Tracing is one binary's tracer provider and W3C propagator. It is passed explicitly
// (never installed as a global) so tests can run binaries side by side with their own
// exporters.
type Tracing struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
	shutdown   func(context.Context) error
	enabled    bool
}

// NoTracing returns a Tracing that records nothing.
func NoTracing() *Tracing {
	return &Tracing{
		provider:   noop.NewTracerProvider(),
		propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		shutdown:   func(context.Context) error { return nil },
	}
}

// NewTracing wraps a tracer provider (for example an SDK provider with an in-memory
// exporter in tests). Shutdown does not shut tp down; its owner does.
func NewTracing(tp trace.TracerProvider) *Tracing {
	t := NoTracing()
	t.provider, t.enabled = tp, true
	return t
}

// TracingEnabled reports whether the OTEL_* variables ask for tracing: off unless
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_TRACES_EXPORTER
// is set, and always off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
func TracingEnabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	exp := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")))
	if exp == "none" {
		return false
	}
	return exp != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// SetupTracing configures tracing from the standard OTEL_* variables read through getenv
// (TracingEnabled decides on/off). The exporter is OTLP over HTTP/protobuf (the default) or
// gRPC (OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL=grpc); the exporter reads its endpoint,
// headers, timeout and TLS settings, and the SDK its sampler (OTEL_TRACES_SAMPLER), from
// the process environment as the OpenTelemetry specification says. service names the
// binary unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES says otherwise. Call
// Shutdown on exit to flush spans.
func SetupTracing(ctx context.Context, service string, getenv func(string) string) (*Tracing, error) {
	if !TracingEnabled(getenv) {
		return NoTracing(), nil
	}
	if exp := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); exp != "" && exp != "otlp" {
		return nil, fmt.Errorf("obs: OTEL_TRACES_EXPORTER=%q: want otlp or none", exp)
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		exporter sdktrace.SpanExporter
		err      error
	)
	switch strings.ToLower(strings.TrimSpace(protocol)) {
	case "", "http/protobuf":
		exporter, err = otlptracehttp.New(ctx)
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("obs: OTEL_EXPORTER_OTLP_PROTOCOL=%q: want http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("obs: create OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("obs: tracing resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	t := NewTracing(tp)
	t.shutdown = tp.Shutdown
	return t, nil
}

// Enabled reports whether spans are recorded.
func (t *Tracing) Enabled() bool { return t.enabled }

// Tracer returns the tracer of sensorgate's own spans.
func (t *Tracing) Tracer() trace.Tracer { return t.provider.Tracer(instrumentation) }

// Propagator returns the W3C trace-context and baggage propagator.
func (t *Tracing) Propagator() propagation.TextMapPropagator { return t.propagator }

// Shutdown flushes and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if err := t.shutdown(ctx); err != nil {
		return fmt.Errorf("obs: shut down tracing: %w", err)
	}
	return nil
}

// StartSpan starts a child span of the request in ctx with the tracer the HTTP middleware
// put there; outside a traced request it returns a span that records nothing.
func StartSpan(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	var tracer trace.Tracer
	if ri := info(ctx); ri != nil {
		ri.mu.Lock()
		tracer = ri.tracer
		ri.mu.Unlock()
	}
	if tracer == nil {
		tracer = trace.SpanFromContext(ctx).TracerProvider().Tracer(instrumentation)
	}
	return tracer.Start(ctx, name, opts...)
}
