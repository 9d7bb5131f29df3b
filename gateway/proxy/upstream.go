// Package proxy is the gateway's path to the backing services for readings and health:
// one pooled, retrying HTTP client per service (Upstreams), a short-lived response cache
// with request coalescing (Cache), and the Gin handlers that answer GET
// /sensors/:id/readings/latest, /sensors/:id/readings and /services/:id/health by passing
// the service's JSON through unchanged.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// Route names a kind of upstream call; each has its own deadline.
type Route int

// Routes.
const (
	RouteLatest Route = iota
	RouteReadings
	RouteHealth
	// RouteAggregate is a sensor's aggregates (docs/api-decisions.md "Wave 2").
	RouteAggregate
	// RouteMCP is one JSON-RPC message forwarded to a service's /mcp (package mcp).
	RouteMCP
	// RouteCatalog is one page of the catalog sync (GET /v1/meta, /v1/sensors).
	RouteCatalog
	// RouteStream is a streamed answer (event stream, export): its deadline bounds the
	// wait for the answer's headers, not the stream.
	RouteStream
	routeCount
)

func (r Route) String() string {
	switch r {
	case RouteLatest:
		return "latest"
	case RouteReadings:
		return "readings"
	case RouteHealth:
		return "health"
	case RouteAggregate:
		return "aggregate"
	case RouteMCP:
		return "mcp"
	case RouteCatalog:
		return "catalog"
	case RouteStream:
		return "stream"
	}
	return "route" + strconv.Itoa(int(r))
}

// Timeouts are the configured deadlines of one upstream call, retries included; New turns
// them into the one table of deadlines by route (Upstreams.Deadline).
type Timeouts struct {
	Latest time.Duration
	// Readings bounds readings pages, aggregates, forwarded MCP messages and the wait for
	// a stream's headers.
	Readings time.Duration
	// Health bounds a health call and each background probe.
	Health time.Duration
}

// Defaults.
const (
	DefaultLatestTimeout   = 5 * time.Second
	DefaultReadingsTimeout = 10 * time.Second
	DefaultHealthTimeout   = 2 * time.Second
	DefaultRetries         = 2
	DefaultRetryWaitMin    = 20 * time.Millisecond
	DefaultRetryWaitMax    = 200 * time.Millisecond
	// DefaultMaxBody bounds one upstream answer held in memory: 500 readings in raw form
	// are well under it.
	DefaultMaxBody = 16 << 20
	// minAttempt is the least time worth giving one more attempt.
	minAttempt = 50 * time.Millisecond
)

// Options configure Upstreams.
type Options struct {
	// Services maps a service id to its internal base URL (http://host:port).
	Services      map[string]string
	InternalToken string
	Timeouts      Timeouts
	// Retries is how many times an idempotent call is tried again after a connection
	// error or a 502/503/504, while its deadline leaves room (negative: none).
	Retries                    int
	RetryWaitMin, RetryWaitMax time.Duration
	// MaxIdleConnsPerHost sizes each service's keep-alive pool; it should cover the
	// expected concurrency so that a busy gateway never dials per request.
	MaxIdleConnsPerHost int
	MaxBody             int
	Logger              *slog.Logger
	// Metrics receives one observation per call (sensorgate_upstream_request_duration_seconds
	// by service and outcome); nil records nothing.
	Metrics *obs.Metrics
	// Tracing, when enabled, gives every attempt a client span and sends its W3C
	// traceparent to the service; nil traces nothing.
	Tracing *obs.Tracing
	// RecycleEvery bounds how long a service's idle keep-alive connections are reused
	// (default DefaultRecycleEvery): at most this often, a call closes them, so the next
	// connections resolve the service's name again and reach replicas added since (compose
	// --scale, a headless Service) instead of staying pinned to the first ones.
	RecycleEvery time.Duration
	// Resolver looks service host names up at each new connection; default
	// net.DefaultResolver (a test injects the addresses of a scaled service).
	Resolver interface {
		LookupHost(ctx context.Context, host string) ([]string, error)
	}
}

