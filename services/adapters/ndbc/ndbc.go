// Package ndbc reads NOAA National Data Buoy Center payloads: the standard meteorological
// text files (realtime2, historical monthly/annual stdmet, latest_obs.txt) and the
// activestations.xml station list, and simulates them for synthetic buoys.
package ndbc

import (
	_ "embed"
	"strings"

	"github.com/sensorgate/sensorgate/services/adapters/internal/synth"
	"github.com/sensorgate/sensorgate/services/observation"
)

// catalog declares the provider and the feeds this adapter serves (observation.Declare).
//
//go:embed catalog.json
var catalog []byte

// Provider and feed slugs.
const (
	ProviderSlug = "noaa-ndbc"
	FeedSlug     = "ndbc-stdmet"
)

// Payload formats this package reads.
const (
	// FormatStdmet is any standard meteorological text file: realtime2 (data/realtime2/
	// <ID>.txt), historical monthly/annual stdmet, or latest_obs.txt. Columns are found by
	// header name, so all three share one parser. Payload.StationID names the station for
	// files without a STN column.
	FormatStdmet = "ndbc.stdmet"
	// FormatActiveStations is activestations.xml (station metadata only).
	FormatActiveStations = "ndbc.activestations"
)

// Raw formats recorded on observations (Observation.RawFormat).
const (
	RawRealtime2  = "ndbc.realtime2.stdmet"
	RawHistorical = "ndbc.historical.stdmet"
	RawLatestObs  = "ndbc.latest_obs"
)

// Adapter declares the NDBC adapter: its provider and feed, a parser per payload format,
// and its simulator of synthetic buoys and C-MAN stations.
func Adapter() observation.Adapter {
	return observation.Declare(catalog, map[string]observation.ParseFunc{
		FormatStdmet:         observation.StationParser(ParseStdmet),
		FormatActiveStations: observation.BodyParser(ParseActiveStations),
	}, synth.Simulator{Name: "ndbc", Stations: simStationList, Window: simulate})
}

// CanonicalID is NDBC's station id in its canonical spelling: upper case, as in the
// realtime2 file names (activestations.xml spells them lower case).
func CanonicalID(id string) string { return strings.ToUpper(strings.TrimSpace(id)) }
