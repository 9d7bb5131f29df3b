// Package api is the gateway's public HTTP surface: the Gin engine, its middleware (the one
// error renderer, panic recovery; request ids, access log and metrics come from pkg/obs),
// the liveness and readiness probes, and the catalog handlers. routes.go lists every route.
package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/alerts"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/etag"
	"github.com/sensorgate/sensorgate/gateway/ginerr"
	"github.com/sensorgate/sensorgate/gateway/oauth"
	"github.com/sensorgate/sensorgate/gateway/ogc"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/obs"
	"github.com/sensorgate/sensorgate/pkg/settings"
)

// DefaultQueryTimeout bounds one catalog query, so a stuck database gives an error, not a
// hung request.
const DefaultQueryTimeout = catalog.QueryTimeout

// Deps are the server's dependencies. Engineers adding routes add their fields here (a
// rate-limit middleware, a proxy, MCP handlers) and wire them in routes.go.
type Deps struct {
	Store catalog.Store
	// Resolver is the one sensor resolver of every face (nil: one over Store).
	Resolver *catalog.Resolver
	Auth     *auth.Authenticator
	// Logger receives the access log and internal errors (default: discard).
	Logger *slog.Logger
	// Metrics and Tracing, when set, record every request (obs.Middleware).
	Metrics *obs.Metrics
	Tracing *obs.Tracing
	// MetricsHandler, when set, serves /metrics (no key).
	MetricsHandler http.Handler
	// Checks are the readiness probes beyond the store's, which is always the first.
	Checks []Check
	// QueryTimeout bounds each catalog query (default DefaultQueryTimeout).
	QueryTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time

	// RateLimit, when set, runs after authentication on every /api/v1 route.
	RateLimit gin.HandlerFunc

	// Proxy, when set, answers the readings and service health routes (package readings).
	Proxy ProxyHandlers

	// Export, when set, answers GET /readings/export (package export).
	Export gin.HandlerFunc

	// MCP, when set, answers the MCP endpoints (package mcp).
	MCP MCPHandlers

	// Stopping is closed when the gateway begins to shut down: /readyz answers 503 from
	// then on, and long-lived answers (event streams, exports) watch it to end with a final
	// message instead of being cut off when the grace period ends. nil: never.
	Stopping <-chan struct{}

	// Live, when set, answers area latest and the streams (packages latest and stream).
	Live LiveHandlers

	// Account, when set, serves the account dashboard under /account (package account);
	// Usage, when set, counts every authenticated /api/v1 request per key (package usage).
	Account http.Handler
	// OAuth, when set, is the authorization server's surface (package oauth): discovery,
	// registration, authorize, token, revocation.
	OAuth []oauth.Route
	Usage gin.HandlerFunc
	// Alerts, when set, answers the /alerts routes (package alerts).
	Alerts *alerts.Handlers
	// OGC, when set, answers /ogc: OGC API - Features and EDR (package ogc, docs/ogc.md).
	OGC *ogc.Handlers
}

// NewServer returns the gateway's HTTP handler.
func NewServer(d Deps) http.Handler {
	d = withDefaults(d)
	return chain(d, engine(d))
}

// Templates lists the route templates d wires (Gin's form, /api/v1/sensors/:id): the only
// values of the route label of the request metrics besides obs.UnmatchedRoute.
func Templates(d Deps) []string {
	d = withDefaults(d)
	r := engine(d)
	addRoutes(r, d, bodyLimits{})
	out := make([]string, 0, len(r.Routes()))
	for _, ri := range r.Routes() {
		out = append(out, ri.Path)
	}
	return out
}

