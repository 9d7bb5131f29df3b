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
	l, ok := For(param)
	if !ok {
		return
	}
	window := l.Window.Milliseconds()
	for i := range pts {
		p := &pts[i]
		bridged := tr.Known && p.Ms > tr.LastMs && p.Ms-tr.LastMs <= window
		m := p.M
		if m == nil { // a context value: its flags only steer the track
			m = &canon.Measurement{}
		}
		spiked := mark(m, l, tr, bridged, pts, i)
		switch {
		case !bridged:
			*tr = Track{Known: true, LastMs: p.Ms, Last: p.Value, RunFrom: p.Ms, RunValue: p.Value}
		default:
			if diff(l, p.Value, tr.RunValue) > l.FlatTolerance {
				tr.RunFrom, tr.RunValue = p.Ms, p.Value
			}
			tr.BeforeKnown, tr.Before = true, tr.Last
			tr.LastMs, tr.Last, tr.Spiked = p.Ms, p.Value, spiked
		}
	}
}

// mark gives point i its four flags; bridged says whether tr's last value is close
// enough before it for the contextual tests. It reports whether the spike test flagged it.
func mark(m *canon.Measurement, l Limits, tr *Track, bridged bool, pts []Point, i int) (spiked bool) {
	v := pts[i].Value
	switch {
	case v < l.SensorMin || v > l.SensorMax:
		m.Mark(canon.FlagFail, canon.TestGrossRange)
	case v < l.UserMin || v > l.UserMax:
		m.Mark(canon.FlagSuspect, canon.TestGrossRange)
	default:
		m.Mark(canon.FlagPass, canon.TestGrossRange)
	}
	prev := tr.Last
	if tr.Spiked && tr.BeforeKnown && diff(l, v, tr.Before) < l.SpikeSuspect {
		prev = tr.Before // back after a spike: the spike is not this value's neighbour
	}
	hours := max(float64(pts[i].Ms-tr.LastMs)/3_600_000, 1)
	run := float64(pts[i].Ms - tr.RunFrom)
	tests := [...]struct {
		on   bool
		name string
		flag func() int
	}{
		{l.SpikeSuspect > 0, canon.TestSpike, func() int { return level(diff(l, v, prev), l.SpikeSuspect, l.SpikeFail) }},
		{l.RatePerHour > 0, canon.TestRateOfChange, func() int {
			return level(diff(l, v, prev)/hours, math.Nextafter(l.RatePerHour, math.Inf(1)), math.Inf(1))
		}},
		{l.FlatSuspect > 0, canon.TestFlatLine, func() int {
			if diff(l, v, tr.RunValue) > l.FlatTolerance {
				return canon.FlagPass // the run ends here
			}
			return level(run, float64(l.FlatSuspect.Milliseconds()), float64(l.FlatFail.Milliseconds()))
		}},
	}
	for _, t := range tests {
		switch {
		case !t.on:
		case !bridged:
			m.Mark(canon.FlagNotEvaluated, "")
		default:
			f := t.flag()
			m.Mark(f, t.name)
			spiked = spiked || (t.name == canon.TestSpike && f != canon.FlagPass)
		}
	}
	return spiked
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
func diff(l Limits, a, b float64) float64 {
	d := math.Abs(a - b)
	if l.Circular {
		d = math.Mod(d, 360)
		if d > 180 {
			d = 360 - d
		}
	}
	return d
}
