// Package canon holds the one table of canonical parameters (docs/spec.md 2.4) and the unit
// conversions into them, so that every adapter of every service normalizes the same way.
package canon

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Canonical parameter ids.
const (
	AirTemperatureC         = "air_temperature_c"
	WaterTemperatureC       = "water_temperature_c"
	PM25                    = "pm2_5_ug_per_m3"
	PM10                    = "pm10_ug_per_m3"
	OzonePPB                = "ozone_ppb"
	AQI                     = "aqi"
	WindSpeedMS             = "wind_speed_ms"
	WindDirectionDeg        = "wind_direction_deg"
	AirPressureHPa          = "air_pressure_hpa"
	RelativeHumidityPercent = "relative_humidity_percent"
	WaveHeightM             = "wave_height_m"
)

// Canonical units.
const (
	Celsius       = "celsius"
	UgPerM3       = "µg/m³"
	PPB           = "ppb"
	Dimensionless = "dimensionless"
	MetersPerSec  = "m/s"
	Degrees       = "degrees"
	HPa           = "hPa"
	Percent       = "percent"
	Meters        = "m"
)

// Parameter describes one canonical parameter: its unit, its meaning, and the physically
// possible range outside which a value is rejected rather than stored.
type Parameter struct {
	ID      string  `json:"id"`
	Unit    string  `json:"unit"`
	Meaning string  `json:"meaning"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
}

var table = []Parameter{
	{AirTemperatureC, Celsius, "Air temperature", -90, 60},
	{WaterTemperatureC, Celsius, "Water temperature", -3, 45},
	{PM25, UgPerM3, "PM2.5 concentration", 0, 2000},
	{PM10, UgPerM3, "PM10 concentration", 0, 5000},
	{OzonePPB, PPB, "Ozone", 0, 1000},
	{AQI, Dimensionless, "Air quality index", 0, 999},
	{WindSpeedMS, MetersPerSec, "Wind speed", 0, 120},
	{WindDirectionDeg, Degrees, "Wind direction", 0, 360},
	{AirPressureHPa, HPa, "Atmospheric pressure", 850, 1090},
	{RelativeHumidityPercent, Percent, "Relative humidity", 0, 100},
	{WaveHeightM, Meters, "Significant wave height", 0, 30},
}

var byID = func() map[string]Parameter {
	m := make(map[string]Parameter, len(table))
	for _, p := range table {
		m[p.ID] = p
	}
	return m
}()

// Parameters returns the canonical table, ordered by id.
func Parameters() []Parameter {
	out := append([]Parameter(nil), table...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Lookup returns the canonical parameter with the given id.
func Lookup(id string) (Parameter, bool) {
	p, ok := byID[id]
	return p, ok
}

// IsParameter reports whether id is a canonical parameter id.
func IsParameter(id string) bool { _, ok := byID[id]; return ok }

// Measurement is one canonical value with the source's own value and unit kept beside it,
// so that every conversion can be traced back.
type Measurement struct {
	Parameter     string  `json:"parameter"`
	Value         float64 `json:"value"`
	Unit          string  `json:"unit"`
	UnitOriginal  string  `json:"unit_original"`
	ValueOriginal float64 `json:"value_original"`
}

// Errors returned by Normalize; callers count rejections by these reasons.
var (
	ErrUnknownParameter = errors.New("unknown canonical parameter")
	ErrUnknownUnit      = errors.New("unit cannot be converted to the canonical unit")
	ErrNotFinite        = errors.New("value is not a finite number")
	ErrOutOfRange       = errors.New("value is physically impossible")
)

// Reason maps a Normalize error to a short, stable label for counters and logs.
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrUnknownParameter):
		return "unknown_parameter"
	case errors.Is(err, ErrUnknownUnit):
		return "unknown_unit"
	case errors.Is(err, ErrNotFinite):
		return "not_finite"
	case errors.Is(err, ErrOutOfRange):
		return "out_of_range"
	default:
		return "invalid"
	}
}

// Normalize converts value, reported by a source in unit, to the canonical unit of
// parameter, and rejects values that cannot be physically true. The result keeps the
// source's value and unit verbatim.
func Normalize(parameter string, value float64, unit string) (Measurement, error) {
	p, ok := byID[parameter]
	if !ok {
		return Measurement{}, fmt.Errorf("%w: %q", ErrUnknownParameter, parameter)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return Measurement{}, fmt.Errorf("%s: %w", parameter, ErrNotFinite)
	}
	v, err := convert(p, value, unit)
	if err != nil {
		return Measurement{}, err
	}
	v = round(v, 4)
	// Directions of exactly 360 are north; keep them but fold into [0, 360].
	if v < p.Min || v > p.Max {
		return Measurement{}, fmt.Errorf("%s = %g %s: %w (allowed %g..%g %s)", parameter, value, unit, ErrOutOfRange, p.Min, p.Max, p.Unit)
	}
	return Measurement{Parameter: parameter, Value: v, Unit: p.Unit, UnitOriginal: unit, ValueOriginal: value}, nil
}

// unitKey reduces the many spellings of a unit (NWS "wmoUnit:degC", NDBC "degC",
// AirNow "UG/M3", OpenAQ "µg/m³") to one key.
func unitKey(unit string) string {
	u := strings.TrimSpace(unit)
	if i := strings.LastIndexByte(u, ':'); i >= 0 {
		u = u[i+1:]
	}
	u = strings.ToLower(u)
	return unitSpelling.Replace(u)
}

// unitSpelling is built once: a Replacer is safe for concurrent use and never changes, and
// building one per call cost more than the rest of a text adapter's parse.
var unitSpelling = strings.NewReplacer("μ", "u", "µ", "u", "³", "3", " ", "", "°", "deg")

var unitAliases = map[string]string{
	"degc": "c", "c": "c", "celsius": "c", "degcelsius": "c",
	"degf": "f", "f": "f", "fahrenheit": "f",
	"k": "k", "kelvin": "k",
	"ug/m3": "ug/m3", "ugm-3": "ug/m3", "ug_m-3": "ug/m3", "microgramspercubicmeter": "ug/m3",
	"mg/m3": "mg/m3",
	"ppb":   "ppb", "ppm": "ppm",
	"m/s": "m/s", "m_s-1": "m/s", "mps": "m/s", "ms-1": "m/s",
	"km/h": "km/h", "km_h-1": "km/h", "kph": "km/h", "kmh": "km/h",
	"mph": "mph", "mi/h": "mph",
	"kt": "kt", "kts": "kt", "knot": "kt", "knots": "kt",
	"degt": "deg", "deg": "deg", "degree": "deg", "degrees": "deg", "degree_(angle)": "deg", "degree(angle)": "deg",
	"hpa": "hpa", "mbar": "hpa", "mb": "hpa", "millibar": "hpa",
	"pa": "pa", "kpa": "kpa",
	"inhg": "inhg", "in": "inhg",
	"percent": "percent", "%": "percent",
	"m": "m", "meter": "m", "meters": "m", "ft": "ft", "feet": "ft",
	"aqi": "aqi", "dimensionless": "aqi", "": "aqi", "index": "aqi",
}

// ozone at 25 °C and 1 atm: 1 ppb = 1.9957 µg/m³ (EPA convention, MW 48.00).
const ozoneUgPerPPB = 1.9957

func convert(p Parameter, v float64, unit string) (float64, error) {
	u, ok := unitAliases[unitKey(unit)]
	if !ok {
		return 0, fmt.Errorf("%s: %w: %q to %s", p.ID, ErrUnknownUnit, unit, p.Unit)
	}
	bad := func() (float64, error) {
		return 0, fmt.Errorf("%s: %w: %q to %s", p.ID, ErrUnknownUnit, unit, p.Unit)
	}
	switch p.Unit {
	case Celsius:
		switch u {
		case "c":
			return v, nil
		case "f":
			return (v - 32) * 5 / 9, nil
		case "k":
			return v - 273.15, nil
		}
	case UgPerM3:
		switch u {
		case "ug/m3":
			return v, nil
		case "mg/m3":
			return v * 1000, nil
		}
	case PPB:
		switch u {
		case "ppb":
			return v, nil
		case "ppm":
			return v * 1000, nil
		case "ug/m3":
			return v / ozoneUgPerPPB, nil
		}
	case Dimensionless:
		if u == "aqi" {
			return v, nil
		}
	case MetersPerSec:
		switch u {
		case "m/s":
			return v, nil
		case "km/h":
			return v / 3.6, nil
		case "mph":
			return v * 0.44704, nil
		case "kt":
			return v * 1852.0 / 3600.0, nil
		}
	case Degrees:
		if u == "deg" {
			return v, nil
		}
	case HPa:
		switch u {
		case "hpa":
			return v, nil
		case "pa":
			return v / 100, nil
		case "kpa":
			return v * 10, nil
		case "inhg":
			return v * 33.8638866667, nil
		}
	case Percent:
		if u == "percent" {
			return v, nil
		}
	case Meters:
		switch u {
		case "m":
			return v, nil
		case "ft":
			return v * 0.3048, nil
		}
	}
	return bad()
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