// DefaultRecycleEvery is the default of Options.RecycleEvery: a reconnection per
// connection every 10 s costs nothing measurable, and a new replica gets its share of the
// calls within seconds.
const DefaultRecycleEvery = 10 * time.Second

// Response is an upstream answer as the gateway keeps it: immutable once built, so cache
// hits and coalesced callers share it.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
	ETag        string // strong validator of Body
	FetchedAt   time.Time

	// contentTypeV and etagV are the header values ready to assign, made once per answer
	// instead of once per request served from it; both are windows of hdrV (capacity 1:
	// an append to one copies instead of writing into the other).
	contentTypeV, etagV []string
	hdrV                [2]string
}

// NewResponse is an answer of a service with body (owned by the Response from now on),
// its strong validator and its ready-made header values.
func NewResponse(status int, contentType string, body []byte, fetchedAt time.Time) *Response {
	var b [16]byte // a quoted base-36 uint64 is at most 15 bytes: one allocation, the string
	tag := append(b[:0], '"')
	tag = strconv.AppendUint(tag, xxhash.Sum64(body), 36)
	etag := string(append(tag, '"'))
	r := &Response{Status: status, ContentType: contentType, Body: body, ETag: etag, FetchedAt: fetchedAt}
	r.hdrV = [2]string{contentType, etag}
	r.contentTypeV, r.etagV = r.hdrV[0:1:1], r.hdrV[1:2:2]
	return r
}

// Upstreams calls the backing services. Each service has its own transport, so one
// failing service (whose failures drop its idle connections, see do) never empties the
// pools of the others.
type Upstreams struct {
	services map[string]*service
	byHost   map[string]*service // by host:port of the base URL, for Client
	// other carries Client calls to an address that is no configured service (a URL the
	// catalog recorded), on a pool of its own.
	other     *service
	deadlines [routeCount]time.Duration
	opt       Options
	bufs      sync.Pool
	tokenV    []string // the internal token header's value, nil without a token
}

var acceptJSON = []string{"application/json"}

// readBuf is what one upstream answer is read into (pooled in Upstreams.bufs): the buffer
// and the reader that bounds the body to MaxBody, one allocation for both, reused.
type readBuf struct {
	buf bytes.Buffer
	lr  io.LimitedReader
}

type service struct {
	id   string
	base string
	rt   http.RoundTripper // the request id (and spans) over tr
	tr   *http.Transport
	// next rotates new connections over the service's addresses; recycled is when its idle
	// connections were last closed (unix nanoseconds).
	next     atomic.Uint32
	recycled atomic.Int64
}

// dialer connects to one of the addresses the service's host name resolves to now, taking
// them in turn (sorted, from a rotating start) so that the connections of a busy gateway
// spread evenly over the replicas, and trying the next address when one refuses.
func (u *Upstreams) dialer(s *service) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil || net.ParseIP(host) != nil {
			return d.DialContext(ctx, network, addr)
		}
		addrs, err := u.opt.Resolver.LookupHost(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("resolve %s: no address", host)
		}
		slices.Sort(addrs)
		start := int(s.next.Add(1))
		var first error
		for i := range addrs {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(addrs[(start+i)%len(addrs)], port))
			if err == nil {
				return c, nil
			}
			if first == nil {
				first = err
			}
		}
		return nil, first
	}
}

// recycle closes the service's idle connections when RecycleEvery has passed since the
// last time (one caller wins the swap; the others go on at once).
func (u *Upstreams) recycle(s *service) {
	now := time.Now().UnixNano()
	last := s.recycled.Load()
	if now-last >= int64(u.opt.RecycleEvery) && s.recycled.CompareAndSwap(last, now) {
		s.closeIdle()
	}
}

