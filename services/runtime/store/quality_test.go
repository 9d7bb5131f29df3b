package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/qc"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// waterBatch is 10-minute water temperatures of station id from start, one per value,
// in format (ndbc.realtime2.stdmet or ndbc.historical.stdmet).
func waterBatch(id, format string, start time.Time, values ...float64) store.Batch {
	b := store.Batch{Provider: "ndbc", Feed: "ndbc-realtime", FetchedAt: start.Add(time.Duration(len(values)) * 10 * time.Minute)}
	for i, v := range values {
		m, err := canon.Normalize(canon.WaterTemperatureC, v, "degC")
		if err != nil {
			panic(err)
		}
		if format == "ndbc.realtime2.stdmet" {
			m.Mark(canon.FlagNotEvaluated, canon.ProviderPreliminary)
		}
		b.Observations = append(b.Observations, observation.Observation{StationID: id, Time: start.Add(time.Duration(i) * 10 * time.Minute),
			Measurements: []canon.Measurement{m}, Raw: json.RawMessage(`{"v":1}`), RawFormat: format})
	}
	return b
}

// qualities reads back every reading's water temperature quality, oldest first.
func qualities(t *testing.T, s store.Store, id string) []canon.QC {
	t.Helper()
	rs, _, err := s.Readings(context.Background(), id, contract.ReadingsQuery{Limit: 500, Page: 1, Ascending: true, Format: contract.FormatCleaned})
	if err != nil {
		t.Fatal(err)
	}
	var out []canon.QC
	for _, r := range rs {
		var ms []canon.Measurement
		if err := json.Unmarshal(r.Measurements, &ms); err != nil || len(ms) != 1 || ms[0].QC == nil {
			t.Fatalf("reading %v: %s (%v)", r.Time, r.Measurements, err)
		}
		out = append(out, *ms[0].QC)
	}
	return out
}

func flagsOf(qs []canon.QC) []int {
	out := make([]int, len(qs))
	for i, q := range qs {
		out[i] = q.Flag
	}
	return out
}

// The tests run at ingest: the first reading is not evaluated, a spike fails, the series
// continues across batches from the cache and, after a restart, from the stored
// readings, with the same flags either way; a gap starts over.
func TestQualityFlagsAtIngest(t *testing.T) {
	t.Parallel()
	for name, opts := range backendOptions {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			o := opts(t)
			t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
			s := open(t, o)
			// A backfill with a spike (30.0 between 20.2 and 20.3).
			if _, err := s.Ingest(ctx, waterBatch("Q1", "ndbc.historical.stdmet", t0, 20.0, 20.1, 20.2, 30.0, 20.3)); err != nil {
				t.Fatal(err)
			}
			// Live polls, one reading each: from the cached tracks.
			for i, v := range []float64{20.4, 26.0} {
				if _, err := s.Ingest(ctx, waterBatch("Q1", "ndbc.historical.stdmet", t0.Add(time.Duration(5+i)*10*time.Minute), v)); err != nil {
					t.Fatal(err)
				}
			}
			// A restart: the next poll's context comes from the stored readings.
			_ = s.Close()
			s = open(t, o)
			if _, err := s.Ingest(ctx, waterBatch("Q1", "ndbc.historical.stdmet", t0.Add(70*time.Minute), 26.1)); err != nil {
				t.Fatal(err)
			}
			// After a gap longer than the window (3 h): not evaluated again.
			if _, err := s.Ingest(ctx, waterBatch("Q1", "ndbc.historical.stdmet", t0.Add(6*time.Hour), 10.0)); err != nil {
				t.Fatal(err)
			}
			qs := qualities(t, s, "Q1")
			// 26.1 after the restart passes only if the tests saw the stored 26.0.
			want := []int{2, 1, 1, 4, 1, 1, 3, 1, 2}
			if got := flagsOf(qs); !slices.Equal(got, want) {
				t.Fatalf("flags = %v, want %v (%+v)", got, want, qs)
			}
			if !slices.Equal(qs[3].Failed, []string{canon.TestSpike, canon.TestRateOfChange}) || len(qs[4].Failed) != 0 {
				t.Fatalf("spike failed %v, the value after it %v", qs[3].Failed, qs[4].Failed)
			}
		})
	}
}

