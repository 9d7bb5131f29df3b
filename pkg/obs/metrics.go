package obs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// PathMetrics is where every binary serves its metrics.
const PathMetrics = "/metrics"

// Namespace prefixes every sensorgate metric.
const Namespace = "sensorgate"

// Outcomes of an upstream call (UpstreamMetrics.Observe).
const (
	OutcomeOK          = "ok"           // 2xx-4xx answer: the service did its job
	OutcomeServerError = "server_error" // 5xx answer after retries
	OutcomeUnavailable = "unavailable"  // refused, reset, DNS
	OutcomeTimeout     = "timeout"      // deadline exceeded
	OutcomeCanceled    = "canceled"     // the client went away
)

// Key-cache results (KeyCache counter).
const (
	CacheHit  = "hit"
	CacheMiss = "miss"
)

// UnmatchedRoute labels requests that matched no route, so scanners cannot mint series.
const UnmatchedRoute = "unmatched"

// NewRegistry returns a registry with the Go runtime and process collectors, so every
// binary exposes the same base metrics.
func NewRegistry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("obs: register base collector: %w", err)
		}
	}
	return reg, nil
}

// MetricsHandler serves reg in the Prometheus exposition format.
func MetricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true})
}

// Metrics holds the sensorgate metrics shared by the binaries. All binaries register the
// same set (a series appears only once a binary records it), so one dashboard and one set
// of alert rules fit all of them. Each metric carries the constant label component
// (gateway, ocean, ...). Rate-limit decisions are registered by package ratelimit itself
// (sensorgate_ratelimit_decisions_total{result,source}), which owns their meaning.
type Metrics struct {
	// HTTPDuration: served requests by route template, method and status code.
	HTTPDuration *prometheus.HistogramVec
	// HTTPInFlight: requests being served.
	HTTPInFlight prometheus.Gauge
	// UpstreamDuration: calls from the gateway to a backing service, by service and outcome.
	UpstreamDuration *prometheus.HistogramVec
	// KeyCache: lookups in the gateway's API key cache, by result (hit | miss).
	KeyCache *prometheus.CounterVec
	// ServiceUp: 1 when the gateway's last probe of a service succeeded, 0 when not.
	ServiceUp *prometheus.GaugeVec
	// StoreDuration: store queries, by store (catalog | readings), operation and result.
	StoreDuration *prometheus.HistogramVec
	// BuildInfo is 1, labelled with the binary's version.
	BuildInfo *prometheus.GaugeVec
	// StreamDelay: the gateway's streams, from a service logging a stored reading (its
	// log position's time) to the gateway receiving it from the log (stage received) and
	// to a stream writing it to its client's connection (stage written), by service.
	StreamDelay *prometheus.HistogramVec

	names []string

	httpObs     observerCache[httpLabels]
	upstreamObs observerCache[upstreamLabels]
}

type httpLabels struct {
	route, method string
	status        int
}

type upstreamLabels struct{ service, outcome string }

// maxCachedObservers bounds an observerCache: label sets beyond it (a scanner sending made-up
// methods) are looked up every time, as without the cache, instead of growing it.
const maxCachedObservers = 1024

// observerCache remembers the histogram child of each label set, so that recording a
// request is one lock-free map read instead of prometheus' label hashing and locked lookup
// (WithLabelValues) plus strconv of the status: per request, on every binary. The map is
// copied on write; writes are rare (a new route, method or status) and bounded.
type observerCache[K comparable] struct {
	m  atomic.Pointer[map[K]prometheus.Observer]
	mu sync.Mutex // serializes writers
}

func (c *observerCache[K]) get(k K, create func() prometheus.Observer) prometheus.Observer {
	if m := c.m.Load(); m != nil {
		if o, ok := (*m)[k]; ok {
			return o
		}
	}
	o := create()
	c.mu.Lock()
	defer c.mu.Unlock()
	next := map[K]prometheus.Observer{}
	if old := c.m.Load(); old != nil {
		if len(*old) >= maxCachedObservers {
			return o
		}
		next = maps.Clone(*old)
	}
	next[k] = o
	c.m.Store(&next)
	return o
}

// httpBuckets span a cached catalog answer (sub-millisecond) to a slow upstream (10 s).
var httpBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// streamBuckets resolve the 2 s delivery promise of the streams (docs/live.md) and a burst
// of readings fanned out to thousands of streams.
var streamBuckets = []float64{.01, .025, .05, .1, .25, .5, .75, 1, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10, 30}