// New builds the clients. Every service URL must be an absolute http(s) URL.
func New(opt Options) (*Upstreams, error) {
	if opt.Timeouts.Latest <= 0 {
		opt.Timeouts.Latest = DefaultLatestTimeout
	}
	if opt.Timeouts.Readings <= 0 {
		opt.Timeouts.Readings = DefaultReadingsTimeout
	}
	if opt.Timeouts.Health <= 0 {
		opt.Timeouts.Health = DefaultHealthTimeout
	}
	if opt.Retries == 0 {
		opt.Retries = DefaultRetries
	} else if opt.Retries < 0 {
		opt.Retries = 0
	}
	if opt.RetryWaitMin <= 0 {
		opt.RetryWaitMin = DefaultRetryWaitMin
	}
	if opt.RetryWaitMax < opt.RetryWaitMin {
		opt.RetryWaitMax = max(DefaultRetryWaitMax, opt.RetryWaitMin)
	}
	if opt.MaxIdleConnsPerHost <= 0 {
		opt.MaxIdleConnsPerHost = 256
	}
	if opt.MaxBody <= 0 {
		opt.MaxBody = DefaultMaxBody
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.RecycleEvery <= 0 {
		opt.RecycleEvery = DefaultRecycleEvery
	}
	if opt.Resolver == nil {
		opt.Resolver = net.DefaultResolver
	}
	u := &Upstreams{
		services: make(map[string]*service, len(opt.Services)),
		opt:      opt,
		bufs:     sync.Pool{New: func() any { rb := &readBuf{}; rb.buf.Grow(16 << 10); return rb }},
	}
	if opt.InternalToken != "" {
		u.tokenV = []string{opt.InternalToken}
	}
	// The one table of upstream deadlines, by route.
	u.deadlines = [routeCount]time.Duration{
		RouteLatest:    opt.Timeouts.Latest,
		RouteReadings:  opt.Timeouts.Readings,
		RouteAggregate: opt.Timeouts.Readings,
		RouteHealth:    opt.Timeouts.Health,
		RouteMCP:       opt.Timeouts.Readings,
		RouteCatalog:   contract.DefaultClientTimeout,
		RouteStream:    opt.Timeouts.Readings,
	}
	u.byHost = make(map[string]*service, len(opt.Services))
	for id, base := range opt.Services {
		s, err := u.newService(id, base)
		if err != nil {
			return nil, err
		}
		u.services[id] = s
		if pu, err := url.Parse(s.base); err == nil {
			u.byHost[pu.Host] = s
		}
	}
	other, err := u.newService("other", "http://other")
	if err != nil {
		return nil, err
	}
	u.other = other
	return u, nil
}

func (u *Upstreams) newService(id, base string) (*service, error) {
	base = strings.TrimRight(base, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("service %q: URL %q is not http:// or https://", id, base)
	}
	s := &service{id: id, base: base}
	s.recycled.Store(time.Now().UnixNano())
	dial := u.dialer(s)
	tr := &http.Transport{
		Proxy:                 nil, // internal network: never through an environment proxy
		DialContext:           dial,
		MaxIdleConns:          u.opt.MaxIdleConnsPerHost,
		MaxIdleConnsPerHost:   u.opt.MaxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		// The services answer plain JSON on the internal network; asking for gzip would
		// cost both sides CPU for bytes that never leave the machine.
		DisableCompression: true,
		ForceAttemptHTTP2:  false,
	}
	s.tr, s.rt = tr, obs.Transport(tr, u.opt.Tracing)
	return s, nil
}

// checkRetry retries connection errors and 502/503/504 answers of idempotent calls, and
// only while the deadline leaves room for the longest wait plus one useful attempt: a retry
// that cannot finish in time only delays the client's 502/504.
func (u *Upstreams) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if resp != nil && resp.Request != nil && !idempotent(resp.Request.Method) {
		return false, nil
	}
	if dl, ok := ctx.Deadline(); ok && !u.roomToRetry(dl) {
		return false, nil
	}
	if err != nil {
		return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	}
	return retryableStatus(resp.StatusCode), nil
}

// retryableStatus: a gateway or overloaded service in front of the data may answer the
// next attempt.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// roomToRetry reports whether deadline leaves room for the longest wait plus one useful
// attempt.
func (u *Upstreams) roomToRetry(deadline time.Time) bool {
	return time.Until(deadline) >= u.opt.RetryWaitMax+minAttempt
}

