// Package ndbc reads NOAA National Data Buoy Center payloads: the standard meteorological
// text files (realtime2, historical monthly/annual stdmet, latest_obs.txt) and the
// activestations.xml station list, and simulates them for synthetic buoys.
package ndbc

import (
	"strings"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/internal/synth"
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

// Adapter declares the NDBC adapter: its provider and feed, a parser per payload format,
// and its simulator of synthetic buoys and C-MAN stations.
func Adapter() observation.Adapter {
	return observation.Adapter{
		Name: "ndbc",
		Provider: contract.Provider{
			Slug:        ProviderSlug,
			Name:        "NOAA National Data Buoy Center",
			Description: "Moored buoys and coastal (C-MAN) stations: wind, waves, pressure, air and water temperature.",
			URL:         "https://www.ndbc.noaa.gov/",
			License:     "US Government work, public domain",
		},
		Feeds: []contract.Feed{{
			Slug:            FeedSlug,
			Name:            "NDBC standard meteorological data",
			Description:     "Realtime2 standard meteorological observations of NDBC buoys and C-MAN stations (10-minute or hourly).",
			ProviderSlug:    ProviderSlug,
			Domain:          "ocean",
			TemporalPattern: "periodic",
			FeedType:        "timeseries",
		}},
		Parsers: map[string]observation.ParseFunc{
			FormatStdmet:         observation.StationParser(ParseStdmet),
			FormatActiveStations: observation.BodyParser(ParseActiveStations),
		},
		Simulator: synth.Simulator{Name: "ndbc", Stations: simStationList, Window: simulate},
	}
}

// CanonicalID is NDBC's station id in its canonical spelling: upper case, as in the
// realtime2 file names (activestations.xml spells them lower case).
func CanonicalID(id string) string { return strings.ToUpper(strings.TrimSpace(id)) }
