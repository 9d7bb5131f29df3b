// Package airquality defines the air-quality service: OpenAQ and EPA AirNow monitors, how
// each is polled live, which recorded files are whose, and the service's metadata.
package airquality

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/services/adapters/airnow"
	"github.com/sensorgate/sensorgate/services/adapters/openaq"
	"github.com/sensorgate/sensorgate/services/observation"
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
		Providers:       []ingest.Provider{OpenAQ(), AirNow()},
		Tools:           tools,
	}
}

// OpenAQ is the OpenAQ provider in its v1 payload shapes (/v1/latest, /v1/measurements),
// which the adapter reads. OpenAQ retired v1 from its public API, so live mode needs
// OPENAQ_BASE_URL pointing at a v1-compatible endpoint (a mirror or archive); the stations
// are location names (OPENAQ_STATIONS), and OPENAQ_API_KEY is sent as X-API-Key when set.
func OpenAQ() ingest.Provider {
	a := openaq.Adapter{}
	return ingest.Provider{
		Adapter:   a,
		Simulator: a,
		Cadence:   time.Hour,
		Live: ingest.LiveSpec{
			DefaultBaseURL: "https://api.openaq.org",
			Targets: func(base string, stations []string, apiKey string) []ingest.Target {
				base = strings.TrimRight(base, "/")
				h := http.Header{"Accept": {"application/json"}}
				if apiKey != "" {
					h.Set("X-API-Key", apiKey)
				}
				if len(stations) == 0 {
					return []ingest.Target{{URL: base + "/v1/latest?limit=100", Format: openaq.FormatLatest, Header: h}}
				}
				var out []ingest.Target
				for _, s := range stations {
					out = append(out, ingest.Target{URL: base + "/v1/measurements?limit=100&location=" + url.QueryEscape(s), Format: openaq.FormatMeasurements, Header: h})
				}
				return out
			},
		},
		Classify: func(rel string, body []byte) (observation.Payload, bool) {
			t := bytes.TrimSpace(body)
			if len(t) == 0 || t[0] != '{' || !bytes.Contains(t, []byte(`"results"`)) || !bytes.Contains(t, []byte(`"meta"`)) {
				return observation.Payload{}, false
			}
			switch {
			case bytes.Contains(t, []byte(`"measurements":`)) && bytes.Contains(t, []byte(`"lastUpdated"`)):
				return observation.Payload{Format: openaq.FormatLatest, Body: body}, true
			case bytes.Contains(t, []byte(`"date":{"utc"`)) || bytes.Contains(t, []byte(`"date": {`)):
				return observation.Payload{Format: openaq.FormatMeasurements, Body: body}, true
			}
			return observation.Payload{}, false
		},
	}
}

// AirNow is the EPA AirNow API: current observations by ZIP code (AIRNOW_STATIONS are ZIP
// codes; AIRNOW_API_KEY is required). Its simulator writes AirNow monitor data files.
func AirNow() ingest.Provider {
	a := airnow.Adapter{}
	return ingest.Provider{
		Adapter:   a,
		Simulator: a,
		Cadence:   time.Hour,
		Live: ingest.LiveSpec{
			DefaultBaseURL:  "https://www.airnowapi.org",
			DefaultStations: []string{"90012", "10001", "60601", "98101", "80202"},
			NeedsAPIKey:     true,
			Targets: func(base string, zips []string, key string) []ingest.Target {
				base = strings.TrimRight(base, "/")
				var out []ingest.Target
				for _, z := range zips {
					q := url.Values{"format": {"application/json"}, "zipCode": {z}, "distance": {"25"}, "API_KEY": {key}}
					out = append(out, ingest.Target{URL: base + "/aq/observation/zipCode/current/?" + q.Encode(), Format: airnow.FormatObservation})
				}
				return out
			},
		},
		Classify: func(rel string, body []byte) (observation.Payload, bool) {
			t := bytes.TrimSpace(body)
			if len(t) == 0 || t[0] != '[' {
				return observation.Payload{}, false
			}
			switch {
			case bytes.Contains(t, []byte(`"dateObserved"`)) && bytes.Contains(t, []byte(`"parameterName"`)):
				return observation.Payload{Format: airnow.FormatObservation, Body: body}, true
			case bytes.Contains(t, []byte(`"Parameter"`)) && bytes.Contains(t, []byte(`"UTC"`)):
				return observation.Payload{Format: airnow.FormatData, Body: body}, true
			}
			return observation.Payload{}, false
		},
	}
}
