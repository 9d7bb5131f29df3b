// Package ocean defines the ocean service: NOAA NDBC buoys and C-MAN stations and NOAA
// CO-OPS tide stations, how each is polled live, which recorded files are whose, and the
// service's metadata.
package ocean

import (
	"bytes"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/services/adapters/coops"
	"github.com/sensorgate/sensorgate/services/adapters/ndbc"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/runtime/ingest"
	"github.com/sensorgate/sensorgate/services/runtime/mcpserver"
)

// ID is the service id.
const ID = "ocean"

// Definition returns the ocean service with the given MCP tool registrars.
func Definition(tools ...mcpserver.Registrar) app.Definition {
	return app.Definition{
		ID:              ID,
		Name:            "Ocean observations",
		Description:     "Buoys and coastal stations: waves, wind, pressure, air and water temperature from NOAA NDBC and NOAA CO-OPS.",
		Domain:          "ocean",
		TemporalPattern: "periodic",
		DefaultPort:     8081,
		Providers:       []ingest.Provider{NDBC(), COOPS()},
		Tools:           tools,
	}
}

// ndbcFile matches NDBC stdmet file names: a 5-character station id, optionally followed
// by a month digit (1-9, a-c) or "h" and a year (historical monthly / annual files).
var ndbcFile = regexp.MustCompile(`^([A-Za-z0-9]{5})(?:[1-9abch]\d{4})?$`)

// NDBC is the NDBC provider: realtime2 text files per station, activestations.xml for
// station metadata; new rows every 10 minutes (buoys) or hour (C-MAN).
func NDBC() ingest.Provider {
	return ingest.Provider{
		Adapter: ndbc.Adapter(),
		Cadence: 10 * time.Minute,
		Live: ingest.LiveSpec{
			DefaultBaseURL:  "https://www.ndbc.noaa.gov",
			DefaultStations: []string{"44013", "46026", "41008", "42036", "46042", "TPLM2"},
			Targets: func(base string, stations []string, _ string) []ingest.Target {
				out := []ingest.Target{{URL: base + "/activestations.xml", Format: ndbc.FormatActiveStations, MetadataOnly: true, Header: http.Header{}}}
				for _, s := range stations {
					id := ndbc.CanonicalID(s)
					out = append(out, ingest.Target{URL: base + "/data/realtime2/" + id + ".txt", Format: ndbc.FormatStdmet, StationID: id})
				}
				return out
			},
		},
		Classify: func(rel string, body []byte) (observation.Payload, bool) {
			head := strings.TrimSpace(string(body[:min(len(body), 512)]))
			base := path.Base(strings.ReplaceAll(rel, "\\", "/"))
			name := strings.TrimSuffix(base, path.Ext(base))
			switch {
			case strings.HasPrefix(head, "<?xml") && strings.Contains(head, "<stations"):
				return observation.Payload{Format: ndbc.FormatActiveStations, Body: body}, true
			case strings.HasPrefix(head, "#STN"):
				return observation.Payload{Format: ndbc.FormatStdmet, Body: body}, true
			case strings.HasPrefix(head, "#YY") || strings.HasPrefix(head, "YY"):
				m := ndbcFile.FindStringSubmatch(name)
				if m == nil {
					return observation.Payload{}, false
				}
				return observation.Payload{Format: ndbc.FormatStdmet, StationID: ndbc.CanonicalID(m[1]), Body: body}, true
			}
			return observation.Payload{}, false
		},
	}
}

// coopsProducts are the datagetter products polled live, in the order their names are
// looked for in recorded file names.
var coopsProducts = []struct{ product, format string }{
	{coops.ProductWaterTemperature, coops.FormatWaterTemperature},
	{coops.ProductAirTemperature, coops.FormatAirTemperature},
	{coops.ProductAirPressure, coops.FormatAirPressure},
	{coops.ProductHumidity, coops.FormatHumidity},
}

// COOPS is NOAA CO-OPS (Tides & Currents): the datagetter JSON of each product per station
// (last 24 hours, metric, GMT); new records every 6 minutes.
func COOPS() ingest.Provider {
	return ingest.Provider{
		Adapter: coops.Adapter(),
		Cadence: 6 * time.Minute,
		Live: ingest.LiveSpec{
			DefaultBaseURL:  "https://api.tidesandcurrents.noaa.gov",
			DefaultStations: []string{"8723970", "8454000", "8518750", "9414290", "8724580", "8775237"},
			Targets: func(base string, stations []string, _ string) []ingest.Target {
				var out []ingest.Target
				for _, s := range stations {
					for _, p := range coopsProducts {
						q := url.Values{"product": {p.product}, "station": {s}, "range": {"24"}, "units": {"metric"},
							"time_zone": {"gmt"}, "format": {"json"}, "application": {"sensorgate"}}
						out = append(out, ingest.Target{URL: base + "/api/prod/datagetter?" + q.Encode(), Format: p.format})
					}
				}
				return out
			},
		},
		Classify: func(rel string, body []byte) (observation.Payload, bool) {
			t := bytes.TrimSpace(body)
			if len(t) == 0 || t[0] != '{' {
				return observation.Payload{}, false
			}
			isData := bytes.Contains(t, []byte(`"metadata"`)) && bytes.Contains(t, []byte(`"data"`))
			isError := bytes.Contains(t, []byte(`"error"`)) && bytes.Contains(t, []byte(`"message"`)) && !bytes.Contains(t, []byte(`"results"`))
			name := strings.ToLower(path.Base(strings.ReplaceAll(rel, "\\", "/")))
			if !isData && !(isError && strings.Contains(name, "datagetter")) {
				return observation.Payload{}, false
			}
			format := coops.FormatWaterTemperature
			for _, p := range coopsProducts {
				if strings.Contains(name, p.product) {
					format = p.format
					break
				}
			}
			if strings.Contains(name, "english") {
				format += ".english"
			}
			return observation.Payload{Format: format, Body: body}, true
		},
	}
}
