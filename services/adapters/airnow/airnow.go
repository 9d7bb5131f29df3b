// Package airnow reads US EPA AirNow API payloads: monitoring-site data (/aq/data/:
// concentration, raw concentration and AQI per pollutant, -999 for missing) and current
// observations by location (/aq/observation/...: AQI only, with its category); and it
// simulates monitoring-site data for synthetic US sites.
package airnow

import (
	_ "embed"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/adapters/internal/synth"
	"github.com/sensorgate/sensorgate/services/observation"
)

// catalog declares the provider and the feeds this adapter serves (observation.Declare).
//
//go:embed catalog.json
var catalog []byte

// Provider and feed slugs.
const (
	ProviderSlug = "epa-airnow"
	FeedSlug     = "airnow-monitors"
)

// Payload formats.
const (
	FormatData        = "airnow.data"
	FormatObservation = "airnow.observation"
)

// Raw formats recorded on observations.
const (
	RawData        = "airnow.data"
	RawObservation = "airnow.observation"
)

// SensorType of AirNow monitoring sites.
const SensorType = "air_quality_monitor"

// ReportingIntervalS is AirNow's hourly cadence.
const ReportingIntervalS = 3600

// Adapter declares the AirNow adapter: its provider and feed, a parser per payload
// format, and its simulator of synthetic US monitoring sites.
func Adapter() observation.Adapter {
	return observation.Declare(catalog, map[string]observation.ParseFunc{
		FormatData:        observation.BodyParser(ParseData),
		FormatObservation: observation.BodyParser(ParseObservations),
	}, synth.Simulator{Name: "airnow", Stations: simStationList, Window: simulate})
}

// pollutants maps AirNow parameter names to canonical ids and the unit AirNow uses when a
// record names none.
var pollutants = map[string]struct{ param, unit string }{
	"PM2.5": {canon.PM25, "UG/M3"},
	"PM25":  {canon.PM25, "UG/M3"},
	"PM10":  {canon.PM10, "UG/M3"},
	"OZONE": {canon.OzonePPB, "PPB"},
	"O3":    {canon.OzonePPB, "PPB"},
}

// SiteID is the canonical external id of an AirNow site: the 12-digit international AQS
// code (country 840 = US, 124 = Canada, 484 = Mexico, then the 9-digit AQS code). A bare
// 9-digit code, as current observations give for US sites, gets the US prefix. Otherwise the
// code is kept byte for byte (identity is exact: no case folding).
func SiteID(code string) string {
	c := strings.TrimSpace(code)
	if len(c) == 9 && batch.IsDigits(c) {
		return "840" + c
	}
	return c
}
