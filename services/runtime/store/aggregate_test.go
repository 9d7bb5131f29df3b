package store_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/timebucket"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// windDirs circle around north, so a plain mean (~180) and the circular one (~0) differ.
var windDirs = []float64{350, 10, 355, 5, 340, 20, 0, 359}

// aggBatch is 10-minute readings of station id from start for n steps, skipping the
// steps in gap (an outage), with a temperature, a wind speed and a wind direction.
func aggBatch(id string, start time.Time, n int, gap func(i int) bool) store.Batch {
	b := store.Batch{Provider: "ndbc", Feed: "ndbc-realtime", FetchedAt: start.Add(time.Duration(n) * 10 * time.Minute),
		Stations: []contract.Station{{ExternalID: id, Name: "Aggregate test buoy", SensorType: "buoy", ReportingIntervalS: 600}}}
	for i := 0; i < n; i++ {
		if gap != nil && gap(i) {
			continue
		}
		ts := start.Add(time.Duration(i) * 10 * time.Minute)
		temp := 5 + math.Abs(float64(i%74-37))*0.25 // a triangle: no jump the QARTOD tests flag
		ms := []canon.Measurement{
			{Parameter: canon.AirTemperatureC, Value: temp, Unit: canon.Celsius, UnitOriginal: "degC", ValueOriginal: temp},
			{Parameter: canon.WindDirectionDeg, Value: windDirs[i%len(windDirs)], Unit: canon.Degrees, UnitOriginal: "degT", ValueOriginal: windDirs[i%len(windDirs)]},
		}
		if i%3 == 0 { // a parameter that is sometimes missing
			ws := float64(i%11) * 0.5
			ms = append(ms, canon.Measurement{Parameter: canon.WindSpeedMS, Value: ws, Unit: canon.MetersPerSec, UnitOriginal: "m/s", ValueOriginal: ws})
		}
		b.Observations = append(b.Observations, observation.Observation{StationID: id, Time: ts, Measurements: ms,
			Raw: []byte(`{"i":1}`), RawFormat: "ndbc.realtime2.stdmet"})
	}
	return b
}

// expected is what the test computes itself from the observations: per bucket key and
// parameter, the values.
func expected(obs []observation.Observation, key func(time.Time) string) map[string]map[string][]float64 {
	out := map[string]map[string][]float64{}
	for _, o := range obs {
		k := key(o.Time)
		if out[k] == nil {
			out[k] = map[string][]float64{}
		}
		for _, m := range o.Measurements {
			out[k][m.Parameter] = append(out[k][m.Parameter], m.Value)
		}
	}
	return out
}

// checkCell compares a cell with the values it should summarize.
func checkCell(t *testing.T, what string, c store.Cell, vals []float64, circular bool) {
	t.Helper()
	if c.N != int64(len(vals)) {
		t.Errorf("%s: count %d, want %d", what, c.N, len(vals))
		return
	}
	if len(vals) == 0 {
		return
	}
	lo, hi, sum, ss, sc := vals[0], vals[0], 0.0, 0.0, 0.0
	for _, v := range vals {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
		ss += math.Sin(v * math.Pi / 180)
		sc += math.Cos(v * math.Pi / 180)
	}
	if c.Min != lo || c.Max != hi || math.Abs(c.Sum/float64(c.N)-sum/float64(len(vals))) > 1e-9 {
		t.Errorf("%s: min %v max %v mean %v, want %v %v %v", what, c.Min, c.Max, c.Sum/float64(c.N), lo, hi, sum/float64(len(vals)))
	}
	if circular {
		got := math.Atan2(c.SumSin, c.SumCos) * 180 / math.Pi
		want := math.Atan2(ss, sc) * 180 / math.Pi
		if math.Abs(got-want) > 1e-9 || math.Abs(want) > 10 {
			t.Errorf("%s: circular mean %v, want %v (near north)", what, got, want)
		}
	}
}

