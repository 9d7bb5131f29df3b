// Package canon holds the one table of canonical parameters (docs/spec.md 2.4) and the one
// table of named unit conversion rules into them, so that every adapter of every service
// normalizes the same way and a served value can name the rule and formula that made it.
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
	DewPointC               = "dew_point_c"
	PM25                    = "pm2_5_ug_per_m3"
	PM10                    = "pm10_ug_per_m3"
	OzonePPB                = "ozone_ppb"
	AQI                     = "aqi"
	WindSpeedMS             = "wind_speed_ms"
	WindDirectionDeg        = "wind_direction_deg"
	WindGustMS              = "wind_gust_ms"
	WindSpeedAvg2MinMS      = "wind_speed_avg_2min_ms"
	WindDirectionAvg2MinDeg = "wind_direction_avg_2min_deg"
	AirPressureHPa          = "air_pressure_hpa"
	PressureTendencyHPa     = "pressure_tendency_hpa"
	RelativeHumidityPercent = "relative_humidity_percent"
	VisibilityM             = "visibility_m"
	WaveHeightM             = "wave_height_m"
	WavePeriodDominantS     = "wave_period_dominant_s"
	WavePeriodAverageS      = "wave_period_average_s"
	WaveDirectionDeg        = "wave_direction_deg"
	WaterLevelM             = "water_level_m"
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
	Seconds       = "s"
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

