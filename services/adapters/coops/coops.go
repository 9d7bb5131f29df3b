// Package coops reads NOAA CO-OPS (Tides & Currents) datagetter JSON for the temperature,
// pressure and humidity products of coastal stations (values as strings, "" for missing,
// range-check flags), recognizes its HTTP-200 error body, and simulates water temperature
// responses for synthetic stations.
package coops

import (
	"fmt"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/observation"
)

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

// Adapter is the CO-OPS observation.Adapter and observation.Simulator.
type Adapter struct{}

var (
	_ observation.Adapter   = Adapter{}
	_ observation.Simulator = Adapter{}
)

// Provider implements observation.Adapter.
func (Adapter) Provider() contract.Provider {
	return contract.Provider{
		Slug:        ProviderSlug,
		Name:        "NOAA CO-OPS Tides & Currents",
		Description: "Coastal water-level stations of NOAA's Center for Operational Oceanographic Products and Services, with water temperature and meteorological sensors.",
		URL:         "https://tidesandcurrents.noaa.gov/",
		License:     "US Government work, public domain",
	}
}

// Feeds implements observation.Adapter.
func (Adapter) Feeds() []contract.Feed {
	return []contract.Feed{{
		Slug:            FeedSlug,
		Name:            "CO-OPS water temperature",
		Description:     "6-minute water temperature (and air temperature, pressure, humidity where measured) of CO-OPS coastal stations.",
		ProviderSlug:    ProviderSlug,
		Domain:          "ocean",
		TemporalPattern: "periodic",
		FeedType:        "timeseries",
	}}
}

// Formats implements observation.Adapter.
func (Adapter) Formats() []string {
	var out []string
	for _, p := range []string{ProductWaterTemperature, ProductAirTemperature, ProductAirPressure, ProductHumidity} {
		out = append(out, "coops."+p, "coops."+p+".english")
	}
	return out
}

// Parse implements observation.Adapter.
func (Adapter) Parse(p observation.Payload) (observation.Batch, error) {
	rest, ok := strings.CutPrefix(p.Format, "coops.")
	if ok {
		units := "metric"
		if r, eng := strings.CutSuffix(rest, ".english"); eng {
			rest, units = r, "english"
		}
		if _, known := products[rest]; known {
			return ParseDatagetter(rest, units, p.Body)
		}
	}
	return observation.Batch{}, fmt.Errorf("coops: unknown payload format %q (want one of %s)", p.Format, strings.Join(Adapter{}.Formats(), ", "))
}
