package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/sensorgate/sensorgate/pkg/canon"
)

const hourMs = 3_600_000

// Cell is the additive summary of a set of values of one parameter: what an hourly
// rollup row holds and what an aggregate bucket is summed into, whichever way (SQL over
// rollups or Go over raw readings) it was computed. SumSin and SumCos are kept for
// directions only (parameters in degrees), for the circular mean.
type Cell struct {
	N              int64
	Sum, Min, Max  float64
	SumSin, SumCos float64
}

// Circular reports whether a parameter is a direction, averaged as a vector.
func Circular(param string) bool {
	p, ok := canon.Lookup(param)
	return ok && p.Unit == canon.Degrees
}

// Add puts one value into c.
func (c *Cell) Add(v float64, circular bool) {
	if c.N == 0 || v < c.Min {
		c.Min = v
	}
	if c.N == 0 || v > c.Max {
		c.Max = v
	}
	c.N++
	c.Sum += v
	if circular {
		s, co := math.Sincos(v * math.Pi / 180)
		c.SumSin += s
		c.SumCos += co
	}
}

// Merge adds o into c.
func (c *Cell) Merge(o Cell) {
	if o.N == 0 {
		return
	}
	if c.N == 0 || o.Min < c.Min {
		c.Min = o.Min
	}
	if c.N == 0 || o.Max > c.Max {
		c.Max = o.Max
	}
	c.N += o.N
	c.Sum += o.Sum
	c.SumSin += o.SumSin
	c.SumCos += o.SumCos
}

// rollupKey names one rollup row.
type rollupKey struct {
	station int32
	param   string
	hour    int64
}

// rollupRow is one rollup row to write.
type rollupRow struct {
	rollupKey
	Cell
}

// hourOf is the start of the UTC hour of ts (epoch ms).
func hourOf(ts int64) int64 { return ts - ((ts%hourMs)+hourMs)%hourMs }

// addRollups sums measurements taken at ts into the hourly cells of station.
func addRollups(cells map[rollupKey]*Cell, station int32, ts int64, ms []canon.Measurement) {
	h := hourOf(ts)
	for _, m := range ms {
		k := rollupKey{station, m.Parameter, h}
		c := cells[k]
		if c == nil {
			c = &Cell{}
			cells[k] = c
		}
		c.Add(m.Value, Circular(m.Parameter))
	}
}

// sortedRollups orders cells by key, so that concurrent writers lock rows in one order.
func sortedRollups(cells map[rollupKey]*Cell) []rollupRow {
	out := make([]rollupRow, 0, len(cells))
	for k, c := range cells {
		out = append(out, rollupRow{k, *c})
	}
	slices.SortFunc(out, func(a, b rollupRow) int {
		return cmp.Or(cmp.Compare(a.station, b.station), cmp.Compare(a.param, b.param), cmp.Compare(a.hour, b.hour))
	})
	return out
}

// rollupMerge is the upsert that adds a new hour's partial summary to the stored one.
// Only sums, LEAST/GREATEST (MIN/MAX in SQLite): a new reading never needs the others.
func rollupMerge(least, greatest string) string {
	return ` ON CONFLICT (station, param, hour) DO UPDATE SET n = rollups.n + excluded.n,
		total = rollups.total + excluded.total, lo = ` + least + `(rollups.lo, excluded.lo), hi = ` + greatest + `(rollups.hi, excluded.hi),
		ssin = rollups.ssin + excluded.ssin, scos = rollups.scos + excluded.scos`
}

