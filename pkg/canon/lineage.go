package canon

import (
	"slices"
	"strings"
)

// Conversion is a measurement's lineage, served with lineage=true: the named rule of the
// conversion table that made the canonical value, its formula in x (the source value), and
// the source field, value and unit it was made from.
type Conversion struct {
	Rule        string  `json:"rule"`
	Formula     string  `json:"formula"`
	SourceField string  `json:"source_field"`
	SourceValue float64 `json:"source_value"`
	SourceUnit  string  `json:"source_unit"`
}

// Lineage returns the conversions of the measurements of one reading stored from a
// document of rawFormat (observation.Observation.RawFormat), in order. A rule is looked up
// in the one conversion table by parameter and source unit, exactly as Normalize chose it.
// A value the adapter computed from another measurement of the reading (OpenAQ's AQI from
// PM2.5) names that measurement as its source, with rule ComputedAQIPM25.
func Lineage(ms []Measurement, rawFormat string) []Conversion {
	out := make([]Conversion, len(ms))
	for i, m := range ms {
		field := SourceField(rawFormat, m.Parameter)
		c := Conversion{SourceField: field, SourceValue: m.ValueOriginal, SourceUnit: m.UnitOriginal}
		if from, ok := strings.CutPrefix(field, computedPrefix); ok {
			c.Rule, c.Formula = ComputedAQIPM25, computedAQIFormula
			for _, src := range ms {
				if src.Parameter == PM25 {
					c.SourceField, c.SourceValue, c.SourceUnit = from, src.Value, src.Unit
				}
			}
		} else if r, ok := RuleFor(m.Parameter, m.UnitOriginal); ok {
			c.Rule, c.Formula = r.Name, r.Formula
		}
		out[i] = c
	}
	return out
}

// ComputedAQIPM25 is the rule of an AQI computed from the reading's PM2.5 (canonical
// µg/m³) with the US EPA breakpoints revised in 2024 (services/adapters/aqi.FromPM25).
const ComputedAQIPM25 = "epa_aqi_from_pm25_2024"

const (
	computedPrefix     = "computed from "
	computedAQIFormula = "EPA AQI: truncate x to 0.1, then linear between the 2024 PM2.5 breakpoints (0-9.0: 0-50, 9.1-35.4: 51-100, 35.5-55.4: 101-150, 55.5-125.4: 151-200, 125.5-225.4: 201-300, 225.5-325.4: 301-500)"
)

// RuleFor returns the conversion rule Normalize applies to parameter reported in unit.
func RuleFor(parameter, unit string) (Rule, bool) {
	p, ok := byID[parameter]
	if !ok {
		return Rule{}, false
	}
	return ruleFor(p, unit)
}

// SourceField names the source field of parameter in documents of rawFormat ("" when the
// table has none). Where one parameter comes from one of several fields, they are listed
// with " | " in the order the adapter tries them (NWS pressure: seaLevelPressure, else
// barometricPressure). Every adapter's tests check that each value it emits names a field
// of this table (adaptertest.CheckBatch).
func SourceField(rawFormat, parameter string) string {
	f := sourceFields[rawFormat]
	if f == nil {
		for prefix, g := range sourceFieldPrefixes {
			if strings.HasPrefix(rawFormat, prefix) {
				f = g
				break
			}
		}
	}
	return f[parameter]
}

// KnownSourceField reports whether field is one of SourceField(rawFormat, parameter)'s.
func KnownSourceField(rawFormat, parameter, field string) bool {
	return slices.Contains(strings.Split(SourceField(rawFormat, parameter), " | "), field)
}

// ndbcFields: the adapter reads the pre-2007 names WD and BAR as WDIR and PRES.
var ndbcFields = map[string]string{
	WindDirectionDeg: "WDIR", WindSpeedMS: "WSPD", WindGustMS: "GST", WaveHeightM: "WVHT",
	WavePeriodDominantS: "DPD", WavePeriodAverageS: "APD", WaveDirectionDeg: "MWD", AirPressureHPa: "PRES",
	AirTemperatureC: "ATMP", WaterTemperatureC: "WTMP", DewPointC: "DEWP", VisibilityM: "VIS",
	PressureTendencyHPa: "PTDY", WaterLevelM: "TIDE",
}

var openaqV1Fields = map[string]string{PM25: "pm25", PM10: "pm10", OzonePPB: "o3", AQI: computedPrefix + "pm25"}

var metarFields = map[string]string{
	AirTemperatureC: "temperature (T group) | temperature (TT/DD)", DewPointC: "dew point (T group) | dew point (TT/DD)",
	WindSpeedMS: "wind speed", WindDirectionDeg: "wind direction", WindGustMS: "wind gust", VisibilityM: "visibility",
	AirPressureHPa: "altimeter (A) | altimeter (Q)", PressureTendencyHPa: "pressure tendency (5appp)",
}

// sourceFields is the lineage table: per raw format, per canonical parameter, the source
// field(s). The adapters pass the same names to batch.Measurements.Add.
var sourceFields = map[string]map[string]string{
	"ndbc.realtime2.stdmet":  ndbcFields,
	"ndbc.historical.stdmet": ndbcFields,
	"ndbc.latest_obs":        ndbcFields,
	"nws.observation": {
		AirTemperatureC: "temperature", WindDirectionDeg: "windDirection", WindSpeedMS: "windSpeed",
		AirPressureHPa: "seaLevelPressure | barometricPressure", RelativeHumidityPercent: "relativeHumidity",
		DewPointC: "dewpoint", WindGustMS: "windGust", VisibilityM: "visibility",
	},
	"ambient.record": {
		AirTemperatureC: "tempf", RelativeHumidityPercent: "humidity", WindSpeedMS: "windspeedmph",
		WindDirectionDeg: "winddir", AirPressureHPa: "baromrelin", WindGustMS: "windgustmph", DewPointC: "dewPoint",
	},
	"davis.weatherlink.v2.current": {
		AirTemperatureC: "temp", RelativeHumidityPercent: "hum", DewPointC: "dew_point",
		WindSpeedMS: "wind_speed_last", WindDirectionDeg: "wind_dir_last",
		WindSpeedAvg2MinMS: "wind_speed_avg_last_2_min", WindDirectionAvg2MinDeg: "wind_dir_scalar_avg_last_2_min",
		WindGustMS: "wind_speed_hi_last_10_min", AirPressureHPa: "bar_sea_level",
	},
	"openaq.v1.latest":       openaqV1Fields,
	"openaq.v1.measurements": openaqV1Fields,
	"openaq.v3.sensor":       openaqV1Fields,
	"openaq.v3.measurement":  openaqV1Fields,
	"openaq.v3.latest":       {PM25: "value", PM10: "value", AQI: computedPrefix + "value"},
	"airnow.data":            {PM25: "RawConcentration", PM10: "RawConcentration", OzonePPB: "RawConcentration", AQI: "AQI"},
	"airnow.observation":     {AQI: "AQI"},
	"metar.text":             metarFields,
	"awc.adds.metar":         metarFields,
}

// sourceFieldPrefixes covers raw formats named per product ("coops.datagetter.<product>").
var sourceFieldPrefixes = map[string]map[string]string{
	"coops.datagetter.": {WaterTemperatureC: "v", AirTemperatureC: "v", AirPressureHPa: "v", RelativeHumidityPercent: "v"},
}