// wait sleeps go-retryablehttp's DefaultBackoff before attempt+1 (RetryWaitMin doubled per
// attempt up to RetryWaitMax, or a 503's Retry-After from resp), or until ctx ends.
func (u *Upstreams) wait(ctx context.Context, attempt int, resp *http.Response) error {
	timer := time.NewTimer(retryablehttp.DefaultBackoff(u.opt.RetryWaitMin, u.opt.RetryWaitMax, attempt, resp))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

// Has reports whether service id is configured.
func (u *Upstreams) Has(id string) bool { _, ok := u.services[id]; return ok }

// IDs lists the configured services.
func (u *Upstreams) IDs() []string {
	out := make([]string, 0, len(u.services))
	for id := range u.services {
		out = append(out, id)
	}
	return out
}

// Deadline is the deadline of one call of route, retries included, from the one table.
func (u *Upstreams) Deadline(r Route) time.Duration {
	if r >= 0 && r < routeCount {
		return u.deadlines[r]
	}
	return u.deadlines[RouteHealth]
}

func (u *Upstreams) timeout(r Route) time.Duration { return u.Deadline(r) }

// Get calls GET pathQuery (already escaped, e.g. contract.LatestPath(id)+"?"+query) on the
// service within the route's deadline. A service's answer, any status, is returned as a
// Response; errors are *apierr.Error: 502 upstream_unavailable (not configured, refused,
// reset, 5xx after retries, or a 4xx that is not the JSON error shape) or 504
// upstream_timeout. A caller that went away gets its context's error.
func (u *Upstreams) Get(ctx context.Context, serviceID string, route Route, pathQuery string) (*Response, error) {
	s, ok := u.services[serviceID]
	if !ok {
		return nil, apierr.New(apierr.UpstreamUnavailable, "service %q is not configured on this gateway", serviceID)
	}
	start := time.Now()
	u.recycle(s)
	resp, outcome, err := u.get(ctx, s, route, pathQuery)
	if u.opt.Metrics != nil {
		u.opt.Metrics.ObserveUpstream(serviceID, outcome, time.Since(start))
	}
	return resp, err
}

func (u *Upstreams) get(parent context.Context, s *service, route Route, pathQuery string) (*Response, string, error) {
	timeout := u.timeout(route)
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+pathQuery, nil)
	if err != nil {
		return nil, obs.OutcomeUnavailable, fmt.Errorf("upstream %s: build request: %w", s.id, err)
	}
	// The fixed headers are shared, ready-made values (transports only read them).
	req.Header["Accept"] = acceptJSON
	if u.tokenV != nil {
		req.Header[contract.HeaderInternalToken] = u.tokenV // canonical form already
	}
	if idV := obs.RequestIDValues(parent); idV != nil {
		req.Header[contract.HeaderRequestID] = idV // the incoming request's own value, read only
	}
	resp, err := u.do(ctx, s, req)
	if err != nil {
		if resp != nil {
			_ = resp.Body.Close()
		}
		return u.failure(parent, ctx, s, route, timeout, err)
	}
	defer resp.Body.Close()

	rb := u.bufs.Get().(*readBuf)
	buf := &rb.buf
	buf.Reset()
	defer func() {
		rb.lr.R = nil           // the body is not kept past this call
		if buf.Cap() <= 1<<20 { // keep the pool from holding on to rare huge pages
			u.bufs.Put(rb)
		}
	}()
	rb.lr = io.LimitedReader{R: resp.Body, N: int64(u.opt.MaxBody) + 1}
	n, err := buf.ReadFrom(&rb.lr)
	if err != nil {
		return u.failure(parent, ctx, s, route, timeout, err)
	}
	if n > int64(u.opt.MaxBody) {
		return u.tooLarge(parent, s, route)
	}
	return u.judge(parent, s, route, resp.StatusCode, resp.Header.Get("Content-Type"), buf.Bytes())
}

