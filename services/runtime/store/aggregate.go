package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/timebucket"
)

// Aggregate sources.
const (
	// SourceAuto reads the rollups when every bucket is whole UTC hours, raw readings
	// otherwise.
	SourceAuto = ""
	// SourceRollups and SourceRaw force one way (tests compare them).
	SourceRollups = "rollups"
	SourceRaw     = "readings"
)

// AggregateQuery asks for the cells of a station's readings per bucket.
type AggregateQuery struct {
	// Bounds are the bucket boundaries (package timebucket): bucket i is
	// [Bounds[i], Bounds[i+1]).
	Bounds []time.Time
	// Parameters limits the answer (empty: every parameter found in the range).
	Parameters []string
	Source     string
}

// AggregateResult holds, per parameter, one Cell per bucket (N = 0 for an empty bucket).
type AggregateResult struct {
	Station contract.Station
	// Parameters are the parameters answered, sorted (the requested ones, or those found).
	Parameters []string
	Cells      map[string][]Cell
	// Source is the way it was computed (SourceRollups or SourceRaw).
	Source string
}

// Aggregate implements Reader.
func (s *sqlStore) Aggregate(ctx context.Context, externalID string, q AggregateQuery) (AggregateResult, error) {
	st, err := s.station(ctx, externalID)
	if err != nil {
		return AggregateResult{}, err
	}
	if len(q.Bounds) < 2 {
		return AggregateResult{}, fmt.Errorf("aggregate of %q: no buckets", externalID)
	}
	res := AggregateResult{Station: st.Station, Cells: map[string][]Cell{}}
	for _, p := range q.Parameters {
		res.Cells[p] = make([]Cell, len(q.Bounds)-1)
	}
	bounds := timebucket.Millis(q.Bounds)
	src := q.Source
	if src == SourceAuto {
		src = SourceRaw
		if timebucket.WholeHours(q.Bounds) {
			src = SourceRollups
		}
	}
	res.Source = src
	want := func(p string) bool { return len(q.Parameters) == 0 || slices.Contains(q.Parameters, p) }
	cellOf := func(p string, i int) *Cell {
		cs, ok := res.Cells[p]
		if !ok {
			cs = make([]Cell, len(q.Bounds)-1)
			res.Cells[p] = cs
		}
		return &cs[i]
	}
	switch src {
	case SourceRollups:
		if s.d.name == "postgres" {
			err = s.aggregateRollupsSQL(ctx, st, bounds, q.Parameters, cellOf)
		} else {
			err = s.aggregateRollupsGo(ctx, st, bounds, want, cellOf)
		}
	case SourceRaw:
		err = s.scanRange(ctx, st, bounds[0], bounds[len(bounds)-1], false, func(r Reading) error {
			var ms []canon.Measurement
			if err := json.Unmarshal(r.Measurements, &ms); err != nil {
				return fmt.Errorf("reading %s of %q: %w", r.Time.Format(time.RFC3339), st.ExternalID, err)
			}
			i := timebucket.IndexMs(bounds, r.Time.UnixMilli())
			if i < 0 {
				return nil
			}
			for _, m := range ms {
				if want(m.Parameter) {
					cellOf(m.Parameter, i).Add(m.Value, Circular(m.Parameter))
				}
			}
			return nil
		})
	default:
		return res, fmt.Errorf("aggregate: unknown source %q", src)
	}
	if err != nil {
		return res, fmt.Errorf("aggregate of %q: %w", externalID, err)
	}
	for p := range res.Cells {
		res.Parameters = append(res.Parameters, p)
	}
	slices.Sort(res.Parameters)
	return res, nil
}

// aggregateRollupsSQL sums the rollup rows into buckets in PostgreSQL: width_bucket
// places each hour among the boundaries, so the bucket rule is the one of package
// timebucket, and only one row per bucket and parameter comes back.
func (s *sqlStore) aggregateRollupsSQL(ctx context.Context, st stationRec, bounds []int64, params []string, cellOf func(string, int) *Cell) error {
	q := `SELECT width_bucket(hour, $1::int8[]) AS b, param, sum(n)::int8, sum(total), min(lo), max(hi), sum(ssin), sum(scos)
		FROM rollups WHERE station = $2 AND hour >= $3 AND hour < $4`
	args := []any{bounds, st.key, bounds[0], bounds[len(bounds)-1]}
	if len(params) > 0 {
		q += ` AND param = ANY($5::text[])`
		args = append(args, params)
	}
	q += ` GROUP BY 1, 2`
	rows, err := s.d.query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("rollups: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			b int
			p string
			c Cell
		)
		if err := rows.Scan(&b, &p, &c.N, &c.Sum, &c.Min, &c.Max, &c.SumSin, &c.SumCos); err != nil {
			return fmt.Errorf("rollups: %w", err)
		}
		if b < 1 || b >= len(bounds) {
			continue
		}
		cellOf(p, b-1).Merge(c)
	}
	return rows.Err()
}

// aggregateRollupsGo sums the same rollup rows into buckets in Go (SQLite has no
// width_bucket), with the same boundaries.
func (s *sqlStore) aggregateRollupsGo(ctx context.Context, st stationRec, bounds []int64, want func(string) bool, cellOf func(string, int) *Cell) error {
	rows, err := s.d.query(ctx, s.q(`SELECT hour, param, n, total, lo, hi, ssin, scos FROM rollups
		WHERE station = ? AND hour >= ? AND hour < ? ORDER BY hour`), st.key, bounds[0], bounds[len(bounds)-1])
	if err != nil {
		return fmt.Errorf("rollups: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			h int64
			p string
			c Cell
		)
		if err := rows.Scan(&h, &p, &c.N, &c.Sum, &c.Min, &c.Max, &c.SumSin, &c.SumCos); err != nil {
			return fmt.Errorf("rollups: %w", err)
		}
		if !want(p) {
			continue
		}
		if i := timebucket.IndexMs(bounds, h); i >= 0 {
			cellOf(p, i).Merge(c)
		}
	}
	return rows.Err()
}

// Scan implements Reader.
func (s *sqlStore) Scan(ctx context.Context, externalID string, since, until time.Time, fn func(Reading) error) error {
	st, err := s.station(ctx, externalID)
	if err != nil {
		return err
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !since.IsZero() {
		lo = since.UnixMilli()
	}
	if !until.IsZero() {
		hi = until.UnixMilli()
	}
	return s.scanRange(ctx, st, lo, hi, false, fn)
}

// scanChunk is how many readings scanRange holds at a time.
const scanChunk = 2000

// scanRange calls fn with every reading of st in [lo, hi) in time order, a chunk of
// readings at a time (keyset paging on the primary key), so memory stays bounded
// whatever the range; it stops at the first error or when ctx ends.
func (s *sqlStore) scanRange(ctx context.Context, st stationRec, lo, hi int64, withRaw bool, fn func(Reading) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rs, err := s.readings(ctx, st, lo, hi, scanChunk, 0, true, withRaw)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(rs) < scanChunk {
			return nil
		}
		lo = rs[len(rs)-1].Time.UnixMilli() + 1
	}
}
