package store

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
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
	// QC keeps the values whose flag it holds (zero: contract.QCGood, the aggregates'
	// default, the only filter the rollups answer).
	QC contract.QCFilter
}

// AggregateResult holds, per parameter, one Cell per bucket (N = 0 for an empty bucket).
type AggregateResult struct {
	Station contract.Station
	// Parameters are the parameters answered, sorted (the requested ones, or those found).
	Parameters []string
	Cells      map[string][]Cell
	// Excluded counts, per parameter and bucket, the values the QC filter left out.
	Excluded map[string][]int64
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
	if q.QC == 0 {
		q.QC = contract.QCGood
	}
	res := AggregateResult{Station: st.Station, Cells: map[string][]Cell{}, Excluded: map[string][]int64{}}
	for _, p := range q.Parameters {
		res.Cells[p] = make([]Cell, len(q.Bounds)-1)
	}
	bounds := timebucket.Millis(q.Bounds)
	src := q.Source
	if src == SourceAuto {
		src = SourceRaw
		if timebucket.WholeHours(q.Bounds) && q.QC == contract.QCGood {
			src = SourceRollups
		}
	}
	if src == SourceRollups && q.QC != contract.QCGood {
		return AggregateResult{}, fmt.Errorf("aggregate of %q: the rollups hold qc=good only, not qc=%s", externalID, q.QC)
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
	excludedOf := func(p string, i int) *int64 {
		cellOf(p, i) // the parameter is answered even when all its values were left out
		xs, ok := res.Excluded[p]
		if !ok {
			xs = make([]int64, len(q.Bounds)-1)
			res.Excluded[p] = xs
		}
		return &xs[i]
	}
	switch src {
	case SourceRollups:
		err = s.aggregateRollups(ctx, st, bounds, want, cellOf, excludedOf)
	case SourceRaw:
		dec := NewMeasDecoder()
		var ms []canon.Measurement
		err = s.scanRange(ctx, st, bounds[0], bounds[len(bounds)-1], false, false, func(r Reading) error {
			var err error
			if ms, err = dec.Decode(ms, r.Measurements); err != nil {
				return fmt.Errorf("reading %s of %q: %w", r.Time.Format(time.RFC3339), st.ExternalID, err)
			}
			i := timebucket.IndexMs(bounds, r.Time.UnixMilli())
			if i < 0 {
				return nil
			}
			for _, m := range ms {
				switch {
				case !want(m.Parameter):
				case !q.QC.Keep(m.Quality().Flag):
					*excludedOf(m.Parameter, i)++
				default:
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

// aggregateRollups sums the hourly rollup rows of the range into buckets in Go, on
// both backends: one row per station-hour comes back (8,760 for a year), each decoded
// in place, and timebucket.IndexMs places its hour among the boundaries, so the bucket
// rule is the one of package timebucket.
func (s *sqlStore) aggregateRollups(ctx context.Context, st stationRec, bounds []int64, want func(string) bool, cellOf func(string, int) *Cell, excludedOf func(string, int) *int64) error {
	rows, err := s.d.query(ctx, s.q(`SELECT hour, cells FROM rollups
		WHERE station = ? AND hour >= ? AND hour < ? ORDER BY hour`), st.key, bounds[0], bounds[len(bounds)-1])
	if err != nil {
		return fmt.Errorf("rollups: %w", err)
	}
	defer rows.Close()
	var (
		h     int64
		cells []byte
		// per parameter id: its name when wanted, "-" when not (looked up once).
		names []string
		bad   error
	)
	name := func(id uint16) string {
		if int(id) < len(names) && names[id] != "" {
			return names[id]
		}
		n := s.rollupParamName(id)
		if n == "" {
			// Another replica named a parameter this process has not loaded yet.
			if err := s.loadRollupParams(ctx); err == nil {
				n = s.rollupParamName(id)
			}
		}
		if n == "" {
			bad = fmt.Errorf("rollups: unknown parameter id %d", id)
		}
		if !want(strings.TrimPrefix(n, excludedPrefix)) {
			n = "-"
		}
		if int(id) >= len(names) {
			names = append(names, make([]string, int(id)+1-len(names))...)
		}
		names[id] = n
		return n
	}
	for rows.Next() {
		if err := rows.Scan(&h, &cells); err != nil {
			return fmt.Errorf("rollups: %w", err)
		}
		i := timebucket.IndexMs(bounds, h)
		if i < 0 {
			continue
		}
		err := eachCell(cells, func(id uint16, c Cell) {
			switch p := name(id); {
			case p == "-" || p == "":
			case strings.HasPrefix(p, excludedPrefix):
				*excludedOf(p[len(excludedPrefix):], i) += c.N
			default:
				cellOf(p, i).Merge(c)
			}
		})
		if err != nil {
			return fmt.Errorf("rollup of hour %d: %w", h, err)
		}
		if bad != nil {
			return bad
		}
	}
	return rows.Err()
}

// Scan implements Reader.
func (s *sqlStore) Scan(ctx context.Context, externalID string, q ScanQuery, fn func(Reading) error) error {
	st, err := s.station(ctx, externalID)
	if err != nil {
		return err
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !q.Since.IsZero() {
		lo = q.Since.UnixMilli()
	}
	if !q.Until.IsZero() {
		hi = q.Until.UnixMilli()
	}
	return s.scanRange(ctx, st, lo, hi, false, !q.SkipIDs, fn)
}

// scanChunk is how many readings scanRange reads in one query.
const scanChunk = 2000

// scanRange calls fn with every reading of st in [lo, hi) in time order, a chunk of
// readings at a time (keyset paging on the primary key), so memory stays bounded
// whatever the range; it stops at the first error or when ctx ends. Reading ids are
// derived only withIDs.
//
// The next chunk is read (its query, its blocks' query and their zstd decoding) while fn
// works through the current one: PostgreSQL and the decoding then run beside the
// caller's encoding instead of between its chunks (docs/services.md "Formats and
// export"). So at most two chunks are held. Each chunk's readings are slices of its own
// decoded blocks, never reused, so a reading fn keeps stays valid. When fn fails or ctx
// ends, the read ahead is cancelled and waited for before scanRange returns.
func (s *sqlStore) scanRange(ctx context.Context, st stationRec, lo, hi int64, withRaw, withIDs bool, fn func(Reading) error) error {
	type chunk struct {
		rs  []Reading
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fetch := func(lo int64) chan chunk {
		c := make(chan chunk, 1)
		go func() {
			rs, err := s.readings(ctx, st, lo, hi, scanChunk, 0, true, withRaw, withIDs)
			c <- chunk{rs, err}
		}()
		return c
	}
	next := fetch(lo)
	defer func() {
		if next != nil {
			cancel()
			<-next
		}
	}()
	for {
		c := <-next
		next = nil
		if c.err == nil {
			c.err = ctx.Err()
		}
		if c.err != nil {
			return c.err
		}
		if len(c.rs) == scanChunk {
			next = fetch(c.rs[len(c.rs)-1].Time.UnixMilli() + 1)
		}
		for _, r := range c.rs {
			if err := fn(r); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
	}
}
