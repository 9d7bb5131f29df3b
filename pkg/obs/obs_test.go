package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// logLines decodes the JSON lines a logger wrote.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, sent string
		keep       bool
	}{
		{"absent", "", false},
		{"valid", "req-123_abc.DEF", true},
		{"uuid", "3f2b8c1e-6d0a-4c55-9a53-0b8f6f1d2e77", true},
		{"with space", "a b", false},
		{"with newline (log forging)", "a\nlevel=ERROR", false},
		{"non-ASCII", "réq", false},
		{"too long", strings.Repeat("a", MaxRequestIDLen+1), false},
		{"longest kept", strings.Repeat("a", MaxRequestIDLen), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			logger, err := NewLogger(&logs, LogConfig{Format: FormatJSON})
			if err != nil {
				t.Fatal(err)
			}
			var inHandler string
			h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inHandler = RequestID(r.Context())
				logger.InfoContext(r.Context(), "inside")
			}), HTTPOptions{Logger: logger})
			req := httptest.NewRequest("GET", "/x", nil)
			if tc.sent != "" {
				req.Header.Set(HeaderRequestID, tc.sent)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			got := rec.Header().Get(HeaderRequestID)
			if tc.keep && got != tc.sent {
				t.Errorf("response id = %q, want the caller's %q", got, tc.sent)
			}
			if !tc.keep && (got == tc.sent || !ValidRequestID(got)) {
				t.Errorf("response id = %q, want a fresh valid id", got)
			}
			if inHandler != got {
				t.Errorf("context id = %q, response id = %q", inHandler, got)
			}
			lines := logLines(t, &logs)
			if len(lines) != 2 {
				t.Fatalf("got %d log lines, want 2 (handler + access)", len(lines))
			}
			for _, l := range lines {
				if l["request_id"] != got {
					t.Errorf("log line %v has request_id %v, want %q", l["msg"], l["request_id"], got)
				}
			}
		})
	}
}

