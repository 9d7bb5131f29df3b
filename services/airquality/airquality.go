// Package airquality defines the air-quality service: OpenAQ and EPA AirNow monitors
// (wired as their adapters land), how each is polled live, which recorded files are whose,
// and the service's metadata.
package airquality

import (
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/runtime/ingest"
	"github.com/sensorgate/sensorgate/services/runtime/mcpserver"
)

// ID is the service id.
const ID = "airquality"

// Definition returns the air-quality service with the given MCP tool registrars.
func Definition(tools ...mcpserver.Registrar) app.Definition {
	return app.Definition{
		ID:              ID,
		Name:            "Air quality",
		Description:     "Air-quality monitors: PM2.5, PM10, ozone and the air quality index from OpenAQ and EPA AirNow.",
		Domain:          "air_quality",
		TemporalPattern: "periodic",
		DefaultPort:     8083,
		Providers:       []ingest.Provider{},
		Tools:           tools,
	}
}
