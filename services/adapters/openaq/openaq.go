// Package openaq reads OpenAQ API v1 payloads (/v1/latest and /v1/measurements): PM2.5,
// PM10 and ozone become canonical values (ppm and µg/m³ ozone converted to ppb), an AQI is
// computed from PM2.5 where the source has none, and -99 sentinels, negative values and
// parameters without a canonical id are counted rejections. It also simulates
// /v1/measurements pages for synthetic city monitors.
package openaq

import (
	_ "embed"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/internal/synth"
	"github.com/sensorgate/sensorgate/services/observation"
)

// catalog declares the provider and the feeds this adapter serves (observation.Declare).
//
//go:embed catalog.json
var catalog []byte

// Provider and feed slugs.
const (
	ProviderSlug = "openaq"
	FeedSlug     = "openaq-measurements"
)

// Payload formats.
const (
	FormatLatest       = "openaq.v1.latest"
	FormatMeasurements = "openaq.v1.measurements"
	FormatLocations    = "openaq.v1.locations"
	// API v3 (the live API since v1 and v2 were retired). Sensors and measurements do not
	// name their location, so Payload.StationID must be its V3StationID.
	FormatV3Locations    = "openaq.v3.locations"
	FormatV3Sensors      = "openaq.v3.sensors"      // /v3/locations/{id}/sensors (latest values)
	FormatV3Measurements = "openaq.v3.measurements" // /v3/sensors/{id}/measurements
	// FormatV3ParameterLatest is /v3/parameters/{id}/latest: the latest value of one
	// parameter at many locations; the parameter is named by Payload.Path only.
	FormatV3ParameterLatest = "openaq.v3.parameter_latest"
)

// SensorType of OpenAQ locations.
const SensorType = "air_quality_monitor"

// ReportingIntervalS is the hourly averaging period most OpenAQ sources report.
const ReportingIntervalS = 3600

// Adapter declares the OpenAQ adapter: its provider and feed, a parser per payload format
// (API v1 and v3), and its simulator of synthetic city monitors.
func Adapter() observation.Adapter {
	return observation.Declare(catalog, map[string]observation.ParseFunc{
		FormatLatest:         observation.BodyParser(ParseLatest),
		FormatMeasurements:   observation.BodyParser(ParseMeasurements),
		FormatLocations:      observation.BodyParser(ParseLocations),
		FormatV3Locations:    observation.BodyParser(ParseV3Locations),
		FormatV3Sensors:      observation.StationParser(ParseV3Sensors),
		FormatV3Measurements: observation.StationParser(ParseV3Measurements),
		FormatV3ParameterLatest: func(p observation.Payload) (observation.Batch, error) {
			return ParseV3ParameterLatest(p.Path, p.Body)
		},
	}, synth.Simulator{Name: "openaq", Stations: simStationList, Window: simulate})
}

// parameters maps OpenAQ parameter names to canonical ids; the others (no2, so2, co, bc,
// ...) have no canonical id and are skipped with a counted reason.
var parameters = map[string]string{
	"pm25": canon.PM25,
	"pm10": canon.PM10,
	"o3":   canon.OzonePPB,
}

// StationID is the canonical external id of an OpenAQ v1 location: its country code and
// its name ("IN:Velachery Res. Area, Chennai - CPCB"), since v1 names locations but gives
// them no id and names repeat across countries. Whitespace is collapsed, characters that
// cannot appear in an id path segment (/ \ ? # % and controls) become "-", and the id is cut
// to contract.MaxExternalIDLen bytes.
func StationID(country, location string) string {
	var b strings.Builder
	c := strings.ToUpper(strings.TrimSpace(country))
	if c != "" {
		b.WriteString(c)
		b.WriteByte(':')
	}
	space := false
	for _, r := range strings.TrimSpace(location) {
		switch {
		case r == utf8.RuneError:
			r = '-'
		case unicode.IsSpace(r):
			space = true
			continue
		case strings.ContainsRune(`/\?#%`, r) || unicode.IsControl(r):
			r = '-'
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		if b.Len()+utf8.RuneLen(r) > contract.MaxExternalIDLen {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