func TestNewLogger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     LogConfig
		json    bool
		wantErr string
	}{
		{"production is JSON", LogConfig{Env: "production"}, true, ""},
		{"development is text", LogConfig{Env: "development"}, false, ""},
		{"explicit text in production", LogConfig{Env: "production", Format: "text"}, false, ""},
		{"explicit json", LogConfig{Format: "JSON"}, true, ""},
		{"bad format", LogConfig{Format: "xml"}, false, `log format "xml"`},
		{"bad level", LogConfig{Level: "loud"}, false, `log level "loud"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			l, err := NewLogger(&buf, tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			l.Info("hello", "n", 1)
			isJSON := json.Valid(bytes.TrimSpace(buf.Bytes()))
			if isJSON != tc.json {
				t.Errorf("JSON = %v, want %v: %s", isJSON, tc.json, buf.String())
			}
		})
	}
}

func TestLoggerRedactsSecretsAndAddsKeyID(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l, err := NewLogger(&buf, LogConfig{Format: FormatJSON, Level: "debug"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithRequestID(context.Background(), "r1")
	SetKeyID(ctx, "key-7")
	l.DebugContext(ctx, "auth", "x-api-key", "sg_live_secret", "api_key", "sg_live_secret", "Authorization", "Bearer sg_live_secret")
	if strings.Contains(buf.String(), "sg_live_secret") {
		t.Fatalf("a key reached the log: %s", buf.String())
	}
	line := logLines(t, &buf)[0]
	if line["key_id"] != "key-7" || line["request_id"] != "r1" {
		t.Errorf("line = %v, want key_id key-7 and request_id r1", line)
	}
}

// TestLoggerScrubsSecretsInValues: a key or a URL password inside any string or error
// value is masked, whatever the attribute is called; the rest of the value stays.
func TestLoggerScrubsSecretsInValues(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l, err := NewLogger(&buf, LogConfig{Format: FormatJSON})
	if err != nil {
		t.Fatal(err)
	}
	key := "sg_dev_4f7b1d2c9a8e6b3f0d5c7a9e1b2d4f6a"
	l.Info("x", "path", "/api/v1/sensors?key="+key, "url", "postgres://gw:hunter2@db:5432/gw",
		"err", errors.New("open postgres://gw:hunter2@db/gw: refused"), "n", 3, "plain", "nothing secret")
	out := buf.String()
	for _, secret := range []string{key, "hunter2"} {
		if strings.Contains(out, secret) {
			t.Errorf("%q reached the log: %s", secret, out)
		}
	}
	line := logLines(t, &buf)[0]
	for k, want := range map[string]any{"path": "/api/v1/sensors?key=sg_dev_4f7b…[redacted]", "url": "postgres://gw:[redacted]@db:5432/gw",
		"err": "open postgres://gw:[redacted]@db/gw: refused", "plain": "nothing secret", "n": float64(3)} {
		if line[k] != want {
			t.Errorf("%s = %v, want %v", k, line[k], want)
		}
	}
}

func TestMetricsRouteLabels(t *testing.T) {
	t.Parallel()
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(reg, "ocean")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sensors/{id}/readings", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /routed", func(w http.ResponseWriter, r *http.Request) {
		SetRoute(r.Context(), "/api/v1/sensors/:id") // what a Gin router records
		w.WriteHeader(http.StatusTeapot)
	})
	mux.Handle(PathMetrics, MetricsHandler(reg))
	h := Middleware(mux, HTTPOptions{Metrics: m})
	for _, p := range []string{"/v1/sensors/41002/readings", "/v1/sensors/TPLM2/readings", "/routed", "/nope/1", "/nope/2"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
	}
	tests := []struct {
		route, status string
		want          int
	}{
		{"GET /v1/sensors/{id}/readings", "200", 2},
		{"/api/v1/sensors/:id", "418", 1},
		{UnmatchedRoute, "404", 2},
	}
	for _, tc := range tests {
		n := sampleCount(t, mustObserver(t, m, tc.route, tc.status))
		if int(n) != tc.want {
			t.Errorf("route %q status %s: %d requests, want %d", tc.route, tc.status, n, tc.want)
		}
	}
	// Raw paths never become labels.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", PathMetrics, nil))
	body := rec.Body.String()
	for _, raw := range []string{"41002", "TPLM2", "/nope"} {
		if strings.Contains(body, raw) {
			t.Errorf("metrics expose the raw path fragment %q", raw)
		}
	}
	if !strings.Contains(body, `sensorgate_http_request_duration_seconds_count{component="ocean",method="GET",route="GET /v1/sensors/{id}/readings",status="200"} 2`) {
		t.Errorf("metrics output lacks the route series:\n%s", body)
	}
}

// TestMetricsMethodLabels: a client may send any token as its method; the label is one of
// a fixed set, so made-up methods cannot mint series.
func TestMetricsMethodLabels(t *testing.T) {
	t.Parallel()
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(reg, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetRoute(r.Context(), "/x")
		w.WriteHeader(http.StatusMethodNotAllowed)
	}), HTTPOptions{Metrics: m})
	for _, method := range []string{"GETT", "POS", strings.Repeat("M", 300), "get", "PATCH"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, "/x", nil))
	}
	rec := httptest.NewRecorder()
	MetricsHandler(reg).ServeHTTP(rec, httptest.NewRequest("GET", PathMetrics, nil))
	body := rec.Body.String()
	for _, want := range []string{`method="other",route="/x",status="405"} 4`, `method="PATCH",route="/x",status="405"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
	for _, raw := range []string{"GETT", "POS\"", "MMMM", `"get"`} {
		if strings.Contains(body, raw) {
			t.Errorf("metrics expose the raw method %q", raw)
		}
	}
}

func sampleCount(t *testing.T, m prometheus.Metric) uint64 {
	t.Helper()
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		t.Fatal(err)
	}
	return pb.GetHistogram().GetSampleCount()
}

func TestMetricsRegistration(t *testing.T) {
	t.Parallel()
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg, "weather"); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg, "weather"); err == nil {
		t.Error("registering the metrics twice in one registry succeeded")
	}
	if _, err := NewMetrics(prometheus.NewRegistry(), ""); err == nil {
		t.Error("metrics without a component name were accepted")
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, Namespace) {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
}

