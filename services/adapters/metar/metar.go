// Package metar reads METAR surface weather reports, as raw text (one report a line, as
// aviationweather.gov's data API serves with format=raw) and as the Aviation Weather
// Center's ADDS data-server result converted to JSON. One decoder of the report text serves
// both, so a value means the same whichever document carried it: the JSON adds the full
// observation time, the position and the elevation that a report does not hold.
package metar

import (
	_ "embed"
	"fmt"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/observation"
)

// catalog declares the provider and the feeds this adapter serves (observation.Declare).
//
//go:embed catalog.json
var catalog []byte

// Provider and feed slugs.
const (
	ProviderSlug = "noaa-awc"
	FeedSlug     = "awc-metars"
)

// Payload formats.
const (
	// FormatText is raw METAR text, one report a line. A report names day, hour and minute
	// only: Payload.Reference gives the year and month (the fetch time, or the date in a
	// recorded file's name).
	FormatText = "metar.text"
	// FormatADDSJSON is an AWC ADDS METAR data-server result as JSON
	// ({"data": {"METAR": [{raw_text, station_id, observation_time, latitude, ...}]}}).
	FormatADDSJSON = "awc.adds.metars.json"
)

// Raw formats recorded on observations.
const (
	RawText   = "metar.text"     // {"format", "line"}
	RawRecord = "awc.adds.metar" // the METAR record object
)

// SensorType of METAR stations.
const SensorType = "weather_station"

// ReportingIntervalS is the routine METAR cadence (SPECI reports come in between).
const ReportingIntervalS = 3600

// Adapter declares the METAR adapter: its provider and feed and a parser per payload
// format (it has no simulator).
func Adapter() observation.Adapter {
	return observation.Declare(catalog, map[string]observation.ParseFunc{
		FormatText:     parseText,
		FormatADDSJSON: observation.BodyParser(ParseADDSJSON),
	}, nil)
}

// parseText reads raw reports, dated by the payload's reference time: a report names its
// day, hour and minute only.
func parseText(p observation.Payload) (observation.Batch, error) {
	if p.Reference.IsZero() {
		return observation.Batch{}, fmt.Errorf("metar: raw reports name no year or month; the payload needs a reference time")
	}
	return ParseText(p.Body, p.Reference)
}

func base(id string) contract.Station {
	return contract.Station{
		ExternalID: id, Name: "METAR " + id, Description: "Airport weather station " + id + " (METAR)",
		SensorType: SensorType, Status: "active", ProviderSlug: ProviderSlug, FeedSlug: FeedSlug,
		ReportingIntervalS: ReportingIntervalS,
	}
}
