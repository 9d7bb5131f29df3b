package contract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/h1pool"
	"github.com/sensorgate/sensorgate/pkg/obs"
	"github.com/sensorgate/sensorgate/pkg/settings"
)

// Route names a kind of call to a service; each has its own deadline in one table
// (Client.Deadline).
type Route int

// Routes.
const (
	RouteLatest Route = iota
	RouteReadings
	RouteHealth
	// RouteAggregate is a sensor's aggregates.
	RouteAggregate
	// RouteMCP is one JSON-RPC message posted to a service's /mcp.
	RouteMCP
	// RouteCatalog is one page of the catalog sync (GET /v1/meta, /v1/sensors).
	RouteCatalog
	// RouteLatestBatch is the batched latest of area latest (POST /v1/readings/latest).
	RouteLatestBatch
	// RouteEvents is one long poll of a service's log of stored readings; its deadline is
	// the poll's wait plus RouteLatest's.
	RouteEvents
	// RouteStream is a streamed answer (the export): its deadline bounds the wait for the
	// answer's headers, not the stream.
	RouteStream
	routeCount
)

var routeNames = [routeCount]string{"latest", "readings", "health", "aggregate", "mcp", "catalog", "latest_batch", "events", "stream"}

func (r Route) String() string {
	if r >= 0 && r < routeCount {
		return routeNames[r]
	}
	return "route" + strconv.Itoa(int(r))
}

// Timeouts are the configured deadlines of one call, retries included; they fill the one
// table of deadlines by route.
type Timeouts struct {
	Latest time.Duration
	// Readings bounds readings pages, aggregates, MCP messages, the batched latest and the
	// wait for a stream's headers.
	Readings time.Duration
	// Health bounds a health call and each background probe.
	Health time.Duration
	// Catalog bounds one page of the catalog sync.
	Catalog time.Duration
}

// Defaults of Options.
const (
	DefaultLatestTimeout   = 5 * time.Second
	DefaultReadingsTimeout = 10 * time.Second
	DefaultHealthTimeout   = 2 * time.Second
	DefaultCatalogTimeout  = 10 * time.Second
	DefaultRetries         = 2
	DefaultRetryWaitMin    = 20 * time.Millisecond
	DefaultRetryWaitMax    = 200 * time.Millisecond
	// DefaultMaxBody bounds one answer held in memory: 500 readings in raw form and a
	// 1000-station catalog page are well under it.
	DefaultMaxBody = 32 << 20
	// DefaultRecycleEvery: a reconnection per connection every 10 s costs nothing
	// measurable, and a new replica gets its share of the calls within seconds.
	DefaultRecycleEvery = 10 * time.Second
	// minAttempt is the least time worth giving one more attempt.
	minAttempt = 50 * time.Millisecond
)

// Options configure the clients of the services: one transport each, sharing these
// settings.
type Options struct {
	// Token, when set, is sent in HeaderInternalToken.
	Token    string
	Timeouts Timeouts
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
	// HTTP2 speaks HTTP/2 without TLS (prior knowledge) to the services, which accept it
	// beside HTTP/1.1 (pkg/httpserver); off, every call is HTTP/1.1 over a kept-alive pool.
	HTTP2 bool
	// Transport picks what carries the HTTP/1.1 calls: TransportSync (the default) or
	// TransportNet. HTTP/2 and https:// always go through net/http's Transport.
	Transport string
}

// The transports of Options.Transport.
const (
	// TransportSync is pkg/h1pool: the request written and the answer read on the
	// caller's goroutine over a pool of kept-alive connections; about a third less CPU
	// per call than net/http's Transport, whose per-connection read and write loops hand
	// every answer across goroutines (docs/speed.md).
	TransportSync = "sync"
	// TransportNet is net/http's Transport.
	TransportNet = "net"
)

// shared is what the clients of one Options have in common.
type shared struct {
	opt       Options
	deadlines [routeCount]time.Duration
	bufs      sync.Pool // *readBuf
	tokenV    []string  // the internal token header's value, nil without a token
}

