package obs

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// HTTPOptions are the dependencies of Middleware; nil fields switch that part off.
type HTTPOptions struct {
	Logger  *slog.Logger
	Metrics *Metrics
	Tracing *Tracing
	// Quiet routes or paths are logged at debug level (health checks and scrapes would
	// drown the log); a path matches whatever pattern style the router uses.
	Quiet map[string]bool
}

// DefaultQuiet are the routes probes and scrapers hit all day.
func DefaultQuiet() map[string]bool {
	return map[string]bool{"/healthz": true, "/readyz": true, PathMetrics: true}
}

// Middleware wraps next with, in order: the request id (the caller's X-Request-Id when
// valid, else a new one; set on the response and in the context), a server span continuing
// the caller's W3C traceparent, the in-flight gauge, and after next returns the latency
// histogram, the span's name and status, and one access-log line.
//
// The route label is the template recorded with SetRoute (Gin routers call it) or, for a
// net/http ServeMux passed directly as next, the pattern the mux matched; requests that
// matched nothing are labelled "unmatched", never with their raw path.
func Middleware(next http.Handler, o HTTPOptions) http.Handler {
	if o.Tracing == nil {
		o.Tracing = NoTracing()
	}
	tracer := o.Tracing.Tracer()
	prop := o.Tracing.Propagator()
	// Without tracing there is no span to continue or record: the span, its attributes and
	// its context are skipped altogether (they cost allocations on every request even with
	// the no-op tracer).
	traced := o.Tracing.Enabled()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(HeaderRequestID)
		fromCaller := ValidRequestID(id)
		if !fromCaller {
			id = NewRequestID()
		}
		// One allocation holds the request's shared state, the response recorder and the
		// request id's header value, which the response and (for a new id) the request
		// share: both only read it, and an Add would copy it (its capacity is 1).
		st := &requestState{info: requestInfo{id: id, tracer: tracer}}
		st.idV[0] = id
		idV := st.idV[:1:1]
		w.Header()[HeaderRequestID] = idV // canonical already: no canonicalization
		ctx := context.WithValue(r.Context(), infoKey{}, &st.info)
		var span trace.Span
		if traced {
			ctx = prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
			ctx, span = tracer.Start(ctx, MethodLabel(r.Method), trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(
					attribute.String("http.request.method", MethodLabel(r.Method)),
					attribute.String("url.path", r.URL.Path),
					attribute.String("sensorgate.request_id", id),
				))
		}
		if o.Metrics != nil {
			o.Metrics.HTTPInFlight.Inc()
		}
		rec := &st.rec
		rec.ResponseWriter = w
		r2 := r.WithContext(ctx)
		if !fromCaller {
			// The request id must reach the handlers' own upstream calls even when they copy
			// the incoming headers instead of the context (a caller's valid id is there
			// already).
			r2.Header[HeaderRequestID] = idV
		}
		defer func() {
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			if p := recover(); p != nil {
				// A handler that panics must not take the server down with it, nor leave the
				// request unrecorded; the panic is reported as a 500.
				status = http.StatusInternalServerError
				if !rec.wrote {
					apierr.Write(rec, apierr.New(apierr.Internal, "internal error"))
				}
				if o.Logger != nil {
					o.Logger.ErrorContext(ctx, "handler panicked", "panic", fmt.Sprint(p))
				}
			}
			route := Route(ctx)
			if route == "" {
				route = r2.Pattern
			}
			if route == "" {
				route = UnmatchedRoute
			}
			d := time.Since(start)
			if span != nil {
				span.SetName(MethodLabel(r.Method) + " " + route)
				span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", status))
				if status >= 500 {
					span.SetStatus(codes.Error, http.StatusText(status))
				}
				span.End()
			}
			if o.Metrics != nil {
				o.Metrics.HTTPInFlight.Dec()
			}
			o.Observe(ctx, r.Method, route, r.URL.Path, status, d, rec.bytes)
		}()
		next.ServeHTTP(rec, r2)
	})
}

// MethodLabel is the method as metrics and spans record it: one of the methods of RFC 9110
// (and PATCH), or "other". A client may send any token as a method; recording it as given
// would let one client grow the label set without bound.
func MethodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m // the caller's string, no copy: net/http gives each request its own
	}
	return MethodOther
}

// MethodOther is the method label of every method MethodLabel does not list.
const MethodOther = "other"

// Observe records one finished request: the latency histogram by route template, and one
// access-log line (at error level for a 5xx, debug for a quiet route, including a probe's
// 503). Middleware calls it for every request.
func (o HTTPOptions) Observe(ctx context.Context, method, route, path string, status int, d time.Duration, bytes int64) {
	label := MethodLabel(method)
	if o.Metrics != nil {
		o.Metrics.ObserveHTTP(route, label, status, d)
	}
	if o.Logger == nil {
		return
	}
	level := slog.LevelInfo
	switch {
	case status == http.StatusServiceUnavailable && (o.Quiet[route] || o.Quiet[path]):
		// A probe answering "not ready" (dependencies still starting, or down) is the
		// probe doing its job, not a server error: the readiness handlers log their
		// components' state changes themselves (INFO while starting, WARN after).
		level = slog.LevelDebug
	case status >= 500:
		level = slog.LevelError
	case o.Quiet[route] || o.Quiet[path]:
		level = slog.LevelDebug
	}
	if !o.Logger.Enabled(ctx, level) {
		return
	}
	o.Logger.LogAttrs(ctx, level, "http request",
		slog.String("method", label),
		slog.String("route", route),
		slog.String("path", path),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		slog.Int64("bytes", bytes),
	)
}

// requestState is what Middleware allocates per request, in one piece.
type requestState struct {
	info requestInfo
	rec  recorder
	idV  [1]string
}

// recorder remembers the status and size of the response. It keeps Flush, Hijack and
// Unwrap working so streaming handlers behave as without it.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.status, r.wrote = http.StatusOK, true
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Flush() {
	if !r.wrote {
		r.status, r.wrote = http.StatusOK, true
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Transport returns a RoundTripper for calls to other sensorgate binaries: it passes the
// request id of the request's context in X-Request-Id, starts a client span and injects its
// W3C traceparent. base nil means http.DefaultTransport. Upstream latency by service and
// outcome is recorded by the caller, which knows the service (Metrics.ObserveUpstream).
func Transport(base http.RoundTripper, t *Tracing) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if t == nil || !t.Enabled() {
		return &idTransport{base: base}
	}
	return &transport{base: base, tracer: t.Tracer(), prop: t.Propagator()}
}

// idTransport only passes the request id on: with tracing off there is no span to start
// and, usually, nothing to copy.
type idTransport struct{ base http.RoundTripper }

func (t *idTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if id := RequestID(req.Context()); id != "" && req.Header.Get(HeaderRequestID) != id {
		req = req.Clone(req.Context())
		req.Header.Set(HeaderRequestID, id)
	}
	return t.base.RoundTrip(req)
}

type transport struct {
	base   http.RoundTripper
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, span := t.tracer.Start(req.Context(), req.Method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("http.request.method", req.Method),
			attribute.String("server.address", req.URL.Hostname()),
			attribute.String("url.path", req.URL.Path),
		))
	// A RoundTripper must not change the caller's request: work on a clone.
	out := req.Clone(ctx)
	if id := RequestID(ctx); id != "" {
		out.Header.Set(HeaderRequestID, id)
	}
	t.prop.Inject(ctx, propagation.HeaderCarrier(out.Header))
	resp, err := t.base.RoundTrip(out)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "request failed")
		span.End()
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, strconv.Itoa(resp.StatusCode))
	}
	span.End()
	return resp, nil
}
