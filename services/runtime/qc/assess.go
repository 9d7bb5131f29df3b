package qc

import (
	"math"

	"github.com/sensorgate/sensorgate/pkg/canon"
)

// Track is what the contextual tests remember of one station's parameter: its last value
// and the flat run it ends. The zero Track knows nothing (a sensor's first value).
type Track struct {
	Known    bool
	LastMs   int64
	Last     float64
	RunFrom  int64   // when the current flat run started (epoch ms)
	RunValue float64 // the run's first value
	// Spiked says the last value was flagged by the spike test, and Before is the value before
	// it (BeforeKnown): a value back near Before is judged against it, so that one spike
	// does not flag its neighbour too.
	Spiked      bool
	BeforeKnown bool
	Before      float64
}

// Point is one value of a series to assess, in time order. M is the measurement the
// flags are marked on; nil for a value that only feeds the tests (a stored value read as
// context).
type Point struct {
	Ms    int64
	Value float64
	M     *canon.Measurement
}

// Assess runs the four tests over pts (one parameter of one station, ascending time),
// continuing from tr, marks every point's measurement with their flags, and leaves tr at
// the last point. A parameter without limits is marked by nothing (its flag stays the
// provider's).
func Assess(param string, tr *Track, pts []Point) {
	l := Of(param)
	if l == nil {
		return
	}
	for i := range pts {
		l.Step(tr, pts[i].Ms, pts[i].Value, pts[i].M)
	}
}

// Step runs the four tests on one value v at ms (epoch ms) that follows tr's values,
// marks m with their flags (nil: a context value, which only moves tr on), and leaves tr
// at the value. Assess is Step over a series; the store steps through a batch's readings
// in time order, each measurement with its parameter's track, so that it builds no
// series per parameter.
func (l *Limits) Step(tr *Track, ms int64, v float64, m *canon.Measurement) {
	bridged := tr.Known && ms > tr.LastMs && ms-tr.LastMs <= l.Window.Milliseconds()
	spiked := l.mark(m, tr, bridged, ms, v)
	if !bridged {
		*tr = Track{Known: true, LastMs: ms, Last: v, RunFrom: ms, RunValue: v}
		return
	}
	if diff(l, v, tr.RunValue) > l.FlatTolerance {
		tr.RunFrom, tr.RunValue = ms, v
	}
	tr.BeforeKnown, tr.Before = true, tr.Last
	tr.LastMs, tr.Last, tr.Spiked = ms, v, spiked
}

// mark gives the value v at ms its four flags, in the order of Failed (gross range,
// spike, rate of change, flat line); bridged says whether tr's last value is close enough
// before it for the contextual tests. It reports whether the spike test flagged it. A
// nil m is only judged (for spiked). Written out test by test, without a table of
// closures: it runs for every value stored.
func (l *Limits) mark(m *canon.Measurement, tr *Track, bridged bool, ms int64, v float64) (spiked bool) {
	switch {
	case v < l.SensorMin || v > l.SensorMax:
		set(m, canon.FlagFail, canon.TestGrossRange)
	case v < l.UserMin || v > l.UserMax:
		set(m, canon.FlagSuspect, canon.TestGrossRange)
	default:
		set(m, canon.FlagPass, canon.TestGrossRange)
	}
	if !bridged {
		// The contextual tests that are on cannot be evaluated (each would mark the same).
		if l.SpikeSuspect > 0 || l.RatePerHour > 0 || l.FlatSuspect > 0 {
			set(m, canon.FlagNotEvaluated, "")
		}
		return false
	}
	prev := tr.Last
	if tr.Spiked && tr.BeforeKnown && diff(l, v, tr.Before) < l.SpikeSuspect {
		prev = tr.Before // back after a spike: the spike is not this value's neighbour
	}
	if l.SpikeSuspect > 0 {
		f := level(diff(l, v, prev), l.SpikeSuspect, l.SpikeFail)
		set(m, f, canon.TestSpike)
		spiked = f != canon.FlagPass
	}
	if l.RatePerHour > 0 {
		hours := max(float64(ms-tr.LastMs)/3_600_000, 1)
		set(m, level(diff(l, v, prev)/hours, math.Nextafter(l.RatePerHour, math.Inf(1)), math.Inf(1)), canon.TestRateOfChange)
	}
	if l.FlatSuspect > 0 {
		f := canon.FlagPass // the run ends here
		if diff(l, v, tr.RunValue) <= l.FlatTolerance {
			f = level(float64(ms-tr.RunFrom), float64(l.FlatSuspect.Milliseconds()), float64(l.FlatFail.Milliseconds()))
		}
		set(m, f, canon.TestFlatLine)
	}
	return spiked
}

// set marks m, when there is one.
func set(m *canon.Measurement, flag int, name string) {
	if m != nil {
		m.Mark(flag, name)
	}
}

// level grades x against its thresholds: fail at or above fail, suspect at or above
// suspect, pass below.
func level(x, suspect, fail float64) int {
	switch {
	case x >= fail:
		return canon.FlagFail
	case x >= suspect:
		return canon.FlagSuspect
	}
	return canon.FlagPass
}

// diff is |a - b|, on the circle for directions.
func diff(l *Limits, a, b float64) float64 {
	d := math.Abs(a - b)
	if l.Circular {
		d = math.Mod(d, 360)
		if d > 180 {
			d = 360 - d
		}
	}
	return d
}