func TestIngestCollector(t *testing.T) {
	t.Parallel()
	success := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	lag := 600.0
	health := func() []ProviderIngest {
		return []ProviderIngest{
			{Slug: "nws", Mode: "files", LastSuccess: success, LagSeconds: &lag, RowsIngested: 60, RowsRejected: map[string]int64{"out_of_range": 2}},
			{Slug: "metar", Mode: "live", RowsRejected: map[string]int64{}},
		}
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(NewIngestCollector("weather", health)); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP sensorgate_ingest_lag_seconds Age in seconds of the newest reading ingested from the provider.
# TYPE sensorgate_ingest_lag_seconds gauge
sensorgate_ingest_lag_seconds{component="weather",provider="nws"} 600
# HELP sensorgate_ingest_last_success_timestamp_seconds Unix time of the provider's last successful ingest.
# TYPE sensorgate_ingest_last_success_timestamp_seconds gauge
sensorgate_ingest_last_success_timestamp_seconds{component="weather",provider="nws"} ` + strconv.FormatFloat(float64(success.Unix()), 'g', -1, 64) + `
# HELP sensorgate_ingest_readings_total Readings ingested, by provider.
# TYPE sensorgate_ingest_readings_total counter
sensorgate_ingest_readings_total{component="weather",mode="files",provider="nws"} 60
sensorgate_ingest_readings_total{component="weather",mode="live",provider="metar"} 0
# HELP sensorgate_ingest_rows_rejected_total Rows or values rejected at ingest, by provider and reason.
# TYPE sensorgate_ingest_rows_rejected_total counter
sensorgate_ingest_rows_rejected_total{component="weather",provider="nws",reason="out_of_range"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestUpstreamOutcome(t *testing.T) {
	t.Parallel()
	timeoutErr := &net.OpError{Op: "dial", Err: &timeoutError{}}
	tests := []struct {
		status int
		err    error
		want   string
	}{
		{200, nil, OutcomeOK},
		{404, nil, OutcomeOK},
		{503, nil, OutcomeServerError},
		{0, errors.New("connection refused"), OutcomeUnavailable},
		{0, context.DeadlineExceeded, OutcomeTimeout},
		{0, timeoutErr, OutcomeTimeout},
		{0, context.Canceled, OutcomeCanceled},
	}
	for _, tc := range tests {
		if got := UpstreamOutcome(tc.status, tc.err); got != tc.want {
			t.Errorf("UpstreamOutcome(%d, %v) = %q, want %q", tc.status, tc.err, got, tc.want)
		}
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestPanicBecomes500(t *testing.T) {
	t.Parallel()
	reg, _ := NewRegistry()
	m, err := NewMetrics(reg, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	logger, _ := NewLogger(&logs, LogConfig{Format: FormatJSON})
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetRoute(r.Context(), "/boom")
		panic("boom")
	}), HTTPOptions{Logger: logger, Metrics: m})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/boom", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"code":"internal"`) {
		t.Errorf("got %d %s, want 500 with the internal error shape", rec.Code, rec.Body.String())
	}
	if n := sampleCount(t, mustObserver(t, m, "/boom", "500")); n != 1 {
		t.Errorf("500 recorded %d times, want 1", n)
	}
	if !strings.Contains(logs.String(), "handler panicked") {
		t.Errorf("panic not logged: %s", logs.String())
	}
}

func mustObserver(t *testing.T, m *Metrics, route, status string) prometheus.Metric {
	t.Helper()
	o, err := m.HTTPDuration.GetMetricWithLabelValues(route, "GET", status)
	if err != nil {
		t.Fatal(err)
	}
	return o.(prometheus.Metric)
}

// TestTracePropagation runs a "gateway" and a "service" as two real HTTP servers, each with
// its own tracer provider, and checks that one trace spans the gateway's server span, its
// client call, the service's server span and the service's store span, and that the request
// id travels with it.
func TestTracePropagation(t *testing.T) {
	t.Parallel()
	gwSpans, svcSpans := tracetest.NewInMemoryExporter(), tracetest.NewInMemoryExporter()
	gwTP := sdktrace.NewTracerProvider(sdktrace.WithSyncer(gwSpans))
	svcTP := sdktrace.NewTracerProvider(sdktrace.WithSyncer(svcSpans))
	t.Cleanup(func() { _ = gwTP.Shutdown(context.Background()); _ = svcTP.Shutdown(context.Background()) })
	gwTracing, svcTracing := NewTracing(gwTP), NewTracing(svcTP)

	reg, _ := NewRegistry()
	svcMetrics, err := NewMetrics(reg, "ocean")
	if err != nil {
		t.Fatal(err)
	}
	var svcSawID string
	svcMux := http.NewServeMux()
	svcMux.HandleFunc("GET /v1/sensors/{id}/readings/latest", func(w http.ResponseWriter, r *http.Request) {
		svcSawID = r.Header.Get(HeaderRequestID)
		_, done := svcMetrics.StoreQuery(r.Context(), "readings", "latest")
		done(nil)
		_, _ = io.WriteString(w, "{}")
	})
	svc := httptest.NewServer(Middleware(svcMux, HTTPOptions{Tracing: svcTracing, Metrics: svcMetrics}))
	t.Cleanup(svc.Close)

	client := &http.Client{Transport: Transport(nil, gwTracing), Timeout: 10 * time.Second}
	gw := httptest.NewServer(Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetRoute(r.Context(), "/api/v1/sensors/:id/readings/latest")
		req, _ := http.NewRequestWithContext(r.Context(), "GET", svc.URL+"/v1/sensors/41002/readings/latest", nil)
		resp, err := client.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(w, resp.Body)
	}), HTTPOptions{Tracing: gwTracing}))
	t.Cleanup(gw.Close)

	req, _ := http.NewRequest("GET", gw.URL+"/api/v1/sensors/41002/readings/latest", nil)
	req.Header.Set(HeaderRequestID, "trace-me-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if svcSawID != "trace-me-1" {
		t.Errorf("service saw request id %q, want trace-me-1", svcSawID)
	}

	byName := map[string]tracetest.SpanStub{}
	for _, s := range append(gwSpans.GetSpans(), svcSpans.GetSpans()...) {
		byName[s.Name] = s
	}
	gwServer, ok1 := byName["GET /api/v1/sensors/:id/readings/latest"]
	gwClient, ok2 := byName["GET"]
	svcServer, ok3 := byName["GET GET /v1/sensors/{id}/readings/latest"]
	store, ok4 := byName["readings.latest"]
	if !ok1 || !ok2 || !ok3 || !ok4 {
		t.Fatalf("missing spans; have %v", keys(byName))
	}
	traceID := gwServer.SpanContext.TraceID()
	for name, s := range byName {
		if s.SpanContext.TraceID() != traceID {
			t.Errorf("span %q is in trace %s, want %s", name, s.SpanContext.TraceID(), traceID)
		}
	}
	checkParent := func(child, parent tracetest.SpanStub) {
		t.Helper()
		if child.Parent.SpanID() != parent.SpanContext.SpanID() {
			t.Errorf("span %q has parent %s, want %q (%s)", child.Name, child.Parent.SpanID(), parent.Name, parent.SpanContext.SpanID())
		}
	}
	checkParent(gwClient, gwServer)
	checkParent(svcServer, gwClient)
	checkParent(store, svcServer)
	if svcServer.SpanKind != trace.SpanKindServer || gwClient.SpanKind != trace.SpanKindClient {
		t.Errorf("span kinds: service %v, client %v", svcServer.SpanKind, gwClient.SpanKind)
	}
}

