// Package fastpath is the gateway's HTTP server. It runs on fasthttp and answers the two
// readings routes (GET /api/v1/sensors/:id/readings and /readings/latest, the traffic the
// gateway exists for) natively; every other request goes to the Gin engine of package api
// through fasthttp's net/http adaptor.
//
// Why: on an uncached readings call net/http's server, the http.Request and header maps it
// builds, and the Gin chain cost about 30 us of CPU per request on a 2-core machine, more
// than half of the gateway's whole cost and twice what nginx spends on the same hop
// (docs/traffic.md, "Speed"). The native path does the same work from the same parts (the
// authenticator, ratelimit.Check, proxy.Handlers.Answer and Reply, obs.HTTPOptions.Observe)
// without them. It takes only plain requests (GET, a path of unreserved characters, no
// tracing) and hands anything unusual (a trailing slash, an escaped or dot segment, HEAD)
// to the engine, so edge cases keep the one implementation they had; a test sends one table
// of requests to a gateway with and without the native path and compares the answers.
package fastpath

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/proxy"
	"github.com/sensorgate/sensorgate/gateway/ratelimit"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// Route templates of the native routes, as the engine names them (metrics, logs).
const (
	RouteReadings = "/api/v1/sensors/:id/readings"
	RouteLatest   = "/api/v1/sensors/:id/readings/latest"
)

// Limits of the server: the timeouts net/http's server had, a smaller header limit.
const (
	ReadTimeout  = 30 * time.Second  // the whole request; MCP bodies are at most 1 MiB
	WriteTimeout = 60 * time.Second  // a proxied page from a slow service, whose own deadline is shorter
	IdleTimeout  = 120 * time.Second // a kept-alive connection between requests
	// MaxHeaderBytes bounds the request line and headers (431 beyond). fasthttp gives each
	// connection a read buffer of this size, so it is kept small: 16 KiB is twice what
	// nginx allows one header line by default, and 10,000 open connections hold 160 MiB.
	MaxHeaderBytes = 16 << 10
	// MaxBodyBytes bounds a request body the server reads at all (413 beyond); the MCP
	// handlers refuse more than 1 MiB themselves, with their own message.
	MaxBodyBytes = 4 << 20
)

// Options are the parts the server is made of.
type Options struct {
	// Engine answers every request the native path does not take (api.NewServer).
	Engine http.Handler
	// Native, when set, answers the readings routes; nil sends them to Engine too.
	Native *Native
	Logger *slog.Logger
}

// Native is what the native readings path needs: the same parts the engine's routes use.
type Native struct {
	Auth *auth.Authenticator
	// Limit counts a request against its key's budget; nil admits everything (as a gateway
	// without a rate-limit middleware does).
	Limit func(ctx context.Context, id auth.Identity) ratelimit.Verdict
	Proxy *proxy.Handlers
	// Observe records each request as obs.Middleware records the engine's.
	Observe obs.HTTPOptions
}

