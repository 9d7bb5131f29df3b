package app

import (
	"fmt"
	"log/slog"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/gateway/api"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/mcp"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// newMCP builds the MCP endpoints: service tools are forwarded through the services'
// clients, the readings tools answer through the REST readings path (answers), private
// projects are visible to their owner's keys, and latest_in_area answers through area
// (the handler of GET /api/v1/readings/latest); tool calls are counted and timed on reg.
func newMCP(st catalog.Store, clients map[string]*contract.Client, answers mcp.Readings, area mcp.AreaLatest, reg prometheus.Registerer, log *slog.Logger) (api.MCPHandlers, error) {
	h, err := mcp.New(mcp.Config{
		Store:      st,
		Clients:    clients,
		Readings:   answers,
		AreaLatest: area,
		Registerer: reg,
		Logger:     log,
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
