package app_test

import (
	"context"
	"encoding/json"
	"math"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// serviceWithStore starts a files-mode ocean service over a fresh PostgreSQL database and
// opens that database's store beside it, for a test to ingest what it then asks for.
func serviceWithStore(t *testing.T) (string, store.Store) {
	t.Helper()
	dsn := testenv.Postgres(t)
	base := service(t, map[string]string{"SOURCE_MODE": "files", "SOURCE_DIR": t.TempDir(), "READINGS_DATABASE_URL": dsn})
	st, err := store.Open(context.Background(), store.Options{ServiceID: "ocean", DatabaseURL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return base, st
}

// tenMinuteBatch is 10-minute readings of station id (reporting interval 600 s) from start
// for n steps, skipping the steps gap says, with temperature and a wind direction that
// circles around north.
func tenMinuteBatch(id string, start time.Time, n int, gap func(int) bool) store.Batch {
	dirs := []float64{350, 10, 355, 5, 340, 20, 0, 359}
	b := store.Batch{Provider: "ndbc", Feed: "ndbc-realtime", FetchedAt: start.Add(time.Duration(n) * 10 * time.Minute),
		Stations: []contract.Station{{ExternalID: id, Name: "Ten-minute buoy", SensorType: "buoy", ReportingIntervalS: 600}}}
	for i := 0; i < n; i++ {
		if gap != nil && gap(i) {
			continue
		}
		temp := 5 + math.Abs(float64(i%74-37))*0.25 // a triangle: no jump the QARTOD tests flag
		ms := []canon.Measurement{
			{Parameter: canon.AirTemperatureC, Value: temp, Unit: canon.Celsius, UnitOriginal: "degC", ValueOriginal: temp},
			{Parameter: canon.WindDirectionDeg, Value: dirs[i%len(dirs)], Unit: canon.Degrees, UnitOriginal: "degT", ValueOriginal: dirs[i%len(dirs)]},
		}
		b.Observations = append(b.Observations, observation.Observation{StationID: id, Time: start.Add(time.Duration(i) * 10 * time.Minute),
			Measurements: ms, Raw: []byte(`{"t":1}`), RawFormat: "ndbc.realtime2.stdmet"})
	}
	return b
}

// aggregateOf decodes an aggregate answer; values are kept loose to see nulls.
type aggregateOf struct {
	contract.AggregateResponse
	Buckets []struct {
		Start      contract.Time                          `json:"start"`
		End        contract.Time                          `json:"end"`
		StartLocal string                                 `json:"start_local"`
		Values     map[string]map[string]*json.RawMessage `json:"values"`
	} `json:"buckets"`
}

func num(t *testing.T, m map[string]*json.RawMessage, k string) *float64 {
	t.Helper()
	raw, ok := m[k]
	if !ok {
		t.Fatalf("no %q in %v", k, m)
	}
	if raw == nil {
		return nil
	}
	var v float64
	if err := json.Unmarshal(*raw, &v); err != nil {
		t.Fatalf("%s: %v", k, err)
	}
	return &v
}

// TestAggregateEndpoint runs the service on PostgreSQL, stores 10-minute readings over the
// New York DST change of 1 November 2026 (with a 3-hour outage), and checks the aggregate
// answer against values the test computes from the readings: local days of 24, 25 and 24
// hours with their offsets, coverage from the 600 s interval, the circular mean of wind
// directions around north, empty buckets, rollups and raw readings answering alike, and
// a 400 naming each bad parameter.
func TestAggregateEndpoint(t *testing.T) {
	t.Parallel()
	base, st := serviceWithStore(t)
	ctx := context.Background()
	start := time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC)
	b := tenMinuteBatch("DST1", start, 6*24*5, func(i int) bool { return i >= 300 && i < 318 })
	if _, err := st.Ingest(ctx, b); err != nil {
		t.Fatal(err)
	}
	ny, _ := time.LoadLocation("America/New_York")

	path := base + contract.AggregatePath("DST1")
	var a aggregateOf
	q := "?interval=1d&tz=America/New_York&since=2026-10-31T00:00:00-04:00&until=2026-11-03T00:00:00-05:00"
	if code, body := get(t, path+q, nil, &a); code != 200 {
		t.Fatalf("aggregate: %d %s", code, body)
	}
	if len(a.Buckets) != 3 || a.Source != store.SourceRollups || a.ExpectedIntervalSeconds == nil || *a.ExpectedIntervalSeconds != 600 {
		t.Fatalf("answer %+v", a.AggregateResponse)
	}
	wantLocal := []string{"2026-10-31T00:00:00.000-04:00", "2026-11-01T00:00:00.000-04:00", "2026-11-02T00:00:00.000-05:00"}
	wantHours := []float64{24, 25, 24}
	for i, bk := range a.Buckets {
		if bk.StartLocal != wantLocal[i] || bk.End.Sub(bk.Start.Time).Hours() != wantHours[i] {
			t.Errorf("bucket %d: %s (%s .. %s), want %s and %v hours", i, bk.StartLocal, bk.Start.Time, bk.End.Time, wantLocal[i], wantHours[i])
		}
		// The test's own computation over the readings of that local day.
		var temps, dirs []float64
		for _, o := range b.Observations {
			if o.Time.In(ny).Format("2006-01-02") == bk.Start.In(ny).Format("2006-01-02") {
				temps = append(temps, o.Measurements[0].Value)
				dirs = append(dirs, o.Measurements[1].Value)
			}
		}
		tv := bk.Values[canon.AirTemperatureC]
		lo, hi, sum := temps[0], temps[0], 0.0
		for _, v := range temps {
			lo, hi, sum = min(lo, v), max(hi, v), sum+v
		}
		if c := num(t, tv, "count"); *c != float64(len(temps)) || *num(t, tv, "min") != lo || *num(t, tv, "max") != hi ||
			math.Abs(*num(t, tv, "mean")-sum/float64(len(temps))) > 1e-6 {
			t.Errorf("bucket %d temperature %s, want count %d min %v max %v mean %v", i, fmtVals(tv), len(temps), lo, hi, sum/float64(len(temps)))
		}
		wantCov := float64(len(temps)) / (wantHours[i] * 6)
		if cov := num(t, tv, "coverage"); cov == nil || math.Abs(*cov-wantCov) > 1e-6 {
			t.Errorf("bucket %d coverage %v, want %v", i, cov, wantCov)
		}
		var ss, sc float64
		for _, d := range dirs {
			ss += math.Sin(d * math.Pi / 180)
			sc += math.Cos(d * math.Pi / 180)
		}
		want := math.Mod(math.Atan2(ss, sc)*180/math.Pi+360, 360)
		got := *num(t, bk.Values[canon.WindDirectionDeg], "mean")
		if d := math.Abs(got - want); math.Min(d, 360-d) > 1e-5 || (got > 10 && got < 350) {
			t.Errorf("bucket %d wind direction mean %v, want %v (around north)", i, got, want)
		}
	}

	// 350 and 10 give 0: one hour holding exactly those two.
	two := store.Batch{Provider: "ndbc", Feed: "ndbc-realtime", FetchedAt: start,
		Stations: []contract.Station{{ExternalID: "NORTH", Name: "North", ReportingIntervalS: 0}}}
	for i, d := range []float64{350, 10} {
		two.Observations = append(two.Observations, observation.Observation{StationID: "NORTH", Time: start.Add(time.Duration(i) * time.Minute),
			Measurements: []canon.Measurement{{Parameter: canon.WindDirectionDeg, Value: d, Unit: canon.Degrees, UnitOriginal: "degT", ValueOriginal: d}},
			RawFormat:    "ndbc.realtime2.stdmet"})
	}
	if _, err := st.Ingest(ctx, two); err != nil {
		t.Fatal(err)
	}
	var n aggregateOf
	get(t, base+contract.AggregatePath("NORTH")+"?interval=1h&since=2026-10-30T00:00:00Z&until=2026-10-30T02:00:00Z", nil, &n)
	if len(n.Buckets) != 2 || *num(t, n.Buckets[0].Values[canon.WindDirectionDeg], "mean") != 0 ||
		num(t, n.Buckets[0].Values[canon.WindDirectionDeg], "coverage") != nil || n.ExpectedIntervalSeconds != nil {
		t.Errorf("350 and 10: %+v", n)
	}
	// The empty hour is there, count 0 and null statistics.
	if e := n.Buckets[1].Values[canon.WindDirectionDeg]; *num(t, e, "count") != 0 || num(t, e, "mean") != nil || num(t, e, "min") != nil {
		t.Errorf("empty bucket %s", fmtVals(e))
	}

	// The outage hours (UTC) and stats selection; rollups and raw readings answer alike.
	q = "?interval=1h&since=2026-11-01T00:00:00Z&until=2026-11-01T06:00:00Z&stats=mean,count&parameter=air_temperature_c"
	var fromRollups, fromRaw aggregateOf
	_, rb := get(t, path+q+"&source=rollups", nil, &fromRollups)
	_, wb := get(t, path+q+"&source=readings", nil, &fromRaw)
	if fromRollups.Source != "rollups" || fromRaw.Source != "readings" || !reflect.DeepEqual(fromRollups.Buckets, fromRaw.Buckets) {
		t.Errorf("rollups and raw differ:\n%s\n%s", rb, wb)
	}
	for i, bk := range fromRollups.Buckets {
		v := bk.Values[canon.AirTemperatureC]
		if _, ok := v["min"]; ok {
			t.Errorf("min given though not asked for")
		}
		empty := i >= 2 && i < 5
		if c := *num(t, v, "count"); (c == 0) != empty {
			t.Errorf("hour %d count %v (outage %v)", i, c, empty)
		}
	}

	for _, bad := range []struct{ query, param string }{
		{"?interval=2h", "interval"},
		{"?tz=Mars/Olympus", "tz"},
		{"?tz=Local", "tz"},
		{"?since=2026-11-02&until=2026-11-01", "until"},
		{"?interval=1h&days=60", "interval"},
		{"?parameter=bogus_ppm", "parameter"},
		{"?stats=median", "stats"},
		{"?days=3&since=2026-11-01", "days"},
	} {
		code, body := get(t, path+bad.query, nil, nil)
		if code != 400 || !strings.Contains(string(body), `\"`+bad.param+`\"`) {
			t.Errorf("%s: %d %s, want 400 naming %s", bad.query, code, body, bad.param)
		}
	}
	if code, _ := get(t, base+contract.AggregatePath("NOPE")+"?"+url.Values{"interval": {"1d"}}.Encode(), nil, nil); code != 404 {
		t.Errorf("unknown sensor: %d", code)
	}
}

func fmtVals(m map[string]*json.RawMessage) string {
	b, _ := json.Marshal(m)
	return string(b)
}
