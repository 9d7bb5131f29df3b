package obs

import "github.com/sensorgate/sensorgate/pkg/settings"

// TracingEnv documents the OTEL_* variables SetupTracing reads through the binary's getenv,
// for every binary's configuration table (--help, --print-env, deployment checks; see
// docs/operability.md, "Tracing"). The OpenTelemetry SDK itself may read further standard
// OTEL_* variables (sampler, headers, TLS) from the process environment.
var TracingEnv = []settings.External{
	{Env: "OTEL_SDK_DISABLED", Usage: "true forces tracing off"},
	{Env: "OTEL_TRACES_EXPORTER", Usage: "otlp turns tracing on (default endpoint localhost:4318), none forces it off"},
	{Env: "OTEL_EXPORTER_OTLP_ENDPOINT", Usage: "turns tracing on, exporting OTLP to this endpoint"},
	{Env: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", Usage: "turns tracing on, exporting the traces' OTLP to this endpoint"},
	{Env: "OTEL_EXPORTER_OTLP_PROTOCOL", Default: "http/protobuf", Usage: "OTLP protocol: http/protobuf or grpc"},
	{Env: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", Usage: "OTLP protocol of traces, over OTEL_EXPORTER_OTLP_PROTOCOL"},
}