// NewServer returns the gateway's server. Serve it on a listener; ShutdownWithContext
// stops it.
func NewServer(o Options) *fasthttp.Server {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	engine := fasthttpadaptor.NewFastHTTPHandler(o.Engine)
	handler := engine
	if o.Native != nil {
		n := o.Native
		handler = func(c *fasthttp.RequestCtx) {
			if route, ref, rawQuery, ok := match(c); ok {
				n.serve(c, route, ref, rawQuery, log)
				return
			}
			engine(c)
		}
	}
	return &fasthttp.Server{
		Handler:                      handler,
		ErrorHandler:                 requestError,
		ReadTimeout:                  ReadTimeout,
		WriteTimeout:                 WriteTimeout,
		IdleTimeout:                  IdleTimeout,
		ReadBufferSize:               MaxHeaderBytes,
		MaxRequestBodySize:           MaxBodyBytes,
		NoDefaultServerHeader:        true,
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		SecureErrorLogMessage:        true,
		Logger:                       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// match takes a plain GET of a readings route: the :id segment of unreserved characters
// only (RFC 3986: letters, digits, "-._~"; so nothing escaped, no "/" and no dot segment),
// and no trailing slash. Everything else is the engine's, which answers it as before.
func match(c *fasthttp.RequestCtx) (route proxy.Route, ref, rawQuery string, ok bool) {
	if !c.IsGet() {
		return 0, "", "", false
	}
	uri := c.Request.Header.RequestURI()
	path, query, _ := bytes.Cut(uri, []byte{'?'})
	rest, found := bytes.CutPrefix(path, []byte("/api/v1/sensors/"))
	if !found {
		return 0, "", "", false
	}
	id, tail, _ := bytes.Cut(rest, []byte{'/'})
	switch string(tail) {
	case "readings":
		route = proxy.RouteReadings
	case "readings/latest":
		route = proxy.RouteLatest
	default:
		return 0, "", "", false
	}
	if len(id) == 0 || string(id) == "." || string(id) == ".." {
		return 0, "", "", false
	}
	for _, b := range id {
		if !unreserved(b) {
			return 0, "", "", false
		}
	}
	return route, string(id), string(query), true
}

func unreserved(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '.' || b == '_' || b == '~'
}

// serve answers one readings request: request id, key, rate limit, the proxy's answer,
// then the request's metrics and access-log line, as the engine's middleware chain does.
func (n *Native) serve(c *fasthttp.RequestCtx, route proxy.Route, ref, rawQuery string, log *slog.Logger) {
	start := time.Now()
	template := RouteReadings
	if route == proxy.RouteLatest {
		template = RouteLatest
	}
	id := string(c.Request.Header.Peek(obs.HeaderRequestID))
	if !obs.ValidRequestID(id) {
		id = obs.NewRequestID()
	}
	c.Response.Header.Set(obs.HeaderRequestID, id)
	// fasthttp does not tell a handler that its client left; the upstream call is bounded
	// by its route's deadline instead.
	ctx := obs.WithRequestID(context.Background(), id)
	obs.SetRoute(ctx, template)
	if m := n.Observe.Metrics; m != nil {
		m.HTTPInFlight.Inc()
		defer m.HTTPInFlight.Dec()
	}
	defer func() {
		if p := recover(); p != nil {
			// As the engine's recovery does: a 500 internal error, logged, and the server
			// stays up.
			c.Response.Reset()
			c.Response.Header.Set(obs.HeaderRequestID, id)
			fail(ctx, c, fmt.Errorf("handler panicked: %v", p), log, template)
		}
		n.Observe.Observe(ctx, http.MethodGet, template, string(c.Path()), c.Response.StatusCode(), time.Since(start), int64(len(c.Response.Body())))
	}()

	who, err := n.Auth.Authenticate(ctx, string(c.Request.Header.Peek(auth.Header)))
	if err != nil {
		fail(ctx, c, err, log, template)
		return
	}
	obs.SetKeyID(ctx, who.KeyIDText)
	if n.Limit != nil {
		v := n.Limit(ctx, who)
		v.Headers(c.Response.Header.Set)
		if v.Refusal != nil {
			writeError(c, v.Refusal.Status(), v.Refusal)
			return
		}
	}
	resp, err := n.Proxy.Answer(ctx, route, ref, rawQuery)
	if err != nil {
		fail(ctx, c, err, log, template)
		return
	}
	status, body := n.Proxy.Reply(header{&c.Response.Header}, resp, string(c.Request.Header.Peek("If-None-Match")))
	c.SetStatusCode(status)
	// The body belongs to the cached answer, which nothing modifies: no copy.
	c.Response.SetBodyRaw(body)
}

// header sets a proxy answer's headers on a fasthttp response.
type header struct{ h *fasthttp.ResponseHeader }

func (h header) SetHeader(name string, value []string) {
	h.h.Del(name)
	for _, v := range value {
		h.h.Add(name, v)
	}
}

// fail answers err as the engine's error renderer does: its apierr form, internal details
// to the log only.
func fail(ctx context.Context, c *fasthttp.RequestCtx, err error, log *slog.Logger, route string) {
	e := apierr.From(err)
	if e.Code == apierr.Internal {
		log.ErrorContext(ctx, "internal error", "request_id", obs.RequestID(ctx), "route", route, "err", err)
	}
	writeError(c, e.Status(), e)
}

// writeError writes e as {"error", "code"} with status, never to be cached.
func writeError(c *fasthttp.RequestCtx, status int, e *apierr.Error) {
	body, err := json.Marshal(e)
	if err != nil { // a struct of two strings always marshals
		body = []byte(`{"error":"internal error","code":"internal"}`)
	}
	c.Response.Header.Set("Cache-Control", "no-store")
	c.SetContentType("application/json; charset=utf-8")
	c.SetStatusCode(status)
	c.SetBody(body)
}

// requestError answers a request fasthttp could not read, in the API's error shape: 413 for
// a body over MaxBodyBytes, 431 for headers over MaxHeaderBytes, 408 for a client too slow
// to send its request, else 400.
func requestError(c *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		writeError(c, http.StatusRequestEntityTooLarge, &apierr.Error{Code: apierr.PayloadTooLarge,
			Message: fmt.Sprintf("request body over %d bytes", MaxBodyBytes)})
	case errors.As(err, &small):
		writeError(c, http.StatusRequestHeaderFieldsTooLarge, &apierr.Error{Code: apierr.InvalidParameter,
			Message: fmt.Sprintf("request line and headers over %d bytes", MaxHeaderBytes)})
	case errors.As(err, &ne) && ne.Timeout():
		writeError(c, http.StatusRequestTimeout, &apierr.Error{Code: apierr.InvalidParameter,
			Message: "the request was not sent in time"})
	default:
		writeError(c, http.StatusBadRequest, &apierr.Error{Code: apierr.InvalidParameter,
			Message: "malformed HTTP request"})
	}
}
