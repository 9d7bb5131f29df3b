package store_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/timebucket"
	"github.com/sensorgate/sensorgate/services/adapters/ndbc"
	"github.com/sensorgate/sensorgate/services/internal/providerdata"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// ndbcFile parses a recorded NDBC stdmet file of TPLM2 into a batch named by the file.
func ndbcFile(t *testing.T, name string, fetched time.Time) store.Batch {
	t.Helper()
	dir := providerdata.Dir()
	if dir == "" {
		t.Fatalf("recorded provider payloads not found (testdata/providers)")
	}
	body, err := os.ReadFile(filepath.Join(dir, "ndbc", name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ndbc.Adapter().Parse(observation.Payload{Format: ndbc.FormatStdmet, StationID: "TPLM2", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return store.Batch{Provider: "ndbc", Feed: "ndbc-realtime", FetchedAt: fetched, Source: name, Stations: b.Stations, Observations: b.Observations}
}

func valueOf(t *testing.T, m json.RawMessage, param string) float64 {
	t.Helper()
	var ms []canon.Measurement
	if err := json.Unmarshal(m, &ms); err != nil {
		t.Fatal(err)
	}
	for _, x := range ms {
		if x.Parameter == param {
			return x.Value
		}
	}
	t.Fatalf("no %s in %s", param, m)
	return 0
}

// TestRevisionsNDBC ingests the recorded TPLM2 realtime file (45 days to 2022-08-13) and
// then the quality-controlled monthly file of July 2022, on both backends. On
// 2022-07-10 12:00 UTC realtime says wind 10 degT at 6.2 m/s, the QC'd file 14 degT at
// 6.4 m/s (read from the two files by eye): the QC'd value becomes current, the realtime
// one stays in the history with its file, a realtime replay changes nothing, and the
// hourly rollups follow (rollup answers equal raw answers after the revision).
func TestRevisionsNDBC(t *testing.T) {
	t.Parallel()
	at := time.Date(2022, 7, 10, 12, 0, 0, 0, time.UTC)
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		fetched := time.Date(2022, 8, 14, 0, 0, 0, 0, time.UTC)
		rt := ndbcFile(t, "TPLM2.txt", fetched)
		qc := ndbcFile(t, "tplm272022.txt", fetched.Add(time.Hour))
		if res, err := s.Ingest(ctx, rt); err != nil || res.Revised != 0 {
			t.Fatalf("realtime: %+v %v", res, err)
		}
		bounds, _ := timebucket.Bounds(time.Date(2022, 7, 10, 0, 0, 0, 0, time.UTC), time.Date(2022, 7, 11, 0, 0, 0, 0, time.UTC), timebucket.Hour1, time.UTC)
		before, err := s.Aggregate(ctx, "TPLM2", store.AggregateQuery{Bounds: bounds, Parameters: []string{canon.WindSpeedMS}, Source: store.SourceRollups})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Ingest(ctx, qc)
		if err != nil {
			t.Fatal(err)
		}
		if res.Revised == 0 {
			t.Fatalf("QC'd file revised nothing: %+v", res)
		}
		one := contract.ReadingsQuery{Since: at, Until: at.Add(time.Minute), Limit: 10, Page: 1, Revisions: true}
		rs, _, err := s.Readings(ctx, "TPLM2", one)
		if err != nil || len(rs) != 1 {
			t.Fatalf("reading at %s: %v %v", at, rs, err)
		}
		r := rs[0]
		if valueOf(t, r.Measurements, canon.WindDirectionDeg) != 14 || valueOf(t, r.Measurements, canon.WindSpeedMS) != 6.4 {
			t.Errorf("current value %s, want the QC'd 14 degT 6.4 m/s", r.Measurements)
		}
		if len(r.Revisions) != 1 {
			t.Fatalf("revisions %+v, want the realtime value", r.Revisions)
		}
		rev := r.Revisions[0]
		if valueOf(t, rev.Measurements, canon.WindDirectionDeg) != 10 || valueOf(t, rev.Measurements, canon.WindSpeedMS) != 6.2 ||
			rev.Source != "TPLM2.txt" || rev.SourceFormat != ndbc.RawRealtime2 || !rev.FetchedAt.Equal(fetched) ||
			rev.NewSource != "tplm272022.txt" || rev.NewFormat != ndbc.RawHistorical {
			t.Errorf("revision %+v (%s)", rev, rev.Measurements)
		}
		// Without revisions=true, none are attached.
		one.Revisions = false
		if rs, _, _ := s.Readings(ctx, "TPLM2", one); len(rs) != 1 || rs[0].Revisions != nil {
			t.Errorf("revisions attached without being asked for")
		}
		// A realtime replay and a QC'd replay change nothing.
		for _, b := range []store.Batch{rt, qc} {
			b.FetchedAt = b.FetchedAt.Add(24 * time.Hour)
			if res, err := s.Ingest(ctx, b); err != nil || res.Revised != 0 || res.Inserted != 0 {
				t.Errorf("replay of %s: %+v %v", b.Source, res, err)
			}
		}
		one.Revisions = true
		rs, _, _ = s.Readings(ctx, "TPLM2", one)
		if len(rs) != 1 || valueOf(t, rs[0].Measurements, canon.WindSpeedMS) != 6.4 || len(rs[0].Revisions) != 1 {
			t.Errorf("after replays: %+v", rs)
		}
		// The rollups follow: equal to the raw readings, and moved at 12:00.
		after, err := s.Aggregate(ctx, "TPLM2", store.AggregateQuery{Bounds: bounds, Parameters: []string{canon.WindSpeedMS}, Source: store.SourceRollups})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := s.Aggregate(ctx, "TPLM2", store.AggregateQuery{Bounds: bounds, Parameters: []string{canon.WindSpeedMS}, Source: store.SourceRaw})
		if err != nil {
			t.Fatal(err)
		}
		for i := range after.Cells[canon.WindSpeedMS] {
			a, w := after.Cells[canon.WindSpeedMS][i], raw.Cells[canon.WindSpeedMS][i]
			if a.N != w.N || a.Min != w.Min || a.Max != w.Max || abs(a.Sum-w.Sum) > 1e-9 {
				t.Errorf("hour %d: rollups %+v, raw %+v", i, a, w)
			}
		}
		if b12, a12 := before.Cells[canon.WindSpeedMS][12], after.Cells[canon.WindSpeedMS][12]; b12.Max == a12.Max && b12.Sum == a12.Sum {
			t.Errorf("12:00 rollup did not move: before %+v after %+v", b12, a12)
		}
	})
}

// TestRevisionsKeepBetterSource ingests the QC'd file first: the realtime file that comes
// later does not replace its values.
func TestRevisionsKeepBetterSource(t *testing.T) {
	t.Parallel()
	s := backends(t)["sqlite"](t)
	ctx := context.Background()
	fetched := time.Date(2022, 8, 14, 0, 0, 0, 0, time.UTC)
	if _, err := s.Ingest(ctx, ndbcFile(t, "tplm272022.txt", fetched)); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Ingest(ctx, ndbcFile(t, "TPLM2.txt", fetched.Add(time.Hour))); err != nil || res.Revised != 0 {
		t.Fatalf("realtime after QC'd: %+v %v", res, err)
	}
	at := time.Date(2022, 7, 10, 12, 0, 0, 0, time.UTC)
	rs, _, err := s.Readings(ctx, "TPLM2", contract.ReadingsQuery{Since: at, Until: at.Add(time.Minute), Limit: 1, Page: 1, Revisions: true})
	if err != nil || len(rs) != 1 || valueOf(t, rs[0].Measurements, canon.WindSpeedMS) != 6.4 || len(rs[0].Revisions) != 0 {
		t.Fatalf("reading %+v %v, want the QC'd value without history", rs, err)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
