// Package aqi computes the US EPA Air Quality Index from pollutant concentrations, with the
// PM2.5 breakpoints revised in 2024, and names each AQI category with its health message,
// for sources that report concentrations but no AQI and for tools that explain an AQI.
package aqi

import (
	"errors"
	"fmt"
	"math"
)

// Category is one band of the AQI scale.
type Category struct {
	// Name is EPA's category name, e.g. "Unhealthy for Sensitive Groups".
	Name string `json:"name"`
	// Low and High are the AQI values the band spans.
	Low  int `json:"low"`
	High int `json:"high"`
	// Color is EPA's colour for the band.
	Color string `json:"color"`
	// HealthMessage is EPA's statement of who is affected.
	HealthMessage string `json:"health_message"`
	// Advice is EPA's cautionary statement for PM and ozone.
	Advice string `json:"advice"`
}

// categories is EPA's table (Technical Assistance Document for the Reporting of Daily Air
// Quality, 2024), in ascending order.
var categories = [...]Category{
	{"Good", 0, 50, "green",
		"Air quality is satisfactory, and air pollution poses little or no risk.",
		"None."},
	{"Moderate", 51, 100, "yellow",
		"Air quality is acceptable. However, there may be a risk for some people, particularly those who are unusually sensitive to air pollution.",
		"Unusually sensitive people should consider reducing prolonged or heavy exertion."},
	{"Unhealthy for Sensitive Groups", 101, 150, "orange",
		"Members of sensitive groups may experience health effects. The general public is less likely to be affected.",
		"People with heart or lung disease, older adults, children, and people of lower socioeconomic status should reduce prolonged or heavy exertion."},
	{"Unhealthy", 151, 200, "red",
		"Some members of the general public may experience health effects; members of sensitive groups may experience more serious health effects.",
		"Sensitive groups should avoid prolonged or heavy exertion; everyone else should reduce prolonged or heavy exertion."},
	{"Very Unhealthy", 201, 300, "purple",
		"Health alert: The risk of health effects is increased for everyone.",
		"Sensitive groups should avoid all physical activity outdoors; everyone else should avoid prolonged or heavy exertion."},
	{"Hazardous", 301, 500, "maroon",
		"Health warning of emergency conditions: everyone is more likely to be affected.",
		"Everyone should avoid all physical activity outdoors."},
}

// Categories returns the AQI categories in ascending order.
func Categories() []Category { return append([]Category(nil), categories[:]...) }

// ErrInvalid marks an AQI or concentration that cannot be rated.
var ErrInvalid = errors.New("aqi: invalid value")

// CategoryOf returns the category of an AQI value. Values above 500 are "beyond the AQI"
// and are rated Hazardous.
func CategoryOf(index int) (Category, error) {
	if index < 0 {
		return Category{}, fmt.Errorf("%w: AQI %d is negative", ErrInvalid, index)
	}
	for _, c := range categories {
		if index <= c.High {
			return c, nil
		}
	}
	return categories[len(categories)-1], nil
}

// band is a concentration range [low, high] of a pollutant. EPA's breakpoint tables have
// one row per category, in the same order, and a row's AQI range is its category's: so a
// pollutant's table lists the concentrations only, and its length is the categories'.
type band struct{ low, high float64 }

// pm25 are the 2024 PM2.5 (24-hour, µg/m³) breakpoints.
var pm25 = [len(categories)]band{
	{0.0, 9.0},
	{9.1, 35.4},
	{35.5, 55.4},
	{55.5, 125.4},
	{125.5, 225.4},
	{225.5, 325.4},
}

// FromPM25 returns the AQI of a PM2.5 concentration in µg/m³, truncated to 0.1 µg/m³ as
// EPA prescribes. Concentrations above the top breakpoint (325.4) are beyond the AQI and
// give 500.
func FromPM25(ugm3 float64) (int, error) {
	return compute("PM2.5", ugm3, 10, &pm25)
}

func compute(name string, c, scale float64, table *[len(categories)]band) (int, error) {
	if math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
		return 0, fmt.Errorf("%w: %s concentration %v", ErrInvalid, name, c)
	}
	// Truncate, with a small epsilon so 35.4 stored as 35.39999... stays 35.4.
	t := math.Floor(c*scale+1e-9) / scale
	for k, bp := range table {
		if t <= bp.high {
			if t < bp.low { // cannot happen after truncation; guard the gap anyway
				t = bp.low
			}
			cat := &categories[k]
			v := float64(cat.High-cat.Low)/(bp.high-bp.low)*(t-bp.low) + float64(cat.Low)
			return int(math.Round(v)), nil
		}
	}
	return categories[len(categories)-1].High, nil
}
