// Package ocean defines the ocean service: NOAA NDBC buoys and C-MAN stations (and CO-OPS
// water levels and temperatures when its adapter is wired), how each is polled live, which
// recorded files are whose, and the service's metadata.
package ocean

import (
	"net/http"
	"path"
	"regexp"
	"strings"
	"time"

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
		Description:     "Buoys and coastal stations: waves, wind, pressure, air and water temperature from NOAA NDBC.",
		Domain:          "ocean",
		TemporalPattern: "periodic",
		DefaultPort:     8081,
		Providers:       []ingest.Provider{NDBC()},
		Tools:           tools,
	}
}

// ndbcFile matches NDBC stdmet file names: a 5-character station id, optionally followed
// by a month digit (1-9, a-c) or "h" and a year (historical monthly / annual files).
var ndbcFile = regexp.MustCompile(`^([A-Za-z0-9]{5})(?:[1-9abch]\d{4})?$`)

// NDBC is the NDBC provider: realtime2 text files per station, activestations.xml for
// station metadata; new rows every 10 minutes (buoys) or hour (C-MAN).
func NDBC() ingest.Provider {
	a := ndbc.Adapter{}
	return ingest.Provider{
		Adapter:   a,
		Simulator: a,
		Cadence:   10 * time.Minute,
		Live: ingest.LiveSpec{
			DefaultBaseURL:  "https://www.ndbc.noaa.gov",
			DefaultStations: []string{"44013", "46026", "41008", "42036", "46042", "TPLM2"},
			Targets: func(base string, stations []string, _ string) []ingest.Target {
				base = strings.TrimRight(base, "/")
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