// judge turns a service's answer into the gateway's. Only what the gateway expects passes
// (docs/security.md "What the gateway accepts from services"):
//
//   - 200 with a JSON body (application/json starting with { or [), or on the readings and
//     aggregate routes one of the answer formats (text/csv, application/x-ndjson,
//     application/geo+json): kept, with a copy of body (which the caller reuses);
//   - a 4xx in the {error, code} shape with a known code whose status matches: passed on
//     re-encoded, so nothing but those two fields (and at most maxUpstreamMessage bytes of
//     message) reaches the client;
//   - 401 or 403: the service refused the gateway itself (a wrong internal token), 502
//     upstream_unavailable;
//   - a 5xx: 502 upstream_unavailable;
//   - anything else (HTML, a redirect, 204, another 2xx, an error without the shape, a JSON
//     type over a body that is not JSON): 502 upstream_bad_response.
//
// The log line of a refused answer has its status, content type and length, never its
// body: provider payload text and service internals stay out of the logs too.
func (u *Upstreams) judge(parent context.Context, s *service, route Route, status int, ct string, body []byte) (*Response, string, error) {
	refuse := func(level slog.Level, msg, code, format string, args ...any) (*Response, string, error) {
		u.opt.Logger.Log(parent, level, msg, "service", s.id, "route", route.String(), "status", status,
			"content_type", clipHeader(ct), "length", len(body))
		return nil, obs.OutcomeServerError, apierr.New(code, format, args...)
	}
	switch {
	case status >= 500:
		return refuse(slog.LevelWarn, "upstream error", apierr.UpstreamUnavailable, "service %q failed to answer (HTTP %d)", s.id, status)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return refuse(slog.LevelError, "upstream refused the gateway (check INTERNAL_TOKEN on both sides)", apierr.UpstreamUnavailable,
			"service %q could not answer this request", s.id)
	case status >= 400:
		e, ok := upstreamError(status, ct, body)
		if !ok {
			// A 404 from a service that lacks the route, an error page: a gateway fault,
			// not the client's.
			return refuse(slog.LevelError, "upstream answered an unexpected error", apierr.UpstreamBadResponse,
				"service %q gave an answer the gateway does not pass on", s.id)
		}
		return NewResponse(status, jsonContentType, e, time.Now()), obs.OutcomeOK, nil
	case status != http.StatusOK:
		return refuse(slog.LevelError, "upstream answered an unexpected status", apierr.UpstreamBadResponse,
			"service %q gave an answer the gateway does not pass on", s.id)
	}
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case err == nil && mt == "application/json" && looksJSON(body):
	case err == nil && (route == RouteReadings || route == RouteAggregate) && formatTypes[mt]:
	default:
		return refuse(slog.LevelError, "upstream answered an unexpected media type", apierr.UpstreamBadResponse,
			"service %q gave an answer the gateway does not pass on", s.id)
	}
	return NewResponse(status, ct, bytes.Clone(body), time.Now()), obs.OutcomeOK, nil
}

// formatTypes are the answer formats a readings or aggregate answer may come in besides
// JSON (docs/api-decisions.md "Wave 2").
var formatTypes = map[string]bool{"text/csv": true, "application/x-ndjson": true, "application/geo+json": true}

const jsonContentType = "application/json; charset=utf-8"

// maxUpstreamMessage bounds the message of a service's error passed on to the client.
const maxUpstreamMessage = 512

// looksJSON is a cheap check that a body declared JSON is a JSON object or array, not an
// HTML page under a JSON content type; the whole body is not parsed on this hot path.
func looksJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// upstreamError re-encodes a service's 4xx answer when it is the {error, code} shape with a
// known code of that status: only the two fields, the message clipped.
func upstreamError(status int, ct string, body []byte) ([]byte, bool) {
	if !isJSONError(ct, body) {
		return nil, false
	}
	var e apierr.Error
	if err := json.Unmarshal(body, &e); err != nil || !apierr.Known(e.Code) || e.Status() != status || e.Message == "" {
		return nil, false
	}
	if len(e.Message) > maxUpstreamMessage {
		e.Message = strings.ToValidUTF8(e.Message[:maxUpstreamMessage], "") + "..."
	}
	b, err := json.Marshal(&e)
	return b, err == nil
}

