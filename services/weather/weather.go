// Package weather defines the weather service: NOAA NWS station observations and personal
// weather stations (Ambient Weather, Davis WeatherLink; imperial units), how each is polled
// live, which recorded files are whose, and the service's metadata.
package weather

import (
	"bytes"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/services/adapters/ambient"
	"github.com/sensorgate/sensorgate/services/adapters/davis"
	"github.com/sensorgate/sensorgate/services/adapters/metar"
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
		Description:     "Surface weather stations: air temperature, humidity, wind, pressure from the NOAA National Weather Service and personal weather stations.",
		Domain:          "weather",
		TemporalPattern: "periodic",
		DefaultPort:     8082,
		Providers:       []ingest.Provider{NWS(), Ambient(), Davis(), METAR()},
		Tools:           tools,
	}
}

// NWS is the api.weather.gov provider: /stations/{id}/observations per station (the last
// days of observations, GeoJSON) and /stations?id=... for metadata; routine METARs hourly.
func NWS() ingest.Provider {
	geo := http.Header{"Accept": {"application/geo+json"}}
	return ingest.Provider{
		Adapter: nws.Adapter(),
		Cadence: time.Hour,
		Live: ingest.LiveSpec{
			DefaultBaseURL:  "https://api.weather.gov",
			DefaultStations: []string{"KBOS", "KJFK", "KORD", "KSEA", "KDEN", "KFLL"},
			Targets: func(base string, stations []string, _ string) []ingest.Target {
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

// macInName finds a device MAC in a recorded file's name (device data does not name its
// device): 00-0E-C6-20-0B-DA, 00:0e:c6:20:0b:da or 000ec6200bda.
var macInName = regexp.MustCompile(`(?i)([0-9a-f]{2}[:_-]?){5}[0-9a-f]{2}`)

// Ambient is Ambient Weather's REST API: /v1/devices/{mac} per device (the last day of
// 5-minute records) and /v1/devices for metadata. Its API needs two keys, given as
// AMBIENT_WEATHER_API_KEY=<apiKey>:<applicationKey>; stations are device MACs.
func Ambient() ingest.Provider {
	return ingest.Provider{
		Adapter: ambient.Adapter(),
		Cadence: 5 * time.Minute,
		Live: ingest.LiveSpec{
			DefaultBaseURL: "https://rt.ambientweather.net",
			NeedsAPIKey:    true,
			Targets: func(base string, stations []string, key string) []ingest.Target {
				apiKey, appKey, _ := strings.Cut(key, ":")
				auth := url.Values{"apiKey": {apiKey}, "applicationKey": {appKey}}
				out := []ingest.Target{{URL: base + "/v1/devices?" + auth.Encode(), Format: ambient.FormatDevices, MetadataOnly: true}}
				for _, mac := range stations {
					q := url.Values{"apiKey": {apiKey}, "applicationKey": {appKey}, "limit": {"288"}}
					out = append(out, ingest.Target{URL: base + "/v1/devices/" + url.PathEscape(mac) + "?" + q.Encode(),
						Format: ambient.FormatDeviceData, StationID: ambient.CanonicalID(mac)})
				}
				return out
			},
		},
		Classify: func(rel string, body []byte) (observation.Payload, bool) {
			t := bytes.TrimSpace(body)
			switch {
			case len(t) == 0:
				return observation.Payload{}, false
			case bytes.Contains(t, []byte(`"macAddress"`)) && bytes.Contains(t, []byte(`"lastData"`)):
				return observation.Payload{Format: ambient.FormatDevices, Body: body}, true
			case t[0] == '[' && bytes.Contains(t, []byte(`"dateutc"`)) && bytes.Contains(t, []byte(`"tempf"`)):
				// Device data names no device: the MAC comes from the file name, or from a
				// sidecar <file>.station that the files source reads.
				p := observation.Payload{Format: ambient.FormatDeviceData, Body: body}
				if mac := macInName.FindString(path.Base(rel)); mac != "" {
					p.StationID = ambient.CanonicalID(mac)
				}
				return p, true
			}
			return observation.Payload{}, false
		},
	}
}

// Davis is Davis WeatherLink v2 /current/{station-id}. Live polling needs the API key
// (DAVIS_WEATHERLINK_API_KEY=<api-key>:<api-secret>); stations are WeatherLink station
// ids. There is no simulator: the weather service simulates NWS and Ambient stations.
func Davis() ingest.Provider {
	return ingest.Provider{
		Adapter: davis.Adapter(),
		Cadence: 15 * time.Minute,
		Live: ingest.LiveSpec{
			DefaultBaseURL: "https://api.weatherlink.com",
			NeedsAPIKey:    true,
			Targets: func(base string, stations []string, key string) []ingest.Target {
				apiKey, secret, _ := strings.Cut(key, ":")
				var out []ingest.Target
				for _, s := range stations {
					out = append(out, ingest.Target{URL: base + "/v2/current/" + url.PathEscape(s) + "?" + url.Values{"api-key": {apiKey}}.Encode(),
						Format: davis.FormatCurrent, Header: http.Header{"X-Api-Secret": {secret}}})
				}
				return out
			},
		},
		Classify: func(rel string, body []byte) (observation.Payload, bool) {
			t := bytes.TrimSpace(body)
			if len(t) > 0 && t[0] == '{' && bytes.Contains(t, []byte(`"station_id"`)) && bytes.Contains(t, []byte(`"sensors"`)) {
				return observation.Payload{Format: davis.FormatCurrent, Body: body}, true
			}
			return observation.Payload{}, false
		},
	}
}

// dateInName finds the date of a recorded file in its name (..._2018-01-11.txt): raw METAR
// reports carry day, hour and minute only, and the file's date gives year and month.
var dateInName = regexp.MustCompile(`(\d{4})-(\d{2})-(\d{2})`)

// reportLine is the start of a METAR report: a station identifier and a DDHHMMZ time.
var reportLine = regexp.MustCompile(`(?m)^(?:METAR |SPECI )?[A-Z][A-Z0-9]{3} \d{6}Z `)

// METAR is the Aviation Weather Center's data API (aviationweather.gov/api/data/metar):
// the last hours of raw reports of the given stations (ICAO ids), dated by the fetch time.
// Recorded files: raw report text (dated by the date in the file name) and ADDS results
// converted to JSON. There is no simulator: NWS stations are simulated with METAR text.
func METAR() ingest.Provider {
	return ingest.Provider{
		Adapter: metar.Adapter(),
		Cadence: time.Hour,
		Live: ingest.LiveSpec{
			DefaultBaseURL:  "https://aviationweather.gov",
			DefaultStations: []string{"KSEA", "KBFI", "KPAE", "KOLM"},
			Targets: func(base string, stations []string, _ string) []ingest.Target {
				q := url.Values{"ids": {strings.Join(stations, ",")}, "format": {"raw"}, "hours": {"3"}}
				return []ingest.Target{{URL: base + "/api/data/metar?" + q.Encode(), Format: metar.FormatText}}
			},
		},
		Classify: func(rel string, body []byte) (observation.Payload, bool) {
			t := bytes.TrimSpace(body)
			switch {
			case len(t) == 0:
				return observation.Payload{}, false
			case t[0] == '{' && bytes.Contains(t, []byte(`"METAR"`)) && bytes.Contains(t, []byte(`"raw_text"`)):
				return observation.Payload{Format: metar.FormatADDSJSON, Body: body}, true
			case t[0] != '{' && t[0] != '[' && reportLine.Match(t):
				p := observation.Payload{Format: metar.FormatText, Body: body}
				if m := dateInName.FindStringSubmatch(path.Base(rel)); m != nil {
					if d, err := time.Parse("2006-01-02", m[0]); err == nil {
						// The end of the file's day: reports of that day are dated in its month.
						p.Reference = d.Add(24*time.Hour - time.Second)
					}
				}
				return p, true // without a date in the name, the files source dates it by the file's modification time
			}
			return observation.Payload{}, false
		},
	}
}
