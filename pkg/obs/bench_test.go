package obs

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// BenchmarkMiddleware measures what the shared middleware adds to one request: request id,
// metrics by route, access log (JSON, discarded) and, in the traced case, a sampled server
// span (no exporter, so only the span's own cost counts).
func BenchmarkMiddleware(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sensors/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	reg, _ := NewRegistry()
	m, err := NewMetrics(reg, "bench")
	if err != nil {
		b.Fatal(err)
	}
	logger, _ := NewLogger(io.Discard, LogConfig{Format: FormatJSON})
	traced := NewTracing(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample())))
	cases := []struct {
		name string
		h    http.Handler
	}{
		{"bare mux", mux},
		{"middleware", Middleware(mux, HTTPOptions{Logger: logger, Metrics: m})},
		{"middleware+tracing", Middleware(mux, HTTPOptions{Logger: logger, Metrics: m, Tracing: traced})},
		{"middleware, log at warn", Middleware(mux, HTTPOptions{Logger: slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})), Metrics: m})},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/v1/sensors/41002", nil)
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