// A quality-controlled file that supersedes realtime values changes their flags (no more
// provider_preliminary), and the history keeps the earlier flags as it keeps values.
func TestRevisionKeepsEarlierFlags(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
		if _, err := s.Ingest(ctx, waterBatch("R1", "ndbc.realtime2.stdmet", t0, 20.0, 20.1, 20.2)); err != nil {
			t.Fatal(err)
		}
		res, err := s.Ingest(ctx, waterBatch("R1", "ndbc.historical.stdmet", t0, 20.0, 20.1, 20.2))
		if err != nil || res.Revised != 3 {
			t.Fatalf("historical file: %+v, %v; want 3 revised (same values, new flags)", res, err)
		}
		rs, _, err := s.Readings(ctx, "R1", contract.ReadingsQuery{Limit: 10, Page: 1, Ascending: true, Format: contract.FormatCleaned, Revisions: true})
		if err != nil || len(rs) != 3 {
			t.Fatalf("readings: %d, %v", len(rs), err)
		}
		var cur, old []canon.Measurement
		if err := json.Unmarshal(rs[1].Measurements, &cur); err != nil || len(rs[1].Revisions) != 1 {
			t.Fatalf("reading 1: %s, %d revisions (%v)", rs[1].Measurements, len(rs[1].Revisions), err)
		}
		if err := json.Unmarshal(rs[1].Revisions[0].Measurements, &old); err != nil {
			t.Fatal(err)
		}
		if q := cur[0].Quality(); q.Flag != canon.FlagPass || len(q.Failed) != 0 {
			t.Fatalf("verified value = %+v, want pass", q)
		}
		if q := old[0].Quality(); q.Flag != canon.FlagNotEvaluated || !slices.Equal(q.Failed, []string{canon.ProviderPreliminary}) {
			t.Fatalf("superseded value = %+v, want 2 provider_preliminary", q)
		}
	})
}

// Aggregates leave out suspect and failed values by default, from the rollups and from
// the readings alike, and count them per bucket; qc=all keeps them.
func TestAggregateExcludesFlagged(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
		if _, err := s.Ingest(ctx, waterBatch("A1", "ndbc.historical.stdmet", t0, 20.0, 20.1, 20.2, 30.0, 20.3, 20.4)); err != nil {
			t.Fatal(err)
		}
		bounds := []time.Time{t0, t0.Add(time.Hour)}
		for _, src := range []string{store.SourceRollups, store.SourceRaw} {
			res, err := s.Aggregate(ctx, "A1", store.AggregateQuery{Bounds: bounds, Source: src})
			if err != nil {
				t.Fatal(err)
			}
			c, x := res.Cells[canon.WaterTemperatureC][0], res.Excluded[canon.WaterTemperatureC]
			if c.N != 5 || c.Max != 20.4 || len(x) != 1 || x[0] != 1 {
				t.Fatalf("%s: cell %+v, excluded %v; want 5 values up to 20.4 and the spike excluded", src, c, x)
			}
		}
		res, err := s.Aggregate(ctx, "A1", store.AggregateQuery{Bounds: bounds, QC: contract.QCAll})
		if err != nil || res.Source != store.SourceRaw {
			t.Fatalf("qc=all: %+v, %v; want it answered from the readings", res, err)
		}
		if c := res.Cells[canon.WaterTemperatureC][0]; c.N != 6 || c.Max != 30 || res.Excluded[canon.WaterTemperatureC] != nil {
			t.Fatalf("qc=all: %+v, excluded %v", c, res.Excluded)
		}
		if _, err := s.Aggregate(ctx, "A1", store.AggregateQuery{Bounds: bounds, QC: contract.QCAll, Source: store.SourceRollups}); err == nil {
			t.Fatal("qc=all from the rollups: want an error")
		}
	})
}