// table is the parameters registry. The gateway's data_types filter, the OpenAPI
// ParameterID enum and the MCP tools' parameter lists are all checked against it, so a
// parameter added here must be added to gateway/openapi/openapi.yaml as well (a test there
// compares the two).
var table = []Parameter{
	{AirTemperatureC, Celsius, "Air temperature", -90, 60},
	{WaterTemperatureC, Celsius, "Water temperature", -3, 45},
	{DewPointC, Celsius, "Dew point temperature", -90, 40},
	{PM25, UgPerM3, "PM2.5 concentration", 0, 2000},
	{PM10, UgPerM3, "PM10 concentration", 0, 5000},
	{OzonePPB, PPB, "Ozone", 0, 1000},
	{AQI, Dimensionless, "Air quality index", 0, 999},
	{WindSpeedMS, MetersPerSec, "Wind speed (the source's current value: NDBC 8- or 2-minute mean, METAR 2-minute mean, a station's last sample)", 0, 120},
	{WindDirectionDeg, Degrees, "Wind direction, from which the wind blows, degrees true", 0, 360},
	{WindGustMS, MetersPerSec, "Peak wind gust of the reporting period", 0, 150},
	{WindSpeedAvg2MinMS, MetersPerSec, "Wind speed averaged over the last 2 minutes (personal stations that also report the last sample)", 0, 120},
	{WindDirectionAvg2MinDeg, Degrees, "Wind direction averaged (scalar) over the last 2 minutes", 0, 360},
	{AirPressureHPa, HPa, "Atmospheric pressure reduced to sea level", 850, 1090},
	{PressureTendencyHPa, HPa, "Pressure tendency: change over the last 3 hours", -50, 50},
	{RelativeHumidityPercent, Percent, "Relative humidity", 0, 100},
	{VisibilityM, Meters, "Horizontal visibility", 0, 200000},
	{WaveHeightM, Meters, "Significant wave height", 0, 30},
	{WavePeriodDominantS, Seconds, "Dominant wave period (period of the most energetic waves)", 0, 40},
	{WavePeriodAverageS, Seconds, "Average wave period of all waves", 0, 40},
	{WaveDirectionDeg, Degrees, "Direction from which the dominant-period waves come, degrees true", 0, 360},
	{WaterLevelM, Meters, "Water level (tide) relative to the station's datum (NDBC: mean lower low water)", -30, 30},
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
// so that every conversion can be traced back (Lineage names the rule).
type Measurement struct {
	Parameter     string  `json:"parameter"`
	Value         float64 `json:"value"`
	Unit          string  `json:"unit"`
	UnitOriginal  string  `json:"unit_original"`
	ValueOriginal float64 `json:"value_original"`
	// SourceField is the source's field or column the value came from (NDBC "WSPD",
	// Ambient "tempf"). It is not stored with the reading (the stored JSON has the five
	// fields above); canon.SourceField gives it back by raw format for lineage, and the
	// adapters' tests check the two agree.
	SourceField string `json:"-"`
	// QC is the value's quality flag, set by the provider's adapter (provider marks) and
	// the ingest's QARTOD tests; stored and served with the value.
	QC *QC `json:"qc,omitempty"`
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
// parameter with the rule of the conversion table, and rejects values that cannot be
// physically true. The result keeps the source's value and unit verbatim.
func Normalize(parameter string, value float64, unit string) (Measurement, error) {
	p, ok := byID[parameter]
	if !ok {
		return Measurement{}, fmt.Errorf("%w: %q", ErrUnknownParameter, parameter)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return Measurement{}, fmt.Errorf("%s: %w", parameter, ErrNotFinite)
	}
	r, ok := ruleFor(p, unit)
	if !ok {
		return Measurement{}, fmt.Errorf("%s: %w: %q to %s", p.ID, ErrUnknownUnit, unit, p.Unit)
	}
	v := round(r.apply(value), 4)
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
	"km": "km", "nmi": "nmi", "mi": "mi", "sm": "mi", "statutemile": "mi", "statutemiles": "mi",
	"s": "s", "sec": "s", "second": "s", "seconds": "s",
	"aqi": "aqi", "dimensionless": "aqi", "": "aqi", "index": "aqi",
}

// Rule is one named conversion from a source unit into a canonical unit. Formula is the
// arithmetic in x (the source value) that apply computes; a test evaluates every Formula
// with an expression engine and checks it gives apply's result, so the text shown to users
// with lineage=true is the formula that ran.
type Rule struct {
	Name    string `json:"rule"`
	Formula string `json:"formula"`
	// Note says where the factor comes from when that matters (reference conditions).
	Note  string `json:"note,omitempty"`
	from  string // unitAliases key of the source unit
	to    string // canonical unit
	apply func(x float64) float64
}

// Identity is the rule of a value reported in its canonical unit.
const Identity = "identity"

// Ozone in µg/m³ at reference conditions: ppb × M(O3) / Vm. 1.9957 is the factor at 20 °C
// and 1013 hPa (the UK/EU air-quality tables; EU Directive 2008/50/EC reports at 20 °C),
// the convention of the European and Indian agencies whose µg/m³ ozone OpenAQ relays. The
// US EPA convention is 25 °C (Vm 24.45 L/mol: 1.9633); no source here needs it, since
// AirNow reports ozone in ppb. The rule's name and note say which one ran.
const ozoneUgPerPPB20C = 1.9957

func identity(unit, from string) Rule {
	return Rule{Name: Identity, Formula: "x", from: from, to: unit, apply: func(x float64) float64 { return x }}
}

// rules is the one conversion table: Normalize converts with it, and readings served with
// lineage=true name the rule and formula from it. No adapter converts units itself.
var rules = []Rule{
	identity(Celsius, "c"),
	{Name: "fahrenheit_to_celsius", Formula: "(x - 32) * 5 / 9", from: "f", to: Celsius, apply: func(x float64) float64 { return (x - 32) * 5 / 9 }},
	{Name: "kelvin_to_celsius", Formula: "x - 273.15", from: "k", to: Celsius, apply: func(x float64) float64 { return x - 273.15 }},
	identity(UgPerM3, "ug/m3"),
	{Name: "mg_per_m3_to_ug_per_m3", Formula: "x * 1000", from: "mg/m3", to: UgPerM3, apply: func(x float64) float64 { return x * 1000 }},
	identity(PPB, "ppb"),
	{Name: "ppm_to_ppb", Formula: "x * 1000", from: "ppm", to: PPB, apply: func(x float64) float64 { return x * 1000 }},
	{Name: "ozone_ug_per_m3_to_ppb_20c", Formula: "x / 1.9957", Note: "ozone, 20 °C and 1013.25 hPa (EU Directive 2008/50/EC reference conditions; 25 °C would be 1.9633)",
		from: "ug/m3", to: PPB, apply: func(x float64) float64 { return x / ozoneUgPerPPB20C }},
	identity(Dimensionless, "aqi"),
	identity(MetersPerSec, "m/s"),
	{Name: "kmh_to_ms", Formula: "x / 3.6", from: "km/h", to: MetersPerSec, apply: func(x float64) float64 { return x / 3.6 }},
	{Name: "mph_to_ms", Formula: "x * 0.44704", from: "mph", to: MetersPerSec, apply: func(x float64) float64 { return x * 0.44704 }},
	{Name: "knots_to_ms", Formula: "x * 1852 / 3600", from: "kt", to: MetersPerSec, apply: func(x float64) float64 { return x * 1852 / 3600 }},
	identity(Degrees, "deg"),
	identity(HPa, "hpa"),
	{Name: "pa_to_hpa", Formula: "x / 100", from: "pa", to: HPa, apply: func(x float64) float64 { return x / 100 }},
	{Name: "kpa_to_hpa", Formula: "x * 10", from: "kpa", to: HPa, apply: func(x float64) float64 { return x * 10 }},
	{Name: "inhg_to_hpa", Formula: "x * 33.8638866667", Note: "inch of mercury at 0 °C and standard gravity",
		from: "inhg", to: HPa, apply: func(x float64) float64 { return x * 33.8638866667 }},
	identity(Percent, "percent"),
	identity(Meters, "m"),
	{Name: "feet_to_m", Formula: "x * 0.3048", from: "ft", to: Meters, apply: func(x float64) float64 { return x * 0.3048 }},
	{Name: "km_to_m", Formula: "x * 1000", from: "km", to: Meters, apply: func(x float64) float64 { return x * 1000 }},
	{Name: "nautical_miles_to_m", Formula: "x * 1852", from: "nmi", to: Meters, apply: func(x float64) float64 { return x * 1852 }},
	{Name: "statute_miles_to_m", Formula: "x * 1609.344", from: "mi", to: Meters, apply: func(x float64) float64 { return x * 1609.344 }},
	identity(Seconds, "s"),
}

type ruleKey struct{ to, from string }

var byUnits = func() map[ruleKey]Rule {
	m := make(map[ruleKey]Rule, len(rules))
	for _, r := range rules {
		k := ruleKey{r.to, r.from}
		if _, dup := m[k]; dup {
			panic("canon: two conversion rules from " + r.from + " to " + r.to)
		}
		m[k] = r
	}
	return m
}()

func ruleFor(p Parameter, unit string) (Rule, bool) {
	u, ok := unitAliases[unitKey(unit)]
	if !ok {
		return Rule{}, false
	}
	r, ok := byUnits[ruleKey{p.Unit, u}]
	return r, ok
}

// Rules returns the conversion table (for documentation and tests).
func Rules() []Rule { return append([]Rule(nil), rules...) }

// Apply runs the rule on x (unrounded), for tests that check a formula's text against it.
func (r Rule) Apply(x float64) float64 { return r.apply(x) }

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
