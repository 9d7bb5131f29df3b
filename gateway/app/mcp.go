package app

import (
	"fmt"
	"log/slog"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/api"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/config"
	"github.com/sensorgate/sensorgate/gateway/mcp"
	"github.com/sensorgate/sensorgate/gateway/proxy"
)

// newMCP builds the MCP endpoints: services are reached at their configured URLs with the
// internal token over the one upstream client, within its MCP and readings deadlines, and
// private projects are visible to their owner's keys. latest_in_area answers through area
// (the handler of GET /api/v1/readings/latest).
func newMCP(cfg config.Config, st catalog.Store, up *proxy.Upstreams, area mcp.AreaLatest, log *slog.Logger) (api.MCPHandlers, error) {
	urls := make(map[string]string, len(cfg.Services))
	for _, s := range cfg.Services {
		urls[s.ID] = s.URL
	}
	h, err := mcp.New(mcp.Config{
		Store:           st,
		InternalToken:   cfg.InternalToken,
		UpstreamTimeout: cfg.Proxy.Timeout,
		// The one upstream client (request ids and spans come with it); a POST is sent
		// once by it, and the forwarder's own single retry of a refused connection stays.
		Forwarder: mcp.NewHTTPForwarder(mcp.HTTPForwarderConfig{Client: up.Client(0), InternalToken: cfg.InternalToken,
			Timeout: up.Deadline(proxy.RouteMCP)}),
		Readings: mcp.NewHTTPReadings(mcp.HTTPReadingsConfig{Client: up.Client(0), InternalToken: cfg.InternalToken,
			Timeout: up.Deadline(proxy.RouteReadings)}),
		ServiceURLs: urls,
		AreaLatest:  area,
		Logger:      log,
		Viewer: func(c *gin.Context) (uuid.UUID, bool) {
			id, ok := auth.FromGin(c)
			return id.OwnerID, ok
		},
	})
	if err != nil {
		return api.MCPHandlers{}, fmt.Errorf("mcp: %w", err)
	}
	return api.MCPHandlers{
		Service: h.ServiceMCP(), Sensor: h.SensorMCP(), Project: h.ProjectMCP(),
		Registry: h.RegistryMCP(), Catalog: h.CatalogMCP(),
	}, nil
}
