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
		v := l.Step(tr, pts[i].Ms, pts[i].Value)
		if pts[i].M != nil {
			v.Apply(pts[i].M)
		}
	}
}

// Tests names the four tests in the order they mark a value (the order of QC.Failed),
// Verdict.Failed's bits.
var Tests = [4]string{canon.TestGrossRange, canon.TestSpike, canon.TestRateOfChange, canon.TestFlatLine}

// Verdict is what the four tests gave one value: Flag, the worst of their flags, and
// Failed, the tests that flagged it suspect or failed (bit i: Tests[i]). It holds no
// pointer, so that the store keeps one per stored value in two bytes of a slice the
// garbage collector does not scan, instead of a canon.QC on a copy of every measurement.
// The zero Verdict says no test ran (a parameter without thresholds).
type Verdict struct {
	Flag   uint8
	Failed uint8
}

// judge records that test i gave flag.
func (d *Verdict) judge(i int, flag int) {
	d.worst(flag)
	if flag == canon.FlagSuspect || flag == canon.FlagFail {
		d.Failed |= 1 << i
	}
}

// worst makes flag the verdict's when it is worse.
func (d *Verdict) worst(flag int) {
	if canon.Worse(flag, int(d.Flag)) {
		d.Flag = uint8(flag)
	}
}

// Apply marks m as the tests' own marks would: the flag becomes the worst of m's and
// the verdict's, and the tests that flagged it join Failed in their order (after a
// provider's marks). A zero Verdict marks nothing.
func (d Verdict) Apply(m *canon.Measurement) {
	if d.Flag == 0 {
		return
	}
	m.Mark(int(d.Flag), "")
	for i, name := range Tests {
		if d.Failed&(1<<i) != 0 {
			m.Mark(canon.FlagSuspect, name) // no worse than d.Flag: only names it
		}
	}
}

// Step runs the four tests on one value v at ms (epoch ms) that follows tr's values,
// leaves tr at the value and returns the verdict. Assess is Step over a series; the
// store steps through a batch's readings in time order, each measurement with its
// parameter's track, so that it builds no series per parameter.
func (l *Limits) Step(tr *Track, ms int64, v float64) Verdict {
	bridged := tr.Known && ms > tr.LastMs && ms-tr.LastMs <= l.Window.Milliseconds()
	d := l.judge(tr, bridged, ms, v)
	if !bridged {
		*tr = Track{Known: true, LastMs: ms, Last: v, RunFrom: ms, RunValue: v}
		return d
	}
	if diff(l, v, tr.RunValue) > l.FlatTolerance {
		tr.RunFrom, tr.RunValue = ms, v
	}
	tr.BeforeKnown, tr.Before = true, tr.Last
	tr.LastMs, tr.Last, tr.Spiked = ms, v, d.Failed&(1<<testSpike) != 0
	return d
}

// Indexes of the tests in Tests.
const (
	testGrossRange = iota
	testSpike
	testRateOfChange
	testFlatLine
)

// judge gives the value v at ms its four flags; bridged says whether tr's last value is
// close enough before it for the contextual tests. Written out test by test, without a
// table of closures: it runs for every value stored.
func (l *Limits) judge(tr *Track, bridged bool, ms int64, v float64) Verdict {
	d := Verdict{Flag: canon.FlagPass}
	switch {
	case v < l.SensorMin || v > l.SensorMax:
		d.judge(testGrossRange, canon.FlagFail)
	case v < l.UserMin || v > l.UserMax:
		d.judge(testGrossRange, canon.FlagSuspect)
	}
	if !bridged {
		// The contextual tests that are on cannot be evaluated.
		if l.SpikeSuspect > 0 || l.RatePerHour > 0 || l.FlatSuspect > 0 {
			d.worst(canon.FlagNotEvaluated)
		}
		return d
	}
	prev := tr.Last
	if tr.Spiked && tr.BeforeKnown && diff(l, v, tr.Before) < l.SpikeSuspect {
		prev = tr.Before // back after a spike: the spike is not this value's neighbour
	}
	if l.SpikeSuspect > 0 {
		d.judge(testSpike, level(diff(l, v, prev), l.SpikeSuspect, l.SpikeFail))
	}
	if l.RatePerHour > 0 {
		hours := max(float64(ms-tr.LastMs)/3_600_000, 1)
		d.judge(testRateOfChange, level(diff(l, v, prev)/hours, math.Nextafter(l.RatePerHour, math.Inf(1)), math.Inf(1)))
	}
	if l.FlatSuspect > 0 && diff(l, v, tr.RunValue) <= l.FlatTolerance { // else the run ends here: a pass
		d.judge(testFlatLine, level(float64(ms-tr.RunFrom), float64(l.FlatSuspect.Milliseconds()), float64(l.FlatFail.Milliseconds())))
	}
	return d
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