// clipHeader bounds a header value written to the log.
func clipHeader(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// do sends req on the service's transport, retrying as checkRetry allows after
// retryablehttp's backoff (DefaultBackoff: RetryWaitMin doubled per attempt up to
// RetryWaitMax, or a 503's Retry-After). It is retryablehttp.Client.Do's loop without its
// request wrapper and http.Client underneath, whose request and header copies were a fifth
// of the allocations of an uncached call; the services never redirect, so http.Client's
// redirect handling had nothing to do. When it gives up, the service's idle connections
// are dropped (a failing service's kept-alive connections are likely dead too); a 5xx
// answer left after the last retry is returned for the caller to judge.
func (u *Upstreams) do(ctx context.Context, s *service, req *http.Request) (*http.Response, error) {
	if !idempotent(req.Method) || (req.Body != nil && req.Body != http.NoBody) {
		// Never sent twice: a tool call must not run twice.
		return s.rt.RoundTrip(req)
	}
	for attempt := 0; ; attempt++ {
		resp, err := s.rt.RoundTrip(req)
		retry, checkErr := u.checkRetry(ctx, resp, err)
		if !retry && err == nil && checkErr == nil {
			return resp, nil
		}
		if !retry || attempt >= u.opt.Retries {
			s.closeIdle()
			if checkErr != nil {
				err = checkErr
			}
			return resp, err
		}
		if err == nil {
			drain(resp.Body)
		}
		if err := u.wait(ctx, attempt, resp); err != nil {
			s.closeIdle()
			return nil, err
		}
	}
}

// drain reads what is left of a body that will not be used (up to a bound), so that its
// connection can carry the next attempt.
func drain(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 4096))
	_ = body.Close()
}

func (s *service) closeIdle() {
	s.tr.CloseIdleConnections()
}

// failure maps a transport error: the caller's own cancellation is returned as such (no
// one is listening), the route deadline is 504, everything else 502.
func (u *Upstreams) failure(parent, ctx context.Context, s *service, route Route, timeout time.Duration, err error) (*Response, string, error) {
	if parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded) {
		return canceled(parent, s)
	}
	var ne net.Error
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return u.timedOut(parent, s, route, timeout, err)
	}
	return u.unavailable(parent, s, route, err)
}

// canceled is the caller's own cancellation: no one is listening, nothing to log.
func canceled(parent context.Context, s *service) (*Response, string, error) {
	return nil, obs.OutcomeCanceled, fmt.Errorf("upstream %s: %w", s.id, parent.Err())
}

// timedOut is 504 upstream_timeout: no answer within the route's deadline.
func (u *Upstreams) timedOut(parent context.Context, s *service, route Route, timeout time.Duration, err error) (*Response, string, error) {
	u.opt.Logger.WarnContext(parent, "upstream timeout", "service", s.id, "route", route.String(), "timeout", timeout, "err", err)
	return nil, obs.OutcomeTimeout, apierr.New(apierr.UpstreamTimeout, "service %q did not answer within %s", s.id, timeout)
}

// unavailable is 502 upstream_unavailable: refused, reset, or no answer at all.
func (u *Upstreams) unavailable(parent context.Context, s *service, route Route, err error) (*Response, string, error) {
	u.opt.Logger.WarnContext(parent, "upstream unavailable", "service", s.id, "route", route.String(), "err", err)
	return nil, obs.OutcomeUnavailable, apierr.New(apierr.UpstreamUnavailable, "service %q is unavailable", s.id)
}

// tooLarge is 502 for an answer over MaxBody, which the gateway will not hold.
func (u *Upstreams) tooLarge(parent context.Context, s *service, route Route) (*Response, string, error) {
	u.opt.Logger.ErrorContext(parent, "upstream answer too large", "service", s.id, "route", route.String(), "limit", u.opt.MaxBody)
	return nil, obs.OutcomeServerError, apierr.New(apierr.UpstreamUnavailable, "service %q answered more than %d bytes", s.id, u.opt.MaxBody)
}

// isJSONError reports whether an error answer has the {error, code} shape, which the
// gateway passes through (sensor_not_found, no_readings, invalid_parameter).
func isJSONError(contentType string, body []byte) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return false
	}
	b := bytes.TrimSpace(body)
	return len(b) > 0 && b[0] == '{' && bytes.Contains(b, []byte(`"code"`))
}

// CloseIdleConnections releases the pools, at shutdown.
func (u *Upstreams) CloseIdleConnections() {
	for _, s := range u.services {
		s.closeIdle()
	}
}
