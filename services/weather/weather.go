// Package weather defines the weather service: NOAA NWS station observations (and
// personal weather stations when their adapters are wired), how each is polled live, which
// recorded files are whose, and the service's metadata.
package weather

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/services/adapters/nws"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/runtime/ingest"
	"github.com/sensorgate/sensorgate/services/runtime/mcpserver"
)

// ID is the service id.
const ID = "weather"

// Definition returns the weather service with the given MCP tool registrars.
func Definition(tools ...mcpserver.Registrar) app.Definition {
	return app.Definition{
		ID:              ID,
		Name:            "Weather observations",
		Description:     "Surface weather stations: air temperature, humidity, wind, pressure from the NOAA National Weather Service.",
		Domain:          "weather",
		TemporalPattern: "periodic",
		DefaultPort:     8082,
		Providers:       []ingest.Provider{NWS()},
		Tools:           tools,
	}
}

// NWS is the api.weather.gov provider: /stations/{id}/observations per station (the last
// days of observations, GeoJSON) and /stations?id=... for metadata; routine METARs hourly.
func NWS() ingest.Provider {
	a := nws.Adapter{}
	geo := http.Header{"Accept": {"application/geo+json"}}
	return ingest.Provider{
		Adapter:   a,
		Simulator: a,
		Cadence:   time.Hour,
		Live: ingest.LiveSpec{
			DefaultBaseURL:  "https://api.weather.gov",
			DefaultStations: []string{"KBOS", "KJFK", "KORD", "KSEA", "KDEN", "KFLL"},
			Targets: func(base string, stations []string, _ string) []ingest.Target {
				base = strings.TrimRight(base, "/")
				ids := make([]string, 0, len(stations))
				for _, s := range stations {
					ids = append(ids, nws.CanonicalID(s))
				}
				out := []ingest.Target{{URL: base + "/stations?id=" + url.QueryEscape(strings.Join(ids, ",")), Format: nws.FormatStations, MetadataOnly: true, Header: geo}}
				for _, id := range ids {
					out = append(out, ingest.Target{URL: base + "/stations/" + url.PathEscape(id) + "/observations", Format: nws.FormatObservations, StationID: id, Header: geo})
				}
				return out
			},
		},
		Classify: func(rel string, body []byte) (observation.Payload, bool) {
			t := bytes.TrimSpace(body)
			if len(t) == 0 || t[0] != '{' || !bytes.Contains(t, []byte(`"Feature`)) {
				return observation.Payload{}, false
			}
			switch {
			case bytes.Contains(t, []byte(`"temperature"`)) && bytes.Contains(t, []byte(`"timestamp"`)):
				return observation.Payload{Format: nws.FormatObservations, Body: body}, true
			case bytes.Contains(t, []byte(`"stationIdentifier"`)):
				return observation.Payload{Format: nws.FormatStations, Body: body}, true
			}
			return observation.Payload{}, false
		},
	}
}
