// Package qc holds the QARTOD tests the services run on every measurement at ingest
// (gross range, spike, rate of change, flat line) and the one table of their thresholds
// per canonical parameter (docs/quality.md). The store runs Step on each value of a
// station's series (Assess is that over a whole series). The tests only look back: a value gets the same flags whether it arrives alone
// (a live poll) or inside a file of many, so replaying a file never revises a flag.
package qc

import (
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
)

// Limits are the thresholds of one canonical parameter, in its canonical unit. A zero
// threshold switches its test off for the parameter (the test is then not named and not
// counted). Source says where the numbers come from.
type Limits struct {
	Param string
	// Gross range: outside [SensorMin, SensorMax] fails (the physical range of
	// pkg/canon, which Normalize already enforces, or the sensor's span when narrower);
	// outside [UserMin, UserMax] is suspect.
	SensorMin, SensorMax float64
	UserMin, UserMax     float64
	// Spike: |v(n) - v(n-1)| at or above SpikeSuspect is suspect, at or above SpikeFail
	// fails. QARTOD's reference is the mean of both neighbours, which needs the next
	// value; a value is flagged when it is stored, so the previous one alone is used, and
	// a value back near the one before a flagged spike is judged against that one (the
	// spike is not its neighbour).
	SpikeSuspect, SpikeFail float64
	// RatePerHour: |v(n) - v(n-1)| per hour above it is suspect. Steps shorter than an
	// hour are judged as an hour (the change itself against the limit): per-hour scaling
	// of a 5-minute step would flag every gust and sensor-resolution jitter.
	RatePerHour float64
	// Flat line: values within FlatTolerance of the run's first value for FlatSuspect are
	// suspect, for FlatFail fail.
	FlatTolerance         float64
	FlatSuspect, FlatFail time.Duration
	// Window is the longest gap between two values that the spike, rate-of-change and
	// flat-line tests bridge: after a longer gap (or before a sensor's first value) they
	// are not evaluated (flag 2) and start again.
	Window time.Duration
	// Circular parameters (directions) compare values on the circle.
	Circular bool
	Source   string
}

const (
	hour = time.Hour
	day  = 24 * time.Hour
)

// Sources of the numbers (docs/quality.md has the references). The QARTOD manuals define
// the tests and the flags and leave the thresholds to the operator; where a number is
// sensorgate's own choice, the source says so.
const (
	srcTS      = "IOOS QARTOD Temperature and Salinity manual (v2.1, 2020): gross range, spike, rate of change and flat line tests; thresholds are sensorgate's choice for surface buoys sampling every 10-60 min"
	srcWind    = "IOOS QARTOD Wind manual (v1.1, 2017): gross range, rate of change and flat line tests; thresholds are sensorgate's choice for 2-10 min means"
	srcWaves   = "IOOS QARTOD Waves manual (v2.1, 2019): gross range and flat line tests on bulk wave parameters; thresholds are sensorgate's choice for hourly values"
	srcWL      = "IOOS QARTOD Water Level manual (v2.1, 2021): gross range, spike, rate of change and flat line tests; thresholds are sensorgate's choice for 6-min values relative to the station datum"
	srcMet     = "no QARTOD manual covers surface meteorology: the T/S and Wind manuals' tests, with thresholds of sensorgate's choice"
	srcAir     = "no QARTOD manual covers air quality: the same tests; the user range is the top of the US EPA AQI table (PM2.5 500.4 µg/m³ before its 2024 revision, PM10 604 µg/m³, 1-hour ozone 604 ppb), spike thresholds sensorgate's choice for hourly means"
	srcDerived = "a derived value (AQI, pressure tendency): the gross range test only"
)

