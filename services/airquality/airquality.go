// Package airquality defines the air-quality service: OpenAQ and EPA AirNow monitors, how
// each is polled live, which recorded files are whose, and the service's metadata.
package airquality

import (
	"bytes"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
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

// OpenAQ is the OpenAQ provider. Live mode reads API v3, the only public one since v1 and
// v2 were retired: per location (OPENAQ_STATIONS are v3 location ids, "2178" or "v3-2178")
// its sensors' latest values hourly, and the location's metadata. v3 wants a key
// (OPENAQ_API_KEY, sent as X-API-Key). Recorded v1 pages and v3 documents whose location
// is known replay in files mode.
func OpenAQ() ingest.Provider {
	return ingest.Provider{
		Adapter: openaq.Adapter(),
		Cadence: time.Hour,
		Live: ingest.LiveSpec{
			DefaultBaseURL: "https://api.openaq.org",
			// Del Norte, Albuquerque NM (the location of OpenAQ's own v3 examples).
			DefaultStations: []string{"2178"},
			NeedsAPIKey:     true,
			Targets:         openAQTargets,
		},
		Classify: classifyOpenAQ,
	}
}

func openAQTargets(base string, stations []string, apiKey string) []ingest.Target {
	h := http.Header{"Accept": {"application/json"}, "X-API-Key": {apiKey}}
	var out []ingest.Target
	for _, s := range stations {
		loc := url.PathEscape(strings.TrimPrefix(strings.TrimSpace(s), "v3-"))
		station := "v3-" + strings.TrimPrefix(strings.TrimSpace(s), "v3-")
		out = append(out,
			ingest.Target{URL: base + "/v3/locations/" + loc, Format: openaq.FormatV3Locations, Header: h, MetadataOnly: true},
			ingest.Target{URL: base + "/v3/locations/" + loc + "/sensors", Format: openaq.FormatV3Sensors, StationID: station, Header: h},
		)
	}
	return out
}

// v3LocationSensors names a recorded /v3/locations/{id}/sensors document by its location:
// v3 sensors do not name the location they belong to, so only the file name can.
var v3LocationSensors = regexp.MustCompile(`locations_(\d+)_sensors\.json$`)

func classifyOpenAQ(rel string, body []byte) (observation.Payload, bool) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 || t[0] != '{' || !bytes.Contains(t, []byte(`"results"`)) || !bytes.Contains(t, []byte(`"meta"`)) {
		return observation.Payload{}, false
	}
	switch {
	case bytes.Contains(t, []byte(`"measurements":`)) && bytes.Contains(t, []byte(`"lastUpdated"`)):
		return observation.Payload{Format: openaq.FormatLatest, Body: body}, true
	case bytes.Contains(t, []byte(`"date":{"utc"`)) || bytes.Contains(t, []byte(`"date": {`)):
		return observation.Payload{Format: openaq.FormatMeasurements, Body: body}, true
	case bytes.Contains(t, []byte(`"sensors":[`)) && bytes.Contains(t, []byte(`"country":{`)):
		return observation.Payload{Format: openaq.FormatV3Locations, Body: body}, true
	}
	switch {
	case bytes.Contains(t, []byte(`"latest":{`)) && bytes.Contains(t, []byte(`"parameter":{`)):
		// /v3/locations/{id}/sensors: the location is in the file name, or in a sidecar
		// <file>.station that the files source reads (v3 sensors do not name their location).
		p := observation.Payload{Format: openaq.FormatV3Sensors, Body: body}
		if m := v3LocationSensors.FindStringSubmatch(filepath.ToSlash(rel)); m != nil {
			p.StationID = "v3-" + m[1]
		}
		return p, true
	case bytes.Contains(t, []byte(`"period":{`)) && bytes.Contains(t, []byte(`"flagInfo":{`)):
		// /v3/sensors/{id}/measurements names neither sensor nor location: the location
		// comes from the sidecar <file>.station.
		return observation.Payload{Format: openaq.FormatV3Measurements, Body: body}, true
	case bytes.Contains(t, []byte(`"locationsId":`)) && bytes.Contains(t, []byte(`"sensorsId":`)):
		return observation.Payload{Format: openaq.FormatV3ParameterLatest, Path: filepath.ToSlash(rel), Body: body}, true
	}
	return observation.Payload{}, false
}

// AirNow is the EPA AirNow API: current observations by ZIP code (AIRNOW_STATIONS are ZIP
// codes; AIRNOW_API_KEY is required). Its simulator writes AirNow monitor data files.
func AirNow() ingest.Provider {
	return ingest.Provider{
		Adapter: airnow.Adapter(),
		Cadence: time.Hour,
		Live: ingest.LiveSpec{
			DefaultBaseURL:  "https://www.airnowapi.org",
			DefaultStations: []string{"90012", "10001", "60601", "98101", "80202"},
			NeedsAPIKey:     true,
			Targets: func(base string, zips []string, key string) []ingest.Target {
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