func newShared(opt Options) *shared {
	settings.Default(&opt.Timeouts.Latest, DefaultLatestTimeout)
	settings.Default(&opt.Timeouts.Readings, DefaultReadingsTimeout)
	settings.Default(&opt.Timeouts.Health, DefaultHealthTimeout)
	settings.Default(&opt.Timeouts.Catalog, DefaultCatalogTimeout)
	if opt.Retries == 0 {
		opt.Retries = DefaultRetries
	} else if opt.Retries < 0 {
		opt.Retries = 0
	}
	settings.Default(&opt.RetryWaitMin, DefaultRetryWaitMin)
	if opt.RetryWaitMax < opt.RetryWaitMin {
		opt.RetryWaitMax = max(DefaultRetryWaitMax, opt.RetryWaitMin)
	}
	settings.Default(&opt.MaxIdleConnsPerHost, 256)
	settings.Default(&opt.MaxBody, DefaultMaxBody)
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	settings.Default(&opt.RecycleEvery, DefaultRecycleEvery)
	if opt.Transport == "" {
		opt.Transport = TransportSync
	}
	if opt.Resolver == nil {
		opt.Resolver = net.DefaultResolver
	}
	sh := &shared{opt: opt, bufs: sync.Pool{New: func() any { rb := &readBuf{}; rb.buf.Grow(16 << 10); return rb }}}
	if opt.Token != "" {
		sh.tokenV = []string{opt.Token}
	}
	sh.deadlines = [routeCount]time.Duration{
		RouteLatest:      opt.Timeouts.Latest,
		RouteReadings:    opt.Timeouts.Readings,
		RouteAggregate:   opt.Timeouts.Readings,
		RouteHealth:      opt.Timeouts.Health,
		RouteMCP:         opt.Timeouts.Readings,
		RouteCatalog:     opt.Timeouts.Catalog,
		RouteLatestBatch: opt.Timeouts.Readings,
		RouteEvents:      opt.Timeouts.Latest,
		RouteStream:      opt.Timeouts.Readings,
	}
	return sh
}

// NewClients builds one client per service (id -> internal base URL) on one set of
// options: the gateway's every call to a service goes through them.
func NewClients(services map[string]string, opt Options) (map[string]*Client, error) {
	sh := newShared(opt)
	out := make(map[string]*Client, len(services))
	for id, base := range services {
		c, err := sh.newClient(id, base)
		if err != nil {
			return nil, err
		}
		out[id] = c
	}
	return out, nil
}

// NewClient builds the client of one service.
func NewClient(id, baseURL string, opt Options) (*Client, error) {
	return newShared(opt).newClient(id, baseURL)
}

