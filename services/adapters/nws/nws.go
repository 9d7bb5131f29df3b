// Package nws reads National Weather Service (api.weather.gov) payloads: observation
// GeoJSON (a single Feature from /stations/{id}/observations/latest, a FeatureCollection
// from /stations/{id}/observations) in the current wmoUnit: and the legacy unit: code
// schemes, and the station metadata FeatureCollection (/gridpoints/.../stations,
// /stations); and it simulates them for synthetic land stations.
package nws

import (
	_ "embed"
	"strings"

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
	ProviderSlug = "noaa-nws"
	FeedSlug     = "nws-observations"
)

// Payload formats.
const (
	// FormatObservations is observation GeoJSON: a Feature or a FeatureCollection.
	FormatObservations = "nws.observations"
	// FormatStations is a station metadata FeatureCollection.
	FormatStations = "nws.stations"
)

// RawFormat is recorded on every observation.
const RawFormat = "nws.observation"

// SensorType of NWS stations (ASOS/AWOS airports and the like).
const SensorType = "weather_station"

// ReportingIntervalS is the routine METAR cadence (specials come in between).
const ReportingIntervalS = 3600

// Adapter declares the NWS adapter: its provider and feed, a parser per payload format,
// and its simulator of synthetic land stations.
func Adapter() observation.Adapter {
	return observation.Declare(catalog, map[string]observation.ParseFunc{
		FormatObservations: observation.BodyParser(ParseObservations),
		FormatStations:     observation.BodyParser(ParseStations),
	}, synth.Simulator{Name: "nws", Stations: simStationList, Window: simulate})
}

// CanonicalID is the station identifier in upper case (ICAO ids like KFLL).
func CanonicalID(id string) string { return strings.ToUpper(strings.TrimSpace(id)) }

func baseStation(id string) contract.Station {
	return contract.Station{
		ExternalID:         id,
		Name:               id,
		SensorType:         SensorType,
		Status:             "active",
		ProviderSlug:       ProviderSlug,
		FeedSlug:           FeedSlug,
		ReportingIntervalS: ReportingIntervalS,
	}
}