// table is the one table of thresholds. Sensor ranges are pkg/canon's physical ranges
// (a value outside them is rejected before it is stored, so gross_range fail marks only
// a narrower sensor span when one is set here).
var table = []Limits{
	{Param: canon.WaterTemperatureC, UserMin: -2.5, UserMax: 35, SpikeSuspect: 3, SpikeFail: 6, RatePerHour: 2,
		FlatTolerance: 0.05, FlatSuspect: 12 * hour, FlatFail: day, Window: 3 * hour, Source: srcTS},
	{Param: canon.AirTemperatureC, UserMin: -60, UserMax: 50, SpikeSuspect: 8, SpikeFail: 12, RatePerHour: 6,
		FlatTolerance: 0.05, FlatSuspect: 8 * hour, FlatFail: day, Window: 3 * hour, Source: srcMet},
	{Param: canon.DewPointC, UserMin: -60, UserMax: 35, SpikeSuspect: 8, SpikeFail: 12, RatePerHour: 6,
		FlatTolerance: 0.05, FlatSuspect: 8 * hour, FlatFail: day, Window: 3 * hour, Source: srcMet},
	{Param: canon.RelativeHumidityPercent, UserMin: 1, UserMax: 100, SpikeSuspect: 40, SpikeFail: 70, RatePerHour: 30,
		FlatTolerance: 0.05, FlatSuspect: day, FlatFail: 2 * day, Window: 3 * hour, Source: srcMet},
	{Param: canon.AirPressureHPa, UserMin: 900, UserMax: 1070, SpikeSuspect: 8, SpikeFail: 20, RatePerHour: 5,
		FlatTolerance: 0.05, FlatSuspect: 8 * hour, FlatFail: day, Window: 3 * hour, Source: srcMet},
	{Param: canon.PressureTendencyHPa, UserMin: -20, UserMax: 20, Source: srcDerived},
	{Param: canon.VisibilityM, UserMin: 0, UserMax: 100000, Source: srcMet + "; visibility saturates at the sensor's top for days, so no contextual test"},
	{Param: canon.WindSpeedMS, UserMin: 0, UserMax: 60, SpikeSuspect: 20, SpikeFail: 35, RatePerHour: 15,
		FlatTolerance: 0.01, FlatSuspect: day, FlatFail: 2 * day, Window: 3 * hour, Source: srcWind},
	{Param: canon.WindSpeedAvg2MinMS, UserMin: 0, UserMax: 60, SpikeSuspect: 20, SpikeFail: 35, RatePerHour: 15,
		FlatTolerance: 0.01, FlatSuspect: day, FlatFail: 2 * day, Window: 3 * hour, Source: srcWind},
	{Param: canon.WindGustMS, UserMin: 0, UserMax: 80, Source: srcWind + "; gusts are peaks, so no spike or rate test"},
	{Param: canon.WindDirectionDeg, UserMin: 0, UserMax: 360, FlatTolerance: 0.5, FlatSuspect: day, FlatFail: 2 * day,
		Window: 3 * hour, Circular: true, Source: srcWind + "; directions get no spike or rate test"},
	{Param: canon.WindDirectionAvg2MinDeg, UserMin: 0, UserMax: 360, FlatTolerance: 0.5, FlatSuspect: day, FlatFail: 2 * day,
		Window: 3 * hour, Circular: true, Source: srcWind + "; directions get no spike or rate test"},
	{Param: canon.WaveHeightM, UserMin: 0, UserMax: 20, SpikeSuspect: 4, SpikeFail: 8, RatePerHour: 2,
		FlatTolerance: 0.005, FlatSuspect: 12 * hour, FlatFail: day, Window: 4 * hour, Source: srcWaves},
	{Param: canon.WavePeriodDominantS, UserMin: 1, UserMax: 30, FlatTolerance: 0.005, FlatSuspect: day, FlatFail: 2 * day,
		Window: 4 * hour, Source: srcWaves},
	{Param: canon.WavePeriodAverageS, UserMin: 1, UserMax: 25, FlatTolerance: 0.005, FlatSuspect: day, FlatFail: 2 * day,
		Window: 4 * hour, Source: srcWaves},
	{Param: canon.WaveDirectionDeg, UserMin: 0, UserMax: 360, FlatTolerance: 0.5, FlatSuspect: day, FlatFail: 2 * day,
		Window: 4 * hour, Circular: true, Source: srcWaves},
	{Param: canon.WaterLevelM, UserMin: -10, UserMax: 10, SpikeSuspect: 0.3, SpikeFail: 0.6, RatePerHour: 0.25,
		FlatTolerance: 0.002, FlatSuspect: 3 * hour, FlatFail: 6 * hour, Window: 2 * hour, Source: srcWL},
	{Param: canon.PM25, UserMin: 0, UserMax: 500.4, SpikeSuspect: 150, SpikeFail: 400,
		FlatTolerance: 0, FlatSuspect: 2 * day, FlatFail: 4 * day, Window: 3 * hour, Source: srcAir},
	{Param: canon.PM10, UserMin: 0, UserMax: 604, SpikeSuspect: 300, SpikeFail: 800,
		FlatTolerance: 0, FlatSuspect: 2 * day, FlatFail: 4 * day, Window: 3 * hour, Source: srcAir},
	{Param: canon.OzonePPB, UserMin: 0, UserMax: 604, SpikeSuspect: 60, SpikeFail: 150,
		FlatTolerance: 0, FlatSuspect: 2 * day, FlatFail: 4 * day, Window: 3 * hour, Source: srcAir},
	{Param: canon.AQI, UserMin: 0, UserMax: 500, Source: srcDerived},
}

var byParam = func() map[string]*Limits {
	m := make(map[string]*Limits, len(table))
	for _, l := range table {
		p, ok := canon.Lookup(l.Param)
		if !ok {
			panic("qc: thresholds of unknown parameter " + l.Param)
		}
		if _, dup := m[l.Param]; dup {
			panic("qc: two threshold rows for " + l.Param)
		}
		if l.SensorMin == 0 && l.SensorMax == 0 {
			l.SensorMin, l.SensorMax = p.Min, p.Max
		}
		m[l.Param] = &l
	}
	return m
}()

// Of returns the thresholds of param, shared and read-only (Step's receiver), or nil for
// a parameter without them: the store looks them up once per station and parameter of a
// batch, not per value, and copies nothing.
func Of(param string) *Limits { return byParam[param] }

// Lookback is how far before a batch's first value the store must read a station's
// stored values for the tests to see what they need (the longest flat-line fail time).
func Lookback() time.Duration {
	var d time.Duration
	for _, l := range table {
		d = max(d, l.Window, l.FlatFail)
	}
	return d
}