func (sh *shared) newClient(id, base string) (*Client, error) {
	base = strings.TrimRight(base, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("service %q: URL %q is not http:// or https://", id, base)
	}
	c := &Client{id: id, base: base, sh: sh}
	c.recycled.Store(time.Now().UnixNano())
	if sh.opt.Transport == TransportSync && !sh.opt.HTTP2 && strings.HasPrefix(base, "http://") {
		tr := &h1pool.Transport{DialContext: c.dial, MaxIdlePerHost: sh.opt.MaxIdleConnsPerHost, IdleTimeout: 90 * time.Second}
		c.tr, c.rt = tr, obs.Transport(tr, sh.opt.Tracing)
		return c, nil
	}
	tr := &http.Transport{
		Proxy:                 nil, // internal network: never through an environment proxy
		DialContext:           c.dial,
		MaxIdleConns:          sh.opt.MaxIdleConnsPerHost,
		MaxIdleConnsPerHost:   sh.opt.MaxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		// The services answer plain JSON on the internal network; asking for gzip would
		// cost both sides CPU for bytes that never leave the machine.
		DisableCompression: true,
	}
	if sh.opt.HTTP2 && strings.HasPrefix(base, "http://") {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	c.tr, c.rt = tr, obs.Transport(tr, sh.opt.Tracing)
	return c, nil
}

// dial connects to one of the addresses the service's host name resolves to now, taking
// them in turn (sorted, from a rotating start) so that the connections of a busy gateway
// spread evenly over the replicas, and trying the next address when one refuses.
func (c *Client) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || net.ParseIP(host) != nil {
		return d.DialContext(ctx, network, addr)
	}
	addrs, err := c.sh.opt.Resolver.LookupHost(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no address", host)
	}
	slices.Sort(addrs)
	start := int(c.next.Add(1))
	var first error
	for i := range addrs {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(addrs[(start+i)%len(addrs)], port))
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// recycle closes the service's idle connections when RecycleEvery has passed since the
// last time (one caller wins the swap; the others go on at once).
func (c *Client) recycle() {
	now := time.Now().UnixNano()
	last := c.recycled.Load()
	if now-last >= int64(c.sh.opt.RecycleEvery) && c.recycled.CompareAndSwap(last, now) {
		c.tr.CloseIdleConnections()
	}
}

// do sends req on the service's transport. An idempotent call (idem) is retried as
// checkRetry allows after retryablehttp's backoff (DefaultBackoff: RetryWaitMin doubled per
// attempt up to RetryWaitMax, or a 503's Retry-After); any other call is sent once, so a
// tool never runs twice. It is retryablehttp.Client.Do's loop without its request wrapper
// and http.Client underneath, whose request and header copies were a fifth of the
// allocations of an uncached call; the services never redirect, so http.Client's redirect
// handling had nothing to do. When it gives up, the service's idle connections are dropped
// (a failing service's kept-alive connections are likely dead too); a 5xx answer left
// after the last retry is returned for the caller to judge.
func (c *Client) do(ctx context.Context, req *http.Request, idem bool) (*http.Response, error) {
	if !idem {
		resp, err := c.rt.RoundTrip(req)
		if notSent(err) && req.GetBody != nil && ctx.Err() == nil {
			// The connection was refused: the service never saw the call (a replica
			// restarting), so one more attempt cannot run it twice.
			if req.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
			if err := c.wait(ctx, 0, nil); err != nil {
				return nil, err
			}
			resp, err = c.rt.RoundTrip(req)
		}
		return resp, err
	}
	for attempt := 0; ; attempt++ {
		resp, err := c.rt.RoundTrip(req)
		retry, checkErr := c.checkRetry(ctx, resp, err)
		if !retry && err == nil && checkErr == nil {
			return resp, nil
		}
		if !retry || attempt >= c.sh.opt.Retries {
			c.tr.CloseIdleConnections()
			if checkErr != nil {
				err = checkErr
			}
			return resp, err
		}
		if err == nil {
			drain(resp)
		}
		if req.GetBody != nil {
			if req.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		if err := c.wait(ctx, attempt, resp); err != nil {
			c.tr.CloseIdleConnections()
			return nil, err
		}
	}
}

// notSent reports a dial failure: the request never left the gateway.
func notSent(err error) bool {
	var op *net.OpError
	return err != nil && errors.As(err, &op) && op.Op == "dial"
}

// checkRetry retries connection errors and 502/503/504 answers, and only while the
// deadline leaves room for the longest wait plus one useful attempt: a retry that cannot
// finish in time only delays the client's 502/504.
func (c *Client) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < c.sh.opt.RetryWaitMax+minAttempt {
		return false, nil
	}
	if err != nil {
		return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		// A proxy or an overloaded service in front of the data may answer the next one.
		return true, nil
	}
	return false, nil
}

// wait sleeps go-retryablehttp's DefaultBackoff before attempt+1, or until ctx ends.
func (c *Client) wait(ctx context.Context, attempt int, resp *http.Response) error {
	timer := time.NewTimer(retryablehttp.DefaultBackoff(c.sh.opt.RetryWaitMin, c.sh.opt.RetryWaitMax, attempt, resp))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// drain reads what is left of an answer that will not be used (up to a bound), so that
// its connection can carry the next attempt.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
}

// failure maps a transport error: the caller's own cancellation is returned as such (no
// one is listening), the call's deadline is 504, everything else 502.
func (c *Client) failure(parent, ctx context.Context, route Route, timeout time.Duration, err error) (string, error) {
	if parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded) {
		return obs.OutcomeCanceled, fmt.Errorf("service %s: %w", c.id, parent.Err())
	}
	var ne net.Error
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return c.timedOut(parent, route, timeout, err)
	}
	c.sh.opt.Logger.WarnContext(parent, "upstream unavailable", "service", c.id, "route", route.String(), "err", err)
	return obs.OutcomeUnavailable, fmt.Errorf("%w: %w", apierr.New(apierr.UpstreamUnavailable, "service %q is unavailable", c.id), ErrUnreachable)
}

// timedOut is 504 upstream_timeout: no answer within the route's deadline.
func (c *Client) timedOut(parent context.Context, route Route, timeout time.Duration, err error) (string, error) {
	c.sh.opt.Logger.WarnContext(parent, "upstream timeout", "service", c.id, "route", route.String(), "timeout", timeout, "err", err)
	return obs.OutcomeTimeout, fmt.Errorf("%w: %w", apierr.New(apierr.UpstreamTimeout, "service %q did not answer within %s", c.id, timeout), ErrTimeout)
}

func (c *Client) observe(outcome string, start time.Time) {
	if c.sh.opt.Metrics != nil {
		c.sh.opt.Metrics.ObserveUpstream(c.id, outcome, time.Since(start))
	}
}
