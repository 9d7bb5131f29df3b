package alerts

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func ptr(v float64) *float64 { return &v }

func rule(c Condition, forDur time.Duration) *Rule {
	return &Rule{ID: "r1", Condition: c, forDur: forDur, keyID: "k", WebhookURL: "https://example.org/hook"}
}

// feed applies values one minute apart and returns the states of the events raised.
func feed(t *testing.T, r *Rule, values ...float64) []string {
	t.Helper()
	states := map[string]stateRow{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []string
	for i, v := range values {
		at := t0.Add(time.Duration(i) * time.Minute)
		_, evs := evaluate([]*Rule{r}, states, reading{SensorID: "s", At: at, Values: map[string]float64{"pm2_5_ug_per_m3": v}}, at)
		for _, e := range evs {
			if e.Value == nil || *e.Value != v || e.RuleID != "r1" || e.SensorID != "s" || !e.ReadingTimestamp.Equal(at) || !e.webhook {
				t.Fatalf("event %+v does not describe reading %d (%g at %s)", e, i, v, at)
			}
			got = append(got, e.State)
		}
	}
	return got
}

func TestThresholdHoldsForTheDurationBeforeFiring(t *testing.T) {
	r := rule(Condition{Parameter: "pm2_5_ug_per_m3", Op: OpAbove, Value: ptr(35)}, 2*time.Minute)
	// Above at 0, 1, 2 min: fires at 2 (held 2 min); back to 20 resolves.
	if got := feed(t, r, 40, 41, 42, 43, 20); !equal(got, StateFiring, StateResolved) {
		t.Fatalf("events %v, want firing then resolved", got)
	}
	// Interrupted before the duration: never fires.
	if got := feed(t, r, 40, 41, 30, 40, 41, 30); len(got) != 0 {
		t.Fatalf("events %v, want none (never above for 2 minutes)", got)
	}
}

func TestHysteresisStopsFlapping(t *testing.T) {
	r := rule(Condition{Parameter: "pm2_5_ug_per_m3", Op: OpAbove, Value: ptr(35)}, 0)
	// Dancing between 34 and 36 around 35 (default margin 5% = 1.75): one firing, no resolve
	// until 33.25 or below.
	if got := feed(t, r, 36, 34, 36, 34, 36, 33.9, 33); !equal(got, StateFiring, StateResolved) {
		t.Fatalf("events %v, want one firing and one resolved", got)
	}
	r = rule(Condition{Parameter: "pm2_5_ug_per_m3", Op: OpBelow, Value: ptr(10), Hysteresis: ptr(0)}, 0)
	if got := feed(t, r, 9, 10, 9, 11); !equal(got, StateFiring, StateResolved, StateFiring, StateResolved) {
		t.Fatalf("events %v with hysteresis 0, want every crossing", got)
	}
	r = rule(Condition{Parameter: "pm2_5_ug_per_m3", Op: OpOutside, Min: ptr(0), Max: ptr(100)}, 0)
	// Margin 2.5 inside each bound.
	if got := feed(t, r, 50, 101, 99, 98, 97, -1, 1, 3); !equal(got, StateFiring, StateResolved, StateFiring, StateResolved) {
		t.Fatalf("events %v for outside [0, 100], want two firings each resolved", got)
	}
}

func TestReadingWithoutTheParameterChangesNothing(t *testing.T) {
	r := rule(Condition{Parameter: "pm2_5_ug_per_m3", Op: OpAbove, Value: ptr(35)}, 0)
	states := map[string]stateRow{}
	changed, evs := evaluate([]*Rule{r}, states, reading{SensorID: "s", At: time.Now(), Values: map[string]float64{"no2": 99}}, time.Now())
	if len(changed) != 0 || len(evs) != 0 {
		t.Fatalf("changed %v events %v, want nothing", changed, evs)
	}
}

func TestStaleness(t *testing.T) {
	r := rule(Condition{Op: OpStale}, 10*time.Minute)
	last := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := stateRow{RuleID: "r1", SensorID: "s", State: stateOK, LastMS: last.UnixMilli()}
	// Interval 600 s: stale after 1,200 s, then held 10 min: fires at 30 min, not before.
	if _, ev := staleCheck(r, prev, last, 600, last.Add(29*time.Minute)); ev != nil {
		t.Fatalf("fired at 29 min: %+v", ev)
	}
	next, ev := staleCheck(r, prev, last, 600, last.Add(31*time.Minute))
	if ev == nil || ev.State != StateFiring || next.State != StateFiring || !ev.ReadingTimestamp.Equal(last) {
		t.Fatalf("at 31 min: state %+v event %+v, want firing from the last reading", next, ev)
	}
	if _, again := staleCheck(r, next, last, 600, last.Add(40*time.Minute)); again != nil {
		t.Fatalf("fired twice: %+v", again)
	}
	// A reading resolves it.
	states := map[string]stateRow{"r1": next}
	at := last.Add(41 * time.Minute)
	_, evs := evaluate([]*Rule{r}, states, reading{SensorID: "s", At: at, Values: map[string]float64{}}, at)
	if len(evs) != 1 || evs[0].State != StateResolved || states["r1"].LastMS != at.UnixMilli() {
		t.Fatalf("after a reading: events %+v state %+v, want resolved", evs, states["r1"])
	}
}

func TestTargets(t *testing.T) {
	rules := []Rule{
		{ID: "ids", Target: Target{SensorIDs: []string{"a"}}},
		{ID: "box", Target: Target{BBox: &BBox{MinLat: 50, MinLon: 0, MaxLat: 51, MaxLon: 1}}},
		{ID: "near", Target: Target{Near: &Near{Lat: 50.5, Lon: 0.5, RadiusKM: 10}}},
		{ID: "proj", Target: Target{ProjectID: "p"}},
	}
	rs := newRuleSet(rules)
	names := func(rs []*Rule) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	lat, lon := 50.5, 0.55 // about 3.5 km east of the centre
	if got := names(rs.match(nil, reading{SensorID: "a", Lat: &lat, Lon: &lon}, &SensorInfo{ProjectID: "p"})); !equal(got, "ids", "proj", "box", "near") {
		t.Fatalf("matched %v", got)
	}
	far := 0.9 // in the box, 28 km from the centre
	if got := names(rs.match(nil, reading{SensorID: "b"}, &SensorInfo{Lat: &lat, Lon: &far})); !equal(got, "box") {
		t.Fatalf("matched %v, want the box only (catalog position)", got)
	}
}

func equal(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestGridMatchesScan: the area rules' grid finds, for any position, exactly the rules a
// scan of every area rule finds, in the same order: boxes, circles across the antimeridian
// and around the poles, circles wider than half the globe, positions on cell edges.
func TestGridMatchesScan(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 11))
	coord := func(lo, hi float64) float64 {
		if r.IntN(10) == 0 { // a cell edge, or the globe's
			return lo + float64(r.IntN(int(hi-lo)/gridDeg+1)*gridDeg)
		}
		return lo + r.Float64()*(hi-lo)
	}
	var rules []Rule
	for i := range 3000 {
		ru := Rule{ID: fmt.Sprint(i)}
		switch i % 3 {
		case 0:
			lat, lon := coord(-90, 80), coord(-180, 170)
			ru.Target.BBox = &BBox{MinLat: lat, MinLon: lon, MaxLat: min(lat+r.Float64()*30, 90), MaxLon: min(lon+r.Float64()*60, 180)}
		default:
			radius := []float64{1, 50, 500, 3000, 15000}[r.IntN(5)]
			ru.Target.Near = &Near{Lat: coord(-90, 90), Lon: coord(-180, 180), RadiusKM: radius}
		}
		rules = append(rules, ru)
	}
	rs := newRuleSet(rules)
	for range 20000 {
		lat, lon := coord(-90, 90), coord(-180, 180)
		got := rs.match(nil, reading{SensorID: "s", Lat: &lat, Lon: &lon}, nil)
		var want []*Rule
		for _, ru := range rs.area {
			if ru.Target.contains(lat, lon) {
				want = append(want, ru)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("at %v,%v the grid matched %d rules, a scan %d", lat, lon, len(got), len(want))
		}
	}
}
