package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/timebucket"
	"github.com/sensorgate/sensorgate/services/observation"
)

// A database whose rollups are one row per station, parameter and hour (migrations up to
// 0004) migrates at Open to one row per station-hour (0008): on PostgreSQL the rows are
// converted in SQL, on SQLite the hours are summed again from the readings. Either way
// the rollups then answer what the raw readings answer, and what the test computes from
// the values it stored, a direction around north included.
func TestMigrateRollupsToStationHours(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	const n = 30 // five hours of 10-minute readings
	dirs := []float64{350, 10, 355, 5, 340, 20}
	type reading struct {
		ts   int64
		meas []canon.Measurement
	}
	var rs []reading
	for i := 0; i < n; i++ {
		ms := []canon.Measurement{
			{Parameter: canon.WindDirectionDeg, Value: dirs[i%len(dirs)], Unit: canon.Degrees, UnitOriginal: "degT", ValueOriginal: dirs[i%len(dirs)]},
			{Parameter: canon.WindSpeedMS, Value: float64(i%7) * 0.5, Unit: canon.MetersPerSec, UnitOriginal: "m/s", ValueOriginal: float64(i%7) * 0.5},
		}
		if i%4 == 0 { // sometimes missing
			ms = append(ms, canon.Measurement{Parameter: canon.AirTemperatureC, Value: 4 + float64(i)/8, Unit: canon.Celsius, UnitOriginal: "degC", ValueOriginal: 4 + float64(i)/8})
		}
		rs = append(rs, reading{start.Add(time.Duration(i) * 10 * time.Minute).UnixMilli(), ms})
	}
	// The old rollup rows, as the one-row-per-parameter code wrote them.
	old := map[string]map[int64]*Cell{}
	for _, r := range rs {
		for _, m := range r.meas {
			if old[m.Parameter] == nil {
				old[m.Parameter] = map[int64]*Cell{}
			}
			c := old[m.Parameter][hourOf(r.ts)]
			if c == nil {
				c = &Cell{}
				old[m.Parameter][hourOf(r.ts)] = c
			}
			c.Add(m.Value, Circular(m.Parameter))
		}
	}
	fill := func(t *testing.T, db *sql.DB, ph func(int) string) {
		t.Helper()
		mustExec(t, db, `INSERT INTO stations (skey, external_id, external_upper, provider, feed, name, updated_ms, last_reading_ms, reading_count)
			VALUES (1, 'OLD1', 'OLD1', 'ndbc', 'ndbc', 'Old', 0, `+ph(1)+`, `+ph(2)+`)`, rs[n-1].ts, n)
		for _, r := range rs {
			b, _ := json.Marshal(r.meas)
			mustExec(t, db, `INSERT INTO readings (station, ts, fetched_ms, measurements) VALUES (1, `+ph(1)+`, `+ph(2)+`, `+ph(3)+`)`, r.ts, r.ts, b)
		}
		for p, hours := range old {
			for h, c := range hours {
				mustExec(t, db, fmt.Sprintf(`INSERT INTO rollups (station, param, hour, n, total, lo, hi, ssin, scos) VALUES (1, %s, %s, %s, %s, %s, %s, %s, %s)`,
					ph(1), ph(2), ph(3), ph(4), ph(5), ph(6), ph(7), ph(8)), p, h, c.N, c.Sum, c.Min, c.Max, c.SumSin, c.SumCos)
			}
		}
	}
	bounds := make([]time.Time, 0, 6)
	for h := 0; h <= 5; h++ {
		bounds = append(bounds, start.Add(time.Duration(h)*time.Hour))
	}
	eachOldDatabase(t, 4, start, fill, func(t *testing.T, s Store) {
		var rows int
		if err := s.(*sqlStore).db.QueryRowContext(ctx, `SELECT count(*) FROM rollups`).Scan(&rows); err != nil || rows != 5 {
			t.Fatalf("rollup rows after migration: %d (want one per station-hour, 5), %v", rows, err)
		}
		roll, err := s.Aggregate(ctx, "OLD1", AggregateQuery{Bounds: bounds, Source: SourceRollups})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := s.Aggregate(ctx, "OLD1", AggregateQuery{Bounds: bounds, Source: SourceRaw})
		if err != nil {
			t.Fatal(err)
		}
		if len(roll.Parameters) != 3 || len(raw.Parameters) != 3 {
			t.Fatalf("parameters: rollups %v, raw %v", roll.Parameters, raw.Parameters)
		}
		ms := timebucket.Millis(bounds)
		for _, p := range raw.Parameters {
			for i := range ms[:len(ms)-1] {
				want := old[p][ms[i]]
				if want == nil {
					want = &Cell{}
				}
				if a, b := roll.Cells[p][i], raw.Cells[p][i]; !closeCells(a, b) || !closeCells(a, *want) {
					t.Errorf("%s hour %d: rollups %+v, raw %+v, computed %+v", p, i, a, b, *want)
				}
			}
		}
		// Ingest after the migration adds to the converted hours (a reading of hour 4).
		ts := time.UnixMilli(rs[n-1].ts).Add(5 * time.Minute)
		ws, _ := canon.Normalize(canon.WindSpeedMS, 9, "m/s")
		if _, err := s.Ingest(ctx, Batch{Provider: "ndbc", Observations: []observation.Observation{{StationID: "OLD1", Time: ts,
			Measurements: []canon.Measurement{ws}, Raw: json.RawMessage(`{}`), RawFormat: "old.v1"}}}); err != nil {
			t.Fatal(err)
		}
		after, err := s.Aggregate(ctx, "OLD1", AggregateQuery{Bounds: bounds, Parameters: []string{canon.WindSpeedMS}, Source: SourceRollups})
		if err != nil {
			t.Fatal(err)
		}
		if c, w := after.Cells[canon.WindSpeedMS][4], old[canon.WindSpeedMS][ms[4]]; c.N != w.N+1 || c.Max != 9 || c.Sum != w.Sum+9 {
			t.Errorf("hour 4 after a new reading: %+v, before %+v", c, *w)
		}
	})
}

// closeCells compares cells up to float rounding of the sums.
func closeCells(a, b Cell) bool {
	near := func(x, y float64) bool { return x == y || (x-y < 1e-9 && y-x < 1e-9) }
	return a.N == b.N && (a.N == 0 || (a.Min == b.Min && a.Max == b.Max && near(a.Sum, b.Sum) && near(a.SumSin, b.SumSin) && near(a.SumCos, b.SumCos)))
}