// TestAggregateRollupsEqualRaw stores 10-minute readings over the New York DST change of
// 1 November 2026 (with a 3-hour outage) and checks, on both backends, that the rollups
// and the raw readings give the cells the test computes from the observations: local days
// of 24, 25 and 24 hours, UTC hours with the empty ones, and Kolkata's half-hour hours
// (raw only, since rollups are whole UTC hours).
func TestAggregateRollupsEqualRaw(t *testing.T) {
	t.Parallel()
	ny, _ := time.LoadLocation("America/New_York")
	kol, _ := time.LoadLocation("Asia/Kolkata")
	start := time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC)
	outage := func(i int) bool { return i >= 300 && i < 318 } // 3 hours from 2026-11-01T02:00Z
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		// Two batches (the second overlaps the first) so that rollups merge partial hours.
		all := aggBatch("AGG1", start, 6*24*5, outage)
		first := all
		first.Observations = all.Observations[:401]
		for _, b := range []store.Batch{first, all} {
			if _, err := s.Ingest(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		cases := []struct {
			name         string
			since, until time.Time
			iv           timebucket.Interval
			loc          *time.Location
			key          func(time.Time) string
			buckets      int
			sources      []string
		}{
			{"NY days", time.Date(2026, 10, 31, 0, 0, 0, 0, ny), time.Date(2026, 11, 3, 0, 0, 0, 0, ny), timebucket.Day, ny,
				func(t time.Time) string { return t.In(ny).Format("2006-01-02") }, 3, []string{store.SourceRollups, store.SourceRaw}},
			{"UTC hours", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC), timebucket.Hour1, time.UTC,
				func(t time.Time) string { return t.UTC().Format("2006-01-02T15") }, 8, []string{store.SourceRollups, store.SourceRaw}},
			{"NY 3h over DST", time.Date(2026, 11, 1, 0, 0, 0, 0, ny), time.Date(2026, 11, 2, 0, 0, 0, 0, ny), timebucket.Hour3, ny,
				func(t time.Time) string {
					l := t.In(ny)
					return l.Format("2006-01-02") + "/" + string(rune('0'+l.Hour()/3))
				}, 8, []string{store.SourceRollups, store.SourceRaw}},
			{"Kolkata hours", time.Date(2026, 11, 1, 0, 30, 0, 0, time.UTC), time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC), timebucket.Hour1, kol,
				func(t time.Time) string { return t.In(kol).Format("2006-01-02T15") }, 6, []string{store.SourceAuto}},
		}
		for _, c := range cases {
			bounds, err := timebucket.Bounds(c.since, c.until, c.iv, c.loc)
			if err != nil {
				t.Fatal(err)
			}
			if len(bounds)-1 != c.buckets {
				t.Fatalf("%s: %d buckets, want %d", c.name, len(bounds)-1, c.buckets)
			}
			want := expected(all.Observations, c.key)
			var results []store.AggregateResult
			for _, src := range c.sources {
				res, err := s.Aggregate(ctx, "AGG1", store.AggregateQuery{Bounds: bounds, Source: src})
				if err != nil {
					t.Fatalf("%s from %q: %v", c.name, src, err)
				}
				if src == store.SourceAuto && res.Source != store.SourceRaw {
					t.Errorf("%s: answered from %s, want raw readings", c.name, res.Source)
				}
				if len(res.Parameters) != 3 {
					t.Errorf("%s from %s: parameters %v", c.name, src, res.Parameters)
				}
				for _, p := range res.Parameters {
					for i, cell := range res.Cells[p] {
						checkCell(t, c.name+" "+res.Source+" "+p+" "+bounds[i].Format(time.RFC3339), cell, want[c.key(bounds[i])][p], p == canon.WindDirectionDeg)
					}
				}
				results = append(results, res)
			}
			if len(results) == 2 {
				for _, p := range results[0].Parameters {
					for i := range results[0].Cells[p] {
						a, b := results[0].Cells[p][i], results[1].Cells[p][i]
						if a.N != b.N || a.Min != b.Min || a.Max != b.Max || math.Abs(a.Sum-b.Sum) > 1e-9 ||
							math.Abs(a.SumSin-b.SumSin) > 1e-9 || math.Abs(a.SumCos-b.SumCos) > 1e-9 {
							t.Errorf("%s %s bucket %d: rollups %+v != raw %+v", c.name, p, i, a, b)
						}
					}
				}
			}
		}
		// The outage hours are empty buckets.
		bounds, _ := timebucket.Bounds(time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC), timebucket.Hour1, time.UTC)
		res, err := s.Aggregate(ctx, "AGG1", store.AggregateQuery{Bounds: bounds, Parameters: []string{canon.AirTemperatureC}})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range res.Cells[canon.AirTemperatureC] {
			if c.N != 0 {
				t.Errorf("outage hour %d has %d readings", i, c.N)
			}
		}
		if _, err := s.Aggregate(ctx, "nope", store.AggregateQuery{Bounds: bounds}); err == nil {
			t.Errorf("unknown station answered")
		}
	})
}
