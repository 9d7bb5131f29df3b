package qc

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
)

// series makes points of param every step from t0, one per value.
func series(param string, t0 time.Time, step time.Duration, values ...float64) []Point {
	pts := make([]Point, len(values))
	for i, v := range values {
		pts[i] = Point{Ms: t0.Add(time.Duration(i) * step).UnixMilli(), Value: v,
			M: &canon.Measurement{Parameter: param, Value: v}}
	}
	return pts
}

func flags(pts []Point) []int {
	out := make([]int, len(pts))
	for i, p := range pts {
		out[i] = p.M.Quality().Flag
	}
	return out
}

var t0 = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

func TestFirstReadingIsNotEvaluated(t *testing.T) {
	var tr Track
	pts := series(canon.AirTemperatureC, t0, 10*time.Minute, 20, 20.2)
	Assess(canon.AirTemperatureC, &tr, pts)
	if got := flags(pts); !slices.Equal(got, []int{2, 1}) {
		t.Fatalf("flags = %v, want [2 1]: the first value has no previous one for spike, rate and flat line", got)
	}
	if q := pts[0].M.Quality(); len(q.Failed) != 0 {
		t.Fatalf("first value failed %v, want none (not evaluated names no test)", q.Failed)
	}
}

func TestGapResetsContextualTests(t *testing.T) {
	var tr Track
	pts := series(canon.AirTemperatureC, t0, 10*time.Minute, 20, 20)
	// 40 °C after a gap longer than the window: no spike, only the gross range (suspect
	// is not reached: 40 is inside the user range).
	pts = append(pts, series(canon.AirTemperatureC, t0.Add(5*time.Hour), time.Minute, 40)...)
	Assess(canon.AirTemperatureC, &tr, pts)
	if got := flags(pts); !slices.Equal(got, []int{2, 1, 2}) {
		t.Fatalf("flags = %v, want [2 1 2]", got)
	}
}

func TestSpike(t *testing.T) {
	var tr Track
	pts := series(canon.AirTemperatureC, t0, 10*time.Minute, 20, 20.1, 40, 20.2, 20.1)
	Assess(canon.AirTemperatureC, &tr, pts)
	q := pts[2].M.Quality()
	if q.Flag != canon.FlagFail || !slices.Contains(q.Failed, canon.TestSpike) {
		t.Fatalf("40 °C between 20.1 and 20.2 = %+v, want fail with spike", q)
	}
	if got := flags(pts); !slices.Equal(got, []int{2, 1, 4, 1, 1}) {
		t.Fatalf("flags = %v, want [2 1 4 1 1]: the values around the spike pass", got)
	}
	// 10 °C in ten minutes is suspect.
	tr = Track{}
	pts = series(canon.AirTemperatureC, t0, 10*time.Minute, 20, 20.1, 30.1)
	Assess(canon.AirTemperatureC, &tr, pts)
	if q := pts[2].M.Quality(); q.Flag != canon.FlagSuspect || !slices.Contains(q.Failed, canon.TestSpike) {
		t.Fatalf("30.1 after 20.1 = %+v, want suspect spike", q)
	}
}

// A step that stays is flagged once, not from then on.
func TestStepIsOneSpike(t *testing.T) {
	var tr Track
	pts := series(canon.WaterTemperatureC, t0, 10*time.Minute, 20, 20, 30, 30, 30, 30)
	Assess(canon.WaterTemperatureC, &tr, pts)
	if got := flags(pts); got[4] != canon.FlagPass || got[5] != canon.FlagPass {
		t.Fatalf("flags = %v: values after the step must pass", got)
	}
}

func TestRateOfChange(t *testing.T) {
	var tr Track
	// 7 °C in an hour: above the 6 °C/h rate limit, below the 8 °C spike limit.
	pts := series(canon.AirTemperatureC, t0, time.Hour, 20, 27, 34)
	Assess(canon.AirTemperatureC, &tr, pts)
	q := pts[2].M.Quality()
	if q.Flag != canon.FlagSuspect || !slices.Equal(q.Failed, []string{canon.TestRateOfChange}) {
		t.Fatalf("steady 7 °C/h rise = %+v, want suspect by rate_of_change only", q)
	}
}

func TestFlatLine(t *testing.T) {
	var tr Track
	values := make([]float64, 6*30) // 30 hours of 10-minute values of 22.0 °C
	for i := range values {
		values[i] = 22
	}
	pts := series(canon.WaterTemperatureC, t0, 10*time.Minute, values...)
	Assess(canon.WaterTemperatureC, &tr, pts)
	at := func(h int) canon.QC { return pts[h*6].M.Quality() }
	if q := at(6); q.Flag != canon.FlagPass {
		t.Fatalf("6 h flat = %+v, want pass", q)
	}
	if q := at(13); q.Flag != canon.FlagSuspect || !slices.Equal(q.Failed, []string{canon.TestFlatLine}) {
		t.Fatalf("13 h flat = %+v, want suspect flat_line", q)
	}
	if q := at(25); q.Flag != canon.FlagFail {
		t.Fatalf("25 h flat = %+v, want fail", q)
	}
	// The run carries over to the next batch through the track.
	next := series(canon.WaterTemperatureC, t0.Add(30*time.Hour), 10*time.Minute, 22)
	Assess(canon.WaterTemperatureC, &tr, next)
	if q := next[0].M.Quality(); q.Flag != canon.FlagFail {
		t.Fatalf("next batch's 22.0 = %+v, want fail: the track keeps the run", q)
	}
}

