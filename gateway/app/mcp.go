package app

import (
	"fmt"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/api"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/mcp"
)

// newMCP builds the MCP endpoints: service tools are forwarded through the services'
// clients, the readings tools answer through the REST readings path (answers), private
// projects are visible to their owner's keys, and latest_in_area answers through area
// (the handler of GET /api/v1/readings/latest); tool calls are counted and timed on reg.
func newMCP(cfg mcp.Config) (api.MCPHandlers, error) {
	cfg.Viewer = func(c *gin.Context) (uuid.UUID, bool) {
		id, ok := auth.FromGin(c)
		return id.OwnerID, ok
	}
	h, err := mcp.New(cfg)
	if err != nil {
		return api.MCPHandlers{}, fmt.Errorf("mcp: %w", err)
	}
	return api.MCPHandlers{
		Service: h.ServiceMCP(), Sensor: h.SensorMCP(), Project: h.ProjectMCP(),
		Registry: h.RegistryMCP(), Catalog: h.CatalogMCP(), Alerts: h.AlertsMCP(),
	}, nil
}
