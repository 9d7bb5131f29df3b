// Package ndbc reads NOAA National Data Buoy Center payloads: the standard meteorological
// text files (realtime2, historical monthly/annual stdmet, latest_obs.txt) and the
// activestations.xml station list, and simulates them for synthetic buoys.
package ndbc

import (
	"fmt"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/observation"
)

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

// Adapter is the NDBC observation.Adapter and observation.Simulator.
type Adapter struct{}

var (
	_ observation.Adapter   = Adapter{}
	_ observation.Simulator = Adapter{}
)

// Provider implements observation.Adapter.
func (Adapter) Provider() contract.Provider {
	return contract.Provider{
		Slug:        ProviderSlug,
		Name:        "NOAA National Data Buoy Center",
		Description: "Moored buoys and coastal (C-MAN) stations: wind, waves, pressure, air and water temperature.",
		URL:         "https://www.ndbc.noaa.gov/",
		License:     "US Government work, public domain",
	}
}

// Feeds implements observation.Adapter.
func (Adapter) Feeds() []contract.Feed {
	return []contract.Feed{{
		Slug:            FeedSlug,
		Name:            "NDBC standard meteorological data",
		Description:     "Realtime2 standard meteorological observations of NDBC buoys and C-MAN stations (10-minute or hourly).",
		ProviderSlug:    ProviderSlug,
		Domain:          "ocean",
		TemporalPattern: "periodic",
		FeedType:        "timeseries",
	}}
}

// Formats implements observation.Adapter.
func (Adapter) Formats() []string { return []string{FormatStdmet, FormatActiveStations} }

// Parse implements observation.Adapter.
func (Adapter) Parse(p observation.Payload) (observation.Batch, error) {
	switch p.Format {
	case FormatStdmet:
		return ParseStdmet(p.StationID, p.Body)
	case FormatActiveStations:
		return ParseActiveStations(p.Body)
	default:
		return observation.Batch{}, fmt.Errorf("ndbc: unknown payload format %q (want one of %s)", p.Format, strings.Join(Adapter{}.Formats(), ", "))
	}
}

// CanonicalID is NDBC's station id in its canonical spelling: upper case, as in the
// realtime2 file names (activestations.xml spells them lower case).
func CanonicalID(id string) string { return strings.ToUpper(strings.TrimSpace(id)) }