// A sensor's first day: the flat-line test cannot fail before its fail time has passed
// since the first value, and every value after the first is evaluated.
func TestSensorsFirstDay(t *testing.T) {
	var tr Track
	values := make([]float64, 24)
	for i := range values {
		values[i] = 5
	}
	pts := series(canon.PM25, t0, time.Hour, values...)
	Assess(canon.PM25, &tr, pts)
	got := flags(pts)
	if got[0] != canon.FlagNotEvaluated {
		t.Fatalf("first hour = %d, want 2", got[0])
	}
	for i, f := range got[1:] {
		if f != canon.FlagPass {
			t.Fatalf("hour %d = %d, want 1 (PM2.5 flat line is suspect after 2 days only)", i+1, f)
		}
	}
}

func TestGrossRangeAndProviderMarks(t *testing.T) {
	var tr Track
	m := canon.Measurement{Parameter: canon.WaterTemperatureC, Value: 38}
	m.Mark(canon.FlagNotEvaluated, canon.ProviderPreliminary)
	Assess(canon.WaterTemperatureC, &tr, []Point{{Ms: t0.UnixMilli(), Value: 38, M: &m}})
	q := m.Quality()
	if q.Flag != canon.FlagSuspect || !slices.Equal(q.Failed, []string{canon.ProviderPreliminary, canon.TestGrossRange}) {
		t.Fatalf("38 °C water, preliminary = %+v, want suspect [provider_preliminary gross_range]", q)
	}
}

func TestCircularFlatLine(t *testing.T) {
	var tr Track
	// 359.8 and 0.2 are 0.4° apart: the same direction for the flat-line test.
	values := make([]float64, 6*26)
	for i := range values {
		values[i] = 359.8
		if i%2 == 1 {
			values[i] = 0.2
		}
	}
	pts := series(canon.WindDirectionDeg, t0, 10*time.Minute, values...)
	Assess(canon.WindDirectionDeg, &tr, pts)
	if q := pts[len(pts)-1].M.Quality(); q.Flag != canon.FlagSuspect {
		t.Fatalf("26 h of 359.8/0.2 = %+v, want suspect flat line", q)
	}
}

func TestTableCoversEveryParameter(t *testing.T) {
	for _, p := range canon.Parameters() {
		l, ok := For(p.ID)
		if !ok {
			t.Errorf("no thresholds for %s", p.ID)
			continue
		}
		if l.Source == "" {
			t.Errorf("%s: thresholds without a source", p.ID)
		}
		if l.UserMin < l.SensorMin || l.UserMax > l.SensorMax {
			t.Errorf("%s: user range %g..%g outside the sensor range %g..%g", p.ID, l.UserMin, l.UserMax, l.SensorMin, l.SensorMax)
		}
		if l.SpikeFail < l.SpikeSuspect || (l.FlatSuspect > 0 && (l.FlatFail < l.FlatSuspect || l.Window == 0)) {
			t.Errorf("%s: inconsistent thresholds %+v", p.ID, l)
		}
	}
}

// docs/quality.md shows the table that runs.
func TestDocumentedTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "quality.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{MarkdownTable(), Sources()} {
		if !strings.Contains(string(b), want) {
			t.Errorf("docs/quality.md does not hold the current table; it should contain:\n%s", want)
		}
	}
}

// Every store of a process steps its values with the same *Limits (Of): under -race,
// goroutines assessing at once must only read them, and get the flags one alone gets.
func TestStepSharesLimits(t *testing.T) {
	values := []float64{20, 20.1, 26.5, 20.2, 20.2, 20.2, 38, 20.1}
	var want []int
	{
		var tr Track
		pts := series(canon.WaterTemperatureC, t0, 10*time.Minute, values...)
		Assess(canon.WaterTemperatureC, &tr, pts)
		want = flags(pts)
	}
	if Of(canon.WaterTemperatureC) != Of(canon.WaterTemperatureC) {
		t.Fatal("Of returned two copies: the sharing this test checks is gone")
	}
	errs := make(chan string, 8)
	for range 8 {
		go func() {
			var tr Track
			pts := series(canon.WaterTemperatureC, t0, 10*time.Minute, values...)
			for i := range pts {
				Of(canon.WaterTemperatureC).Step(&tr, pts[i].Ms, pts[i].Value).Apply(pts[i].M)
			}
			if got := flags(pts); !slices.Equal(got, want) {
				errs <- fmt.Sprint(got)
				return
			}
			errs <- ""
		}()
	}
	for range 8 {
		if e := <-errs; e != "" {
			t.Fatalf("flags %s, want %v", e, want)
		}
	}
}
