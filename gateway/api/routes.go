package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/account"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/ginerr"
	"github.com/sensorgate/sensorgate/gateway/openapi"
	"github.com/sensorgate/sensorgate/gateway/web"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// chain is the one middleware chain every request of the gateway goes through, outermost
// first:
//
//  0. securityHeaders: X-Content-Type-Options: nosniff on every answer (headers.go);
//  1. obs.Middleware: request id (the caller's X-Request-Id when valid, else a new one),
//     in-flight gauge, server span, then latency metric and access-log line (and a last
//     line of defence against a panic outside Gin);
//  2. compress: gzip for answers of 1 KiB or more when the client accepts it (never event
//     streams; compress.go), then trimTrailingSlash: /a/b/ is served as /a/b, without a
//     redirect;
//  3. Gin: routeContext (the route template for 1), renderErrors (the one error writer),
//     recoverPanics (a panic becomes a 500 in the error shape), the route's body limit
//     (413 for a larger Content-Length before a byte of the body is read, and before the
//     key check, so no client-sized buffer exists for a caller without a key);
//  4. per tier, in addRoutes: auth.Middleware (x-api-key), the rate limit, then the
//     input check of every parameter (checkInput);
//  5. the handler.
//
// Streaming handlers get the server's http.Flusher through every layer (each wrapper has
// Flush and Unwrap), so http.ResponseController works on c.Writer.
func chain(d Deps, r *gin.Engine) http.Handler {
	limits := bodyLimits{}
	r.Use(routeContext(), ginerr.Render(d.Logger), recoverPanics(d.Logger), limits.middleware())
	addRoutes(r, d, limits)
	return securityHeaders(obs.Middleware(compress(trimTrailingSlash(r)), obs.HTTPOptions{Logger: d.Logger, Metrics: d.Metrics, Tracing: d.Tracing, Quiet: obs.DefaultQuiet()}))
}