// addRollupRows merges rows into the stored rollups (PostgreSQL: one statement).
func (t pgTx) addRollupRows(ctx context.Context, rows []rollupRow) error {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	st, hr, cnt := make([]int32, n), make([]int64, n), make([]int64, n)
	pm := make([]string, n)
	sum, lo, hi, ss, sc := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, r := range rows {
		st[i], pm[i], hr[i], cnt[i] = r.station, r.param, r.hour, r.N
		sum[i], lo[i], hi[i], ss[i], sc[i] = r.Sum, r.Min, r.Max, r.SumSin, r.SumCos
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO rollups (station, param, hour, n, total, lo, hi, ssin, scos)
		SELECT * FROM unnest($1::int4[], $2::text[], $3::int8[], $4::int8[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::float8[])`+
		rollupMerge("LEAST", "GREATEST"), st, pm, hr, cnt, sum, lo, hi, ss, sc)
	if err != nil {
		return fmt.Errorf("ingest: rollups: %w", err)
	}
	return nil
}

// addRollupRows merges rows into the stored rollups (SQLite: in-process, a statement each).
func (t sqlTx) addRollupRows(ctx context.Context, rows []rollupRow) error {
	if len(rows) == 0 {
		return nil
	}
	stmt, err := t.tx.PrepareContext(ctx, `INSERT INTO rollups (station, param, hour, n, total, lo, hi, ssin, scos)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`+rollupMerge("MIN", "MAX"))
	if err != nil {
		return fmt.Errorf("ingest: rollups: %w", err)
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, r.station, r.param, r.hour, r.N, r.Sum, r.Min, r.Max, r.SumSin, r.SumCos); err != nil {
			return fmt.Errorf("ingest: rollups: %w", err)
		}
	}
	return nil
}

// recomputeHours rewrites the rollups of station's hours (epoch ms of their starts) from
// the stored readings: what a revised reading needs, since a minimum or maximum cannot be
// taken back. It runs after the revision's transaction committed, in its own.
func (s *sqlStore) recomputeHours(ctx context.Context, st stationRec, hours []int64) error {
	slices.Sort(hours)
	hours = slices.Compact(hours)
	cells := map[rollupKey]*Cell{}
	for _, h := range hours {
		err := s.scanRange(ctx, st, h, h+hourMs, false, func(r Reading) error {
			var ms []canon.Measurement
			if err := json.Unmarshal(r.Measurements, &ms); err != nil {
				return fmt.Errorf("reading %d of %q: %w", r.Time.UnixMilli(), st.ExternalID, err)
			}
			addRollups(cells, st.key, r.Time.UnixMilli(), ms)
			return nil
		})
		if err != nil {
			return err
		}
	}
	rows := sortedRollups(cells)
	return s.d.inTx(ctx, func(tx txn) error {
		for _, h := range hours {
			if _, err := tx.exec(ctx, s.q(`DELETE FROM rollups WHERE station = ? AND hour = ?`), st.key, h); err != nil {
				return fmt.Errorf("rollups of %q: %w", st.ExternalID, err)
			}
		}
		return tx.addRollupRows(ctx, rows)
	})
}

// rebuildRollups computes the rollups of every stored reading, station by station: the
// one-time job for readings stored before rollups existed (store_jobs).
func (s *sqlStore) rebuildRollups(ctx context.Context) error {
	var pending int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM store_jobs WHERE name = 'rebuild_rollups'`).Scan(&pending); err != nil {
		return fmt.Errorf("store jobs: %w", err)
	}
	if pending == 0 {
		return nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	sts, _, err := s.Stations(ctx, StationFilter{})
	if err != nil {
		return err
	}
	for _, c := range sts {
		st, err := s.station(ctx, c.ExternalID)
		if err != nil {
			return err
		}
		cells := map[rollupKey]*Cell{}
		err = s.scanRange(ctx, st, math.MinInt64, math.MaxInt64, false, func(r Reading) error {
			var ms []canon.Measurement
			if err := json.Unmarshal(r.Measurements, &ms); err != nil {
				return fmt.Errorf("reading %d of %q: %w", r.Time.UnixMilli(), st.ExternalID, err)
			}
			addRollups(cells, st.key, r.Time.UnixMilli(), ms)
			return nil
		})
		if err != nil {
			return fmt.Errorf("rebuild rollups: %w", err)
		}
		rows := sortedRollups(cells)
		if err := s.d.inTx(ctx, func(tx txn) error {
			if _, err := tx.exec(ctx, s.q(`DELETE FROM rollups WHERE station = ?`), st.key); err != nil {
				return err
			}
			return tx.addRollupRows(ctx, rows)
		}); err != nil {
			return fmt.Errorf("rebuild rollups of %q: %w", st.ExternalID, err)
		}
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM store_jobs WHERE name = 'rebuild_rollups'`); err != nil {
		return fmt.Errorf("store jobs: %w", err)
	}
	s.log.Info("store: rollups rebuilt from stored readings", "stations", len(sts))
	return nil
}
