package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/observation"
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