// Stages of StreamDelay.
const (
	StreamReceived = "received"
	StreamWritten  = "written"
)

// NewMetrics creates and registers every metric with component as constant label.
func NewMetrics(reg prometheus.Registerer, component string) (*Metrics, error) {
	if component == "" {
		return nil, errors.New("obs: metrics need a component name")
	}
	cl := prometheus.Labels{"component": component}
	m := &Metrics{}
	var cs []prometheus.Collector
	hist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets, ConstLabels: cl}, labels)
		cs = append(cs, v)
		m.names = append(m.names, Namespace+"_"+name)
		return v
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help, ConstLabels: cl}, labels)
		cs = append(cs, v)
		m.names = append(m.names, Namespace+"_"+name)
		return v
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help, ConstLabels: cl}, labels)
		cs = append(cs, v)
		m.names = append(m.names, Namespace+"_"+name)
		return v
	}
	m.HTTPDuration = hist("http_request_duration_seconds", "HTTP requests served, by route template, method and status code.", httpBuckets, "route", "method", "status")
	m.HTTPInFlight = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "http_requests_in_flight", Help: "HTTP requests being served.", ConstLabels: cl})
	cs = append(cs, m.HTTPInFlight)
	m.names = append(m.names, Namespace+"_http_requests_in_flight")
	m.UpstreamDuration = hist("upstream_request_duration_seconds", "Calls to a backing service, by service and outcome.", httpBuckets, "service", "outcome")
	m.KeyCache = counter("auth_key_cache_lookups_total", "API key cache lookups, by result.", "result")
	m.ServiceUp = gauge("service_up", "1 when the last probe of the service succeeded.", "service")
	m.StoreDuration = hist("store_query_duration_seconds", "Store queries, by store, operation and result.", []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}, "store", "op", "result")
	m.StreamDelay = hist("stream_delay_seconds", "Streams: from a service logging a stored reading to the gateway receiving it (stage=received) and writing it to a client (stage=written), by service.", streamBuckets, "service", "stage")
	m.BuildInfo = gauge("build_info", "Always 1, labelled with the version of the binary.", "version")
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("obs: register metric: %w", err)
		}
	}
	return m, nil
}

// Names returns the names of the metrics NewMetrics registers (histograms without their
// _bucket, _sum and _count suffixes).
func (m *Metrics) Names() []string { return append([]string(nil), m.names...) }

// ObserveHTTP records one served request; an unlisted method is recorded as MethodOther.
func (m *Metrics) ObserveHTTP(route, method string, status int, d time.Duration) {
	if route == "" {
		route = UnmatchedRoute
	}
	method = MethodLabel(method)
	m.httpObs.get(httpLabels{route, method, status}, func() prometheus.Observer {
		return m.HTTPDuration.WithLabelValues(route, method, strconv.Itoa(status))
	}).Observe(d.Seconds())
}

// ObserveUpstream records one call to a backing service.
func (m *Metrics) ObserveUpstream(service, outcome string, d time.Duration) {
	m.upstreamObs.get(upstreamLabels{service, outcome}, func() prometheus.Observer {
		return m.UpstreamDuration.WithLabelValues(service, outcome)
	}).Observe(d.Seconds())
}

// UpstreamOutcome classifies the result of a call to a service for ObserveUpstream.
func UpstreamOutcome(status int, err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return OutcomeTimeout
	case err != nil:
		return OutcomeUnavailable
	case status >= 500:
		return OutcomeServerError
	default:
		return OutcomeOK
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// StoreQuery times one store operation and traces it as a child span of the request in
// ctx. Call the returned function with the operation's error (nil for an expected miss
// such as not found, so the error series counts only failures):
//
//	ctx, done := m.StoreQuery(ctx, "readings", "latest")
//	row, err := q(ctx)
//	done(err)
func (m *Metrics) StoreQuery(ctx context.Context, store, op string) (context.Context, func(error)) {
	start := time.Now()
	ctx, span := StartSpan(ctx, store+"."+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("sensorgate.store", store), attribute.String("db.operation.name", op)))
	return ctx, func(err error) {
		result := "ok"
		if err != nil {
			result = "error"
			span.RecordError(err)
			span.SetStatus(codes.Error, "store query failed")
		}
		span.End()
		if m != nil {
			m.StoreDuration.WithLabelValues(store, op, result).Observe(time.Since(start).Seconds())
		}
	}
}