func keys(m map[string]tracetest.SpanStub) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestTracingEnabled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{"exporter none wins", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false},
		{"sdk disabled wins", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false},
	}
	for _, tc := range tests {
		getenv := func(k string) string { return tc.env[k] }
		if got := TracingEnabled(getenv); got != tc.want {
			t.Errorf("%s: TracingEnabled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSetupTracing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	off, err := SetupTracing(ctx, "gateway", func(string) string { return "" })
	if err != nil || off.Enabled() {
		t.Fatalf("no OTEL_* set: enabled=%v err=%v, want off", off.Enabled(), err)
	}
	for _, env := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "otlp"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
	} {
		tr, err := SetupTracing(ctx, "gateway", func(k string) string { return env[k] })
		if err != nil || !tr.Enabled() {
			t.Fatalf("%v: enabled=%v err=%v, want on", env, tr != nil && tr.Enabled(), err)
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := tr.Shutdown(sctx); err != nil {
			t.Errorf("%v: shutdown: %v", env, err)
		}
		cancel()
	}
	for _, env := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
	} {
		if _, err := SetupTracing(ctx, "gateway", func(k string) string { return env[k] }); err == nil {
			t.Errorf("%v: accepted", env)
		}
	}
}

func TestStreamingStillFlushes(t *testing.T) {
	t.Parallel()
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := w.(http.Flusher); !ok {
			t.Error("the wrapped writer lost http.Flusher")
		}
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
	}), HTTPOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
}

func TestTransportPassesRequestIDWithTracingOff(t *testing.T) {
	t.Parallel()
	var got, traceparent string
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, traceparent = r.Header.Get(HeaderRequestID), r.Header.Get("traceparent")
	}))
	t.Cleanup(svc.Close)
	client := &http.Client{Transport: Transport(nil, NoTracing())}
	ctx := WithRequestID(context.Background(), "off-1")
	req, _ := http.NewRequestWithContext(ctx, "GET", svc.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got != "off-1" {
		t.Errorf("service saw request id %q, want off-1", got)
	}
	if traceparent != "" {
		t.Errorf("tracing is off, yet traceparent %q was sent", traceparent)
	}
	if req.Header.Get(HeaderRequestID) != "" {
		t.Error("the transport changed the caller's request")
	}
}

func TestQuietPathsLogAtDebug(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	logger, _ := NewLogger(&logs, LogConfig{Format: FormatJSON})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /v1/meta", func(w http.ResponseWriter, r *http.Request) {})
	h := Middleware(mux, HTTPOptions{Logger: logger, Quiet: DefaultQuiet()})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/meta", nil))
	lines := logLines(t, &logs)
	if len(lines) != 1 || lines[0]["route"] != "GET /v1/meta" {
		t.Errorf("want only the /v1/meta access line at info, got %v", lines)
	}
}
