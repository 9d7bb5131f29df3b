package api

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/openapi"
	"github.com/sensorgate/sensorgate/gateway/web"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// addRoutes lists the whole HTTP surface of the gateway, grouped by auth tier. Add a route
// here, in its tier's section, and its dependencies to Deps.
func addRoutes(r *gin.Engine, d Deps) {
	h := &handlers{d: d}

	// --- Public: no key. Probes for load balancers and orchestrators. ---
	r.GET("/healthz", healthz)
	if d.MetricsHandler != nil {
		r.GET(obs.PathMetrics, gin.WrapH(d.MetricsHandler))
	}
	r.GET("/readyz", readyz(append([]Check{{
		Name: "store", Critical: true,
		Probe: func(ctx context.Context) (any, error) { return nil, d.Store.Ping(ctx) },
	}}, d.Checks...)))

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

	// --- Authenticated: every /api/v1 route needs x-api-key (docs/spec.md 5), then counts
	// against the key's rate limit. ---
	v1 := r.Group("/api/v1", auth.Middleware(d.Auth))
	if d.RateLimit != nil {
		v1.Use(d.RateLimit)
	}

	// Sensors catalog (docs/spec.md 4.2-4.6). The literal paths types, statuses and registry
	// are static routes, which Gin matches before the :id parameter.
	v1.GET("/sensors", h.listSensors(false))
	v1.GET("/sensors/types", h.sensorTypes)
	v1.GET("/sensors/statuses", h.sensorStatuses)
	v1.GET("/sensors/registry", h.listSensors(true))
	v1.GET("/sensors/:id", h.sensor)

	// Readings (docs/spec.md 4.7, 4.8), passed through from the sensor's service (package proxy).
	if d.Proxy.Latest != nil {
		v1.GET("/sensors/:id/readings/latest", d.Proxy.Latest)
		v1.GET("/sensors/:id/readings", d.Proxy.Readings)
	}

	// Services (docs/spec.md 4.13).
	v1.GET("/services", h.services)
	v1.GET("/services/:id", h.service)
	// Service health, live from the service or "down" from the gateway's probe (package proxy).
	if d.Proxy.ServiceHealth != nil {
		v1.GET("/services/:id/health", d.Proxy.ServiceHealth)
	}
	// Service MCP (docs/spec.md 4.13): forwarded to the service, tool names unchanged.
	if d.MCP.Service != nil {
		v1.POST("/services/:id/mcp", d.MCP.Service)
	}

	// Projects (docs/spec.md 4.14).
	v1.GET("/projects", h.listProjects(false))
	v1.GET("/projects/my", h.listProjects(true))
	v1.GET("/projects/:id", h.project)

	// MCP endpoints (docs/spec.md 4.9-4.12, package mcp). POST only: a GET gets the engine's
	// 405. The literal /sensors/registry/mcp is matched before the :id parameter.
	if d.MCP.Catalog != nil {
		v1.POST("/sensors/registry/mcp", d.MCP.Registry)
		v1.POST("/sensors/:id/mcp", d.MCP.Sensor)
		v1.POST("/projects/:id/mcp", d.MCP.Project)
		v1.POST("/catalog/mcp", d.MCP.Catalog)
	}
}
