// Package coops reads NOAA CO-OPS (Tides & Currents) datagetter JSON for the temperature,
// pressure and humidity products of coastal stations (values as strings, "" for missing,
// range-check flags), recognizes its HTTP-200 error body, and simulates water temperature
// responses for synthetic stations.
package coops

import (
	_ "embed"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/internal/synth"
	"github.com/sensorgate/sensorgate/services/observation"
)

// catalog declares the provider and the feeds this adapter serves (observation.Declare).
//
//go:embed catalog.json
var catalog []byte

// Provider and feed slugs.
const (
	ProviderSlug = "noaa-coops"
	FeedSlug     = "coops-water-temperature"
)

// Products this package reads (the datagetter product= parameter).
const (
	ProductWaterTemperature = "water_temperature"
	ProductAirTemperature   = "air_temperature"
	ProductAirPressure      = "air_pressure"
	ProductHumidity         = "humidity"
)

// Payload formats: "coops.<product>" for responses requested with units=metric, and
// "coops.<product>.english" for units=english. Requests must use time_zone=gmt.
const (
	FormatWaterTemperature = "coops." + ProductWaterTemperature
	FormatAirTemperature   = "coops." + ProductAirTemperature
	FormatAirPressure      = "coops." + ProductAirPressure
	FormatHumidity         = "coops." + ProductHumidity
)

// SensorType of CO-OPS stations (water-level stations with ancillary sensors).
const SensorType = "tide_station"

// ReportingIntervalS is CO-OPS' 6-minute cadence.
const ReportingIntervalS = 360

// product describes one datagetter product.
type product struct {
	param                   string
	metricUnit, englishUnit string
}

var products = map[string]product{
	ProductWaterTemperature: {canon.WaterTemperatureC, "degC", "degF"},
	ProductAirTemperature:   {canon.AirTemperatureC, "degC", "degF"},
	ProductAirPressure:      {canon.AirPressureHPa, "mbar", "mbar"},
	ProductHumidity:         {canon.RelativeHumidityPercent, "percent", "percent"},
}

// Adapter declares the CO-OPS adapter: its provider and feed, a parser per product and
// unit system ("coops.<product>" and "coops.<product>.english"), and its simulator of
// synthetic coastal stations.
func Adapter() observation.Adapter {
	parsers := map[string]observation.ParseFunc{}
	for name := range products {
		for format, units := range map[string]string{"coops." + name: "metric", "coops." + name + ".english": "english"} {
			parsers[format] = func(p observation.Payload) (observation.Batch, error) { return ParseDatagetter(name, units, p.Body) }
		}
	}
	return observation.Declare(catalog, parsers, synth.Simulator{Name: "coops", Stations: simStationList, Window: simulate})
}