// addRoutes lists the whole HTTP surface of the gateway, grouped by auth tier. Add a route
// here, in its tier's section, and its dependencies to Deps.
func addRoutes(r *gin.Engine, d Deps, limits bodyLimits) {
	h := &handlers{d: d}

	// --- Public: no key. Probes for load balancers and orchestrators. ---
	r.GET("/healthz", healthz)
	// What this binary was built from (module version, commit), for operators and bug reports.
	r.GET("/version", func(c *gin.Context) {
		c.Header("Cache-Control", "no-store")
		c.JSON(http.StatusOK, obs.BuildInfo())
	})
	if d.MetricsHandler != nil {
		r.GET(obs.PathMetrics, gin.WrapH(d.MetricsHandler))
	}
	r.GET("/readyz", readyz(d.Logger, append([]Check{{
		Name: "store", Critical: true,
		Probe: func(ctx context.Context) (any, error) { return nil, d.Store.Ping(ctx) },
	}, stoppingCheck(d.Stopping)}, d.Checks...)))

	// --- Public: the OpenAPI document and its reference page (package openapi). ---
	if docs, err := openapi.NewHandler(); err != nil {
		// Cannot happen with the embedded document (its tests load it); the API still serves.
		d.Logger.Error("openapi document unavailable", "err", err)
	} else {
		r.GET(openapi.PathJSON, gin.WrapH(docs))
		r.GET(openapi.PathDocs, gin.WrapH(docs))
		r.GET(openapi.PathAssets+"*file", gin.WrapH(docs))
	}

	// --- Public: the landing page and the explorer with its assets (package web); the
	// explorer asks the person for a key and sends it to /api/v1 itself. ---
	if page, err := web.New(); err != nil {
		d.Logger.Error("explorer unavailable", "err", err)
	} else {
		for _, p := range []string{web.PathRoot, web.PathExplorer, web.PathAssets + "*file"} {
			r.GET(p, gin.WrapH(page))
			r.HEAD(p, gin.WrapH(page))
		}
	}

	// --- Account dashboard (package account): its own session cookie, not x-api-key, and
	// cross-origin protection on every state-changing method. The client address is the
	// one Gin derived (trusted proxies), for the sign-in throttle and the audit log. ---
	if d.Account != nil {
		serveAccount := func(c *gin.Context) {
			d.Account.ServeHTTP(c.Writer, c.Request.WithContext(account.WithClientAddr(c.Request.Context(), c.ClientIP())))
		}
		r.Any(account.PathPage, serveAccount)
		r.Any(account.PathPage+"/*rest", serveAccount)
	}

	// --- OAuth 2.1 (package oauth): discovery documents, client registration, token and
	// revocation for clients; the authorization endpoint (consent) inside the dashboard's
	// sessions. The client address is Gin's, as for the dashboard. ---
	for _, rt := range d.OAuth {
		h := rt.Handler
		r.Handle(rt.Method, rt.Path, func(c *gin.Context) {
			h.ServeHTTP(c.Writer, c.Request.WithContext(account.WithClientAddr(c.Request.Context(), c.ClientIP())))
		})
	}

	// --- Authenticated: every /api/v1 route needs x-api-key (docs/spec.md 5), then counts
	// against the key's rate limit. ---
	v1 := r.Group("/api/v1", auth.Middleware(d.Auth))
	if d.RateLimit != nil {
		v1.Use(d.RateLimit)
	}
	// Counted per key per hour for the account dashboard (an atomic add; package usage).
	if d.Usage != nil {
		v1.Use(d.Usage)
	}
	// Then every query and path parameter is checked (input.go): a NUL, invalid UTF-8, a
	// raw ';' or a repeated parameter is a 400 before any store or upstream call.
	v1.Use(checkInput())

	// Sensors catalog (docs/spec.md 4.2-4.6). The literal paths types, statuses and registry
	// are static routes, which Gin matches before the :id parameter.
	v1.GET("/sensors", h.listSensors(false))
	v1.GET("/sensors/types", h.distinct("sensor types", catalog.Store.SensorTypes))
	v1.GET("/sensors/statuses", h.distinct("sensor statuses", catalog.Store.SensorStatuses))
	v1.GET("/sensors/registry", h.listSensors(true))
	v1.GET("/sensors/:id", h.sensor)

	// Readings (docs/spec.md 4.7, 4.8), passed through from the sensor's service (package readings).
	if d.Proxy.Latest != nil {
		v1.GET("/sensors/:id/readings/latest", d.Proxy.Latest)
		v1.GET("/sensors/:id/readings", d.Proxy.Readings)
	}
	if d.Proxy.Aggregate != nil {
		v1.GET("/sensors/:id/readings/aggregate", d.Proxy.Aggregate)
	}

	// Live data (docs/live.md): the newest reading of every sensor of an area with the one
	// staleness rule, and Server-Sent Event streams of new readings (text/event-stream;
	// opening one counts one request, and each key may hold a few open at once).
	if d.Live.AreaLatest != nil {
		v1.GET("/readings/latest", d.Live.AreaLatest)
	}
	if d.Live.SensorStream != nil {
		v1.GET("/sensors/:id/readings/stream", d.Live.SensorStream)
		v1.GET("/readings/stream", d.Live.AreaStream)
	}

	// Bulk export (docs/api-decisions.md "Wave 2"), streamed from the services (package export).
	if d.Export != nil {
		v1.GET("/readings/export", d.Export)
	}

	// Services (docs/spec.md 4.13).
	v1.GET("/services", h.services)
	v1.GET("/services/:id", h.service)
	// Service health, live from the service or "down" from the gateway's probe (package readings).
	if d.Proxy.ServiceHealth != nil {
		v1.GET("/services/:id/health", d.Proxy.ServiceHealth)
	}
	// Service MCP (docs/spec.md 4.13): forwarded to the service, tool names unchanged.
	if d.MCP.Service != nil {
		v1.POST("/services/:id/mcp", d.MCP.Service)
		limits.set(v1, "/services/:id/mcp", MaxMCPBody)
	}

	// Projects (docs/spec.md 4.14).
	v1.GET("/projects", h.listProjects(false))
	v1.GET("/projects/my", h.listProjects(true))
	v1.GET("/projects/:id", h.project)

	// Alerts (docs/alerts.md, package alerts): rules per key, their events, the webhook
	// delivery log and replay; bodies within DefaultMaxBody.
	if d.Alerts != nil {
		for _, rt := range d.Alerts.Routes() {
			v1.Handle(rt.Method, rt.Path, rt.Handler)
		}
	}

	// OGC API - Features and EDR (docs/ogc.md, package ogc): landing, conformance,
	// collections, the sensors as features, per service EDR queries in CoverageJSON.
	if d.OGC != nil {
		for _, rt := range d.OGC.Routes() {
			v1.Handle(rt.Method, rt.Path, rt.Handler)
		}
	}

	// MCP endpoints (docs/spec.md 4.9-4.12, package mcp). POST only: a GET gets the engine's
	// 405. The literal /sensors/registry/mcp is matched before the :id parameter.
	if d.MCP.Catalog != nil {
		v1.POST("/sensors/registry/mcp", d.MCP.Registry)
		v1.POST("/sensors/:id/mcp", d.MCP.Sensor)
		v1.POST("/projects/:id/mcp", d.MCP.Project)
		v1.POST("/catalog/mcp", d.MCP.Catalog)
		limits.set(v1, "/sensors/registry/mcp", MaxMCPBody)
		limits.set(v1, "/sensors/:id/mcp", MaxMCPBody)
		limits.set(v1, "/projects/:id/mcp", MaxMCPBody)
		limits.set(v1, "/catalog/mcp", MaxMCPBody)
		if d.MCP.Alerts != nil {
			v1.POST("/alerts/mcp", d.MCP.Alerts)
			limits.set(v1, "/alerts/mcp", MaxMCPBody)
		}
	}
}

// stoppingCheck fails once stopping is closed, so that /readyz answers 503 while the
// gateway drains and load balancers send new traffic elsewhere.
func stoppingCheck(stopping <-chan struct{}) Check {
	return Check{Name: "shutdown", Critical: true, Probe: func(context.Context) (any, error) {
		select {
		case <-stopping:
			return nil, errShuttingDown
		default:
			return nil, nil
		}
	}}
}

var errShuttingDown = errors.New("the gateway is shutting down")