func withDefaults(d Deps) Deps {
	gin.SetMode(gin.ReleaseMode) // no debug route listing or warnings on stdout
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	settings.Default(&d.QueryTimeout, DefaultQueryTimeout)
	if d.Resolver == nil && d.Store != nil {
		d.Resolver = catalog.NewResolver(d.Store, 0)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return d
}

// engine is the Gin router with the gateway's settings, before any route.
func engine(d Deps) *gin.Engine {
	r := gin.New()
	r.HandleMethodNotAllowed = true
	// No redirects: trimTrailingSlash serves a trailing slash in place, and a fixed-up
	// path would turn a typo into a 301 or 307 that clients follow silently.
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.ContextWithFallback = true
	// The gateway does not trust forwarding headers for the client address unless a
	// deployment says so; logs show the peer.
	_ = r.SetTrustedProxies(nil)
	r.NoRoute(func(c *gin.Context) {
		fail(c, apierr.New(apierr.NotFound, "no route %s %s", c.Request.Method, sensorquery.Clip(c.Request.URL.Path)))
	})
	r.NoMethod(func(c *gin.Context) {
		fail(c, apierr.New(apierr.MethodNotAllowed, "method %s not allowed on %s; allowed: %s",
			c.Request.Method, sensorquery.Clip(c.Request.URL.Path), c.Writer.Header().Get("Allow")))
	})
	return r
}

// trimTrailingSlash serves /a/b/ as /a/b: the same resource, without a redirect that clients
// would follow silently (and that would re-send a POST body).
func trimTrailingSlash(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
			r2 := *r
			u := *r.URL
			u.Path = strings.TrimRight(p, "/")
			if u.Path == "" {
				u.Path = "/"
			}
			u.RawPath = ""
			r2.URL = &u
			r = &r2
		}
		next.ServeHTTP(w, r)
	})
}

// ProxyHandlers are the routes answered by the backing services through the gateway.
type ProxyHandlers struct {
	Latest, Readings, Aggregate, ServiceHealth gin.HandlerFunc
}

// LiveHandlers are the live-data routes (docs/live.md): area latest and the two
// Server-Sent Event streams.
type LiveHandlers struct {
	AreaLatest, SensorStream, AreaStream gin.HandlerFunc
}

// MCPHandlers are the MCP endpoints (docs/spec.md 4.9-4.12): one JSON-RPC message per POST.
type MCPHandlers struct {
	Service, Sensor, Project, Registry, Catalog gin.HandlerFunc
	// Alerts is the alert rules' endpoint (nil without alerts).
	Alerts gin.HandlerFunc
}

// fail records err for the error renderer and stops the chain.
func fail(c *gin.Context, err error) { ginerr.Fail(c, err) }

// routeContext records the matched route template for the access log, metrics and spans
// of obs.Middleware, which cannot see into Gin's router.
func routeContext() gin.HandlerFunc {
	return func(c *gin.Context) {
		obs.SetRoute(c.Request.Context(), c.FullPath())
		c.Next()
	}
}

// recoverPanics turns a panic into a 500 internal error (logged with its stack) instead of a
// dropped connection.
func recoverPanics(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
				panic(v)
			}
			log.ErrorContext(c.Request.Context(), "panic", "request_id", obs.RequestID(c.Request.Context()),
				"route", c.FullPath(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			_ = c.Error(apierr.New(apierr.Internal, "internal error"))
			c.Abort()
		}()
		c.Next()
	}
}

// cacheControl of catalog answers: clients may keep them but must revalidate (with
// If-None-Match) before reuse, so a sync or a revocation is seen at once.
const cacheControl = "private, no-cache"

// writeJSON answers a GET with v as JSON, an ETag, and 304 when the caller's If-None-Match
// already names this answer.
func writeJSON(c *gin.Context, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		fail(c, fmt.Errorf("encode response: %w", err))
		return
	}
	sum := sha256.Sum256(body)
	tag := `"` + hex.EncodeToString(sum[:12]) + `"`
	c.Header("ETag", tag)
	c.Header("Cache-Control", cacheControl)
	if etag.Match(c.GetHeader("If-None-Match"), tag) {
		c.Status(http.StatusNotModified)
		c.Writer.WriteHeaderNow()
		return
	}
	// The length up front, or net/http sends an answer over 2 KiB chunked.
	c.Header("Content-Length", strconv.Itoa(len(body)))
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
}

// queryCtx bounds a catalog query.
func (h *handlers) queryCtx(c *gin.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request.Context(), h.d.QueryTimeout)
}

// storeErr maps what the store returned (catalog.StoreError).
func storeErr(what string, err error) error { return catalog.StoreError(what, err) }