// Batches ingested concurrently share the store's cached tracks (guarded by its write
// lock): under -race, four writers of four stations each get the flags a lone writer
// gets.
func TestQualityConcurrentIngest(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
		values := []float64{20.0, 20.1, 26.5, 20.2, 20.3, 20.2, 20.1, 20.0}
		errs := make(chan error, 4)
		for w := 0; w < 4; w++ {
			go func() {
				id := fmt.Sprintf("C%d", w)
				for i, v := range values {
					if _, err := s.Ingest(ctx, waterBatch(id, "ndbc.historical.stdmet", t0.Add(time.Duration(i)*10*time.Minute), v)); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		for w := 0; w < 4; w++ {
			if got := flagsOf(qualities(t, s, fmt.Sprintf("C%d", w))); !slices.Equal(got, []int{2, 1, 4, 1, 1, 1, 1, 1}) {
				t.Fatalf("station C%d flags %v, want [2 1 4 1 1 1 1 1]", w, got)
			}
		}
	})
}

// The flags stored are those of qc.Assess over each station's whole series, whatever
// the batches: backfills and polls of random sizes, rows out of order within a batch,
// stations missing from some batches, provider marks, gaps, spikes and flat runs. (The
// store steps the measurements of a batch in time order and continues from its cached
// tracks; this holds it to the series the tests are defined on.)
func TestQualityFlagsMatchSeries(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(31, 7))
		params := []struct {
			id, unit string
			base     float64
		}{
			{canon.WaterTemperatureC, "degC", 20}, {canon.AirTemperatureC, "degC", 15}, {canon.WindDirectionDeg, "degT", 350},
			{canon.WindGustMS, "m/s", 8}, {canon.WaterLevelM, "m", 1}, {canon.PM25, "ug/m3", 12}, {canon.AQI, "", 40},
		}
		const stations = 6
		type value struct {
			ms int64
			m  canon.Measurement // as ingested
		}
		series := map[string]map[string][]value{} // station, parameter
		next := make([]time.Time, stations)
		level := make([][]float64, stations)
		for st := range stations {
			next[st] = time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(st) * time.Minute)
			level[st] = make([]float64, len(params))
			for p := range params {
				level[st][p] = params[p].base
			}
			series[fmt.Sprintf("E%d", st)] = map[string][]value{}
		}
		for batch := 0; batch < 40; batch++ {
			b := store.Batch{Provider: "ndbc", Feed: "ndbc-historical"}
			per := 1 + rng.IntN(30)
			if batch%3 == 0 {
				per = 1 // a poll
			}
			for st := range stations {
				if rng.IntN(4) == 0 {
					continue // not in this batch
				}
				id := fmt.Sprintf("E%d", st)
				for range per {
					step := time.Duration(5+rng.IntN(20)) * time.Minute
					if rng.IntN(40) == 0 {
						step = time.Duration(2+rng.IntN(5)) * time.Hour // a gap
					}
					next[st] = next[st].Add(step)
					var ms []canon.Measurement
					for p, pr := range params {
						if rng.IntN(10) == 0 {
							continue // missing this time
						}
						switch r := rng.IntN(30); {
						case r == 0:
							level[st][p] = pr.base * (1 + 2*rng.Float64()) // a spike or a jump
						case r < 12 || st == 0 && r < 29:
							// flat (station E0 mostly: flat-line runs)
						default:
							level[st][p] += (rng.Float64() - 0.5) * pr.base / 50
						}
						cp, _ := canon.Lookup(pr.id)
						level[st][p] = min(max(level[st][p], cp.Min), cp.Max) // the physical range
						v := level[st][p]
						if pr.id == canon.WindDirectionDeg {
							v = float64(int(v) % 360)
						}
						unit := pr.unit
						if unit == "" {
							unit = canon.Dimensionless
						}
						m, err := canon.Normalize(pr.id, v, unit)
						if err != nil {
							t.Fatalf("%s %g %s: %v", pr.id, v, unit, err)
						}
						switch rng.IntN(12) {
						case 0:
							m.Mark(canon.FlagNotEvaluated, canon.ProviderPreliminary)
						case 1:
							m.Mark(canon.FlagSuspect, canon.ProviderFlagged)
						}
						ms = append(ms, m)
						series[id][pr.id] = append(series[id][pr.id], value{next[st].UnixMilli(), m})
					}
					b.Observations = append(b.Observations, observation.Observation{StationID: id, Time: next[st],
						Measurements: ms, Raw: json.RawMessage(`{"v":1}`), RawFormat: "ndbc.historical.stdmet"})
				}
			}
			if len(b.Observations) == 0 {
				continue
			}
			rng.Shuffle(len(b.Observations), func(i, j int) { b.Observations[i], b.Observations[j] = b.Observations[j], b.Observations[i] })
			b.FetchedAt = next[0].Add(time.Hour)
			if _, err := s.Ingest(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		for id, byParam := range series {
			// What qc.Assess gives the whole series, marked as the store marks.
			want := map[int64]map[string]canon.QC{}
			for p, vs := range byParam {
				pts := make([]qc.Point, len(vs))
				for i := range vs {
					m := vs[i].m
					if m.QC != nil {
						q := *m.QC
						q.Failed = slices.Clone(q.Failed)
						m.QC = &q
					}
					pts[i] = qc.Point{Ms: vs[i].ms, Value: m.Value, M: &m}
				}
				var tr qc.Track
				qc.Assess(p, &tr, pts)
				for _, pt := range pts {
					if pt.M.QC == nil {
						pt.M.Mark(canon.FlagNotEvaluated, "")
					}
					if want[pt.Ms] == nil {
						want[pt.Ms] = map[string]canon.QC{}
					}
					want[pt.Ms][p] = *pt.M.QC
				}
			}
			rs, _, err := s.Readings(ctx, id, contract.ReadingsQuery{Limit: 5000, Page: 1, Ascending: true, Format: contract.FormatCleaned})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != len(want) {
				t.Fatalf("%s: %d readings stored, want %d", id, len(rs), len(want))
			}
			for _, r := range rs {
				var ms []canon.Measurement
				if err := json.Unmarshal(r.Measurements, &ms); err != nil {
					t.Fatal(err)
				}
				w := want[r.Time.UnixMilli()]
				if len(ms) != len(w) {
					t.Fatalf("%s %v: %d measurements, want %d", id, r.Time, len(ms), len(w))
				}
				for _, m := range ms {
					if q := w[m.Parameter]; m.QC == nil || m.QC.Flag != q.Flag || !slices.Equal(m.QC.Failed, q.Failed) || m.QC.Failed == nil {
						t.Fatalf("%s %v %s: quality %+v, want %+v", id, r.Time, m.Parameter, m.QC, q)
					}
				}
			}
		}
	})
}
