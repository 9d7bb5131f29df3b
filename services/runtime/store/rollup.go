package store

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/runtime/qc"
)

const hourMs = 3_600_000

// Cell is the additive summary of a set of values of one parameter: what an hourly
// rollup holds per parameter and what an aggregate bucket is summed into, whichever way
// (rollups or raw readings) it was computed. SumSin and SumCos are kept for directions
// only (parameters in degrees), for the circular mean.
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

// The rollups (migration 0008) are one row per station and UTC hour: `cells` packs the
// hour's Cell of every parameter, ordered by parameter id (table rollup_params), each
//
//	uint16 id | 0x8000 when the vector sums follow
//	uint32 count, float64 sum, min, max
//	[float64 sum of sines, sum of cosines]      (directions only)
//
// big-endian, which is what PostgreSQL's int2send/int4send/float8send write, so migration
// 0008 builds the same bytes in SQL from the rows of the earlier one-row-per-parameter
// table. 30 bytes a parameter (46 for a direction) against a ~100-byte row and a
// ~40-byte index entry per parameter before: docs/services.md "Aggregates" has the
// measured sizes.
const (
	cellBytes    = 2 + 4 + 3*8
	vectorBytes  = 2 * 8
	vectorFlag   = 0x8000
	maxRollupPID = 0x7fff
)

// paramCell is one parameter's cell within an hour.
type paramCell struct {
	id uint16
	Cell
}

// hourKey names one rollup row.
type hourKey struct {
	station int32
	hour    int64
}

// hourCells is one rollup row decoded, its cells ordered by parameter id.
type hourCells struct {
	hourKey
	cells []paramCell
}

// appendCells encodes cells (ordered by id) as a rollup row's `cells`.
func appendCells(b []byte, cells []paramCell, circular func(id uint16) bool) []byte {
	for _, c := range cells {
		id := c.id
		vec := circular(c.id)
		if vec {
			id |= vectorFlag
		}
		b = binary.BigEndian.AppendUint16(b, id)
		b = binary.BigEndian.AppendUint32(b, uint32(c.N))
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(c.Sum))
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(c.Min))
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(c.Max))
		if vec {
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(c.SumSin))
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(c.SumCos))
		}
	}
	return b
}

var errBadCells = errors.New("rollup cells: truncated")

// eachCell calls fn with every parameter cell packed in b, in order.
func eachCell(b []byte, fn func(id uint16, c Cell)) error {
	for len(b) > 0 {
		if len(b) < cellBytes {
			return errBadCells
		}
		id := binary.BigEndian.Uint16(b)
		c := Cell{
			N:   int64(binary.BigEndian.Uint32(b[2:])),
			Sum: math.Float64frombits(binary.BigEndian.Uint64(b[6:])),
			Min: math.Float64frombits(binary.BigEndian.Uint64(b[14:])),
			Max: math.Float64frombits(binary.BigEndian.Uint64(b[22:])),
		}
		b = b[cellBytes:]
		if id&vectorFlag != 0 {
			if len(b) < vectorBytes {
				return errBadCells
			}
			c.SumSin = math.Float64frombits(binary.BigEndian.Uint64(b))
			c.SumCos = math.Float64frombits(binary.BigEndian.Uint64(b[8:]))
			b = b[vectorBytes:]
		}
		fn(id&^vectorFlag, c)
	}
	return nil
}

// decodeCells is eachCell into a slice (ordered by id, as stored).
func decodeCells(b []byte) ([]paramCell, error) {
	out := make([]paramCell, 0, len(b)/cellBytes)
	err := eachCell(b, func(id uint16, c Cell) { out = append(out, paramCell{id, c}) })
	return out, err
}

// mergeCells adds add into into (both ordered by id) and returns the merged, ordered cells.
func mergeCells(into, add []paramCell) []paramCell {
	for _, a := range add {
		i, found := slices.BinarySearchFunc(into, a.id, func(c paramCell, id uint16) int { return cmp.Compare(c.id, id) })
		if found {
			into[i].Merge(a.Cell)
		} else {
			into = slices.Insert(into, i, a)
		}
	}
	return into
}

// hourOf is the start of the UTC hour of ts (epoch ms).
func hourOf(ts int64) int64 { return ts - ((ts%hourMs)+hourMs)%hourMs }

// rollupSums collects the cells of readings per station and hour before they are written.
type rollupSums map[hourKey]map[uint16]*Cell

// add sums measurements taken at ts into the hour of station, with the tests' verdicts vs
// of them (nil: each measurement's own QC); ids gives each parameter's id (known:
// rollupParamIDs ran before).
func (r rollupSums) add(station int32, ts int64, ms []canon.Measurement, vs []qc.Verdict, ids func(string) uint16) {
	k := hourKey{station, hourOf(ts)}
	h := r[k]
	if h == nil {
		h = make(map[uint16]*Cell, len(ms))
		r[k] = h
	}
	for i, m := range ms {
		good := m.QC == nil || canon.Good(m.QC.Flag)
		if vs != nil {
			good = canon.Good(quality(&m, vs[i]))
		}
		name := m.Parameter
		if !good {
			name = excludedName(m.Parameter)
		}
		id := ids(name)
		c := h[id]
		if c == nil {
			c = &Cell{}
			h[id] = c
		}
		c.Add(m.Value, good && Circular(m.Parameter))
	}
}

// The rollups sum the values the aggregates use by default (qc=good: flags 1 and 2).
// The others of a parameter are summed under the pseudo-parameter excludedName(p), whose
// count is the bucket's `excluded`: no new column, and 30 bytes only in the hours that
// hold such values. Other qc filters are answered from the readings.
const excludedPrefix = "qc_excluded:"

func excludedName(param string) string { return excludedPrefix + param }

// sorted returns the hours ordered by key (so that concurrent writers lock rows in one
// order), each with its cells ordered by parameter id.
func (r rollupSums) sorted() []hourCells {
	out := make([]hourCells, 0, len(r))
	for k, h := range r {
		hc := hourCells{hourKey: k, cells: make([]paramCell, 0, len(h))}
		for id, c := range h {
			hc.cells = append(hc.cells, paramCell{id, *c})
		}
		slices.SortFunc(hc.cells, func(a, b paramCell) int { return cmp.Compare(a.id, b.id) })
		out = append(out, hc)
	}
	slices.SortFunc(out, func(a, b hourCells) int {
		return cmp.Or(cmp.Compare(a.station, b.station), cmp.Compare(a.hour, b.hour))
	})
	return out
}

// loadRollupParams reads the parameter ids of the rollups into the store.
func (s *sqlStore) loadRollupParams(ctx context.Context) error {
	rows, err := s.d.query(ctx, `SELECT id, name FROM rollup_params`)
	if err != nil {
		return fmt.Errorf("rollup parameters: %w", err)
	}
	defer rows.Close()
	byName := map[string]uint16{}
	var names []string
	for rows.Next() {
		var (
			id   int64
			name string
		)
		if err := rows.Scan(&id, &name); err != nil {
			return fmt.Errorf("rollup parameters: %w", err)
		}
		if id <= 0 || id > maxRollupPID {
			return fmt.Errorf("rollup parameters: id %d of %q out of range", id, name)
		}
		byName[name] = uint16(id)
		if int(id) >= len(names) {
			names = append(names, make([]string, int(id)+1-len(names))...)
		}
		names[id] = name
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("rollup parameters: %w", err)
	}
	s.mu.Lock()
	s.rollupIDs, s.rollupNames = byName, names
	s.mu.Unlock()
	return nil
}

// rollupParamID is the id of a parameter in the rollups (0: not known yet).
func (s *sqlStore) rollupParamID(name string) uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rollupIDs[name]
}

// rollupParamName is the parameter of an id ("" when unknown to this process).
func (s *sqlStore) rollupParamName(id uint16) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(id) < len(s.rollupNames) {
		return s.rollupNames[id]
	}
	return ""
}

// ensureRollupParams gives every parameter of rows an id in rollup_params (outside the
// batch's transaction, like the dictionaries: an id nobody uses yet is harmless).
func (s *sqlStore) ensureRollupParams(ctx context.Context, rows []row) error {
	var names []string
	for i := range rows {
		for _, m := range rows[i].meas {
			if !slices.Contains(names, m.Parameter) {
				names = append(names, m.Parameter, excludedName(m.Parameter))
			}
		}
	}
	return s.ensureParamNames(ctx, names)
}

// ensureParamNames gives each of names an id in rollup_params, outside any transaction.
func (s *sqlStore) ensureParamNames(ctx context.Context, names []string) error {
	var missing []string
	s.mu.Lock()
	for _, n := range names {
		if _, ok := s.rollupIDs[n]; !ok {
			missing = append(missing, n)
		}
	}
	s.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	for _, p := range missing {
		if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO rollup_params (name) VALUES (?) ON CONFLICT (name) DO NOTHING`), p); err != nil {
			return fmt.Errorf("rollup parameter %q: %w", p, err)
		}
	}
	return s.loadRollupParams(ctx)
}

// circularID reports whether the parameter of id is a direction.
func (s *sqlStore) circularID(id uint16) bool { return Circular(s.rollupParamName(id)) }

// addRollups merges the cells of a batch's new readings into their stored hours, in the
// batch's transaction. The batch holds its stations' rows locked (FOR UPDATE on
// PostgreSQL, the one writer on SQLite), and every writer of a station's rollups holds
// that lock, so reading the stored hours, adding in Go and writing them back loses no
// other writer's sums.
func (s *sqlStore) addRollups(ctx context.Context, tx txn, sums rollupSums) error {
	if len(sums) == 0 {
		return nil
	}
	hours := sums.sorted()
	keys := make([]hourKey, len(hours))
	for i := range hours {
		keys[i] = hours[i].hourKey
	}
	stored, err := tx.rollupsOf(ctx, keys)
	if err != nil {
		return fmt.Errorf("ingest: rollups: %w", err)
	}
	out := make([][]byte, len(hours))
	for i, h := range hours {
		cells := h.cells
		if b, ok := stored[h.hourKey]; ok {
			old, err := decodeCells(b)
			if err != nil {
				return fmt.Errorf("ingest: rollup of station %d hour %d: %w", h.station, h.hour, err)
			}
			cells = mergeCells(old, cells)
		}
		out[i] = appendCells(nil, cells, s.circularID)
	}
	if err := tx.putRollups(ctx, keys, out); err != nil {
		return fmt.Errorf("ingest: rollups: %w", err)
	}
	return nil
}

// rollupsOf reads the stored rollup rows of keys and locks them (PostgreSQL).
func (t pgTx) rollupsOf(ctx context.Context, keys []hourKey) (map[hourKey][]byte, error) {
	st, hr := make([]int32, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		st[i], hr[i] = k.station, k.hour
	}
	rows, err := t.tx.Query(ctx, `SELECT r.station, r.hour, r.cells FROM rollups r
		JOIN unnest($1::int4[], $2::int8[]) AS k(station, hour) ON r.station = k.station AND r.hour = k.hour
		ORDER BY r.station, r.hour FOR UPDATE OF r`, st, hr)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[hourKey][]byte{}
	for rows.Next() {
		var (
			k hourKey
			b []byte
		)
		if err := rows.Scan(&k.station, &k.hour, &b); err != nil {
			return nil, err
		}
		out[k] = b
	}
	return out, rows.Err()
}

// putRollups writes rollup rows, replacing stored ones (PostgreSQL: one statement).
func (t pgTx) putRollups(ctx context.Context, keys []hourKey, cells [][]byte) error {
	st, hr := make([]int32, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		st[i], hr[i] = k.station, k.hour
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO rollups (station, hour, cells)
		SELECT * FROM unnest($1::int4[], $2::int8[], $3::bytea[])
		ON CONFLICT (station, hour) DO UPDATE SET cells = excluded.cells`, st, hr, cells)
	return err
}

// rollupsOf reads the stored rollup rows of keys (SQLite: the one writer needs no lock).
func (t sqlTx) rollupsOf(ctx context.Context, keys []hourKey) (map[hourKey][]byte, error) {
	stmt, err := t.tx.PrepareContext(ctx, `SELECT cells FROM rollups WHERE station = ? AND hour = ?`)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	out := map[hourKey][]byte{}
	for _, k := range keys {
		var b []byte
		err := stmt.QueryRowContext(ctx, k.station, k.hour).Scan(&b)
		if isNoRows(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[k] = b
	}
	return out, nil
}

// putRollups writes rollup rows, replacing stored ones (SQLite: a statement each).
func (t sqlTx) putRollups(ctx context.Context, keys []hourKey, cells [][]byte) error {
	stmt, err := t.tx.PrepareContext(ctx, `INSERT INTO rollups (station, hour, cells) VALUES (?, ?, ?)
		ON CONFLICT (station, hour) DO UPDATE SET cells = excluded.cells`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i, k := range keys {
		if _, err := stmt.ExecContext(ctx, k.station, k.hour, cells[i]); err != nil {
			return err
		}
	}
	return nil
}

// errUnnamedParams stops a rewrite that met parameters without a rollup id: they are
// named outside its transaction (SQLite has one writer) and the rewrite runs again.
var errUnnamedParams = errors.New("rollups: parameters without an id")

// sumReadings sums the stored readings of st in [lo, hi) into their hours. A parameter
// without a rollup id is added to missing instead (and the sums are then incomplete).
func (s *sqlStore) sumReadings(ctx context.Context, st stationRec, lo, hi int64, sums rollupSums, missing *[]string) error {
	var ms []canon.Measurement
	dec := NewMeasDecoder()
	return s.scanRange(ctx, st, lo, hi, false, false, func(r Reading) error {
		var err error
		if ms, err = dec.Decode(ms, r.Measurements); err != nil {
			return fmt.Errorf("reading %d of station %d: %w", r.Time.UnixMilli(), st.key, err)
		}
		for _, m := range ms {
			if s.rollupParamID(m.Parameter) == 0 && !slices.Contains(*missing, m.Parameter) {
				*missing = append(*missing, m.Parameter)
			}
			if x := excludedName(m.Parameter); s.rollupParamID(x) == 0 && !slices.Contains(*missing, x) {
				*missing = append(*missing, x)
			}
		}
		if len(*missing) == 0 {
			sums.add(st.key, r.Time.UnixMilli(), ms, nil, s.rollupParamID)
		}
		return nil
	})
}

// lockStation holds station key's row for the rest of tx, as an ingest batch does: the
// rollups of the station are then written by tx alone (PostgreSQL; SQLite has one writer).
func (s *sqlStore) lockStation(ctx context.Context, tx txn, key int32) error {
	var k int32
	if err := tx.queryRow(ctx, s.q(`SELECT skey FROM stations WHERE skey = ?`+s.d.forUpdate), key).Scan(&k); err != nil {
		return fmt.Errorf("lock station %d: %w", key, err)
	}
	return nil
}

// rewriteHours replaces the rollups of station's hours in [lo, hi) by sums of the stored
// readings, holding the station's lock from before the readings are read until the new
// rows are written, so no batch adds to those hours in between.
func (s *sqlStore) rewriteHours(ctx context.Context, st stationRec, spans [][2]int64) error {
	for attempt := 0; ; attempt++ {
		var missing []string
		err := s.d.inTx(ctx, func(tx txn) error {
			if err := s.lockStation(ctx, tx, st.key); err != nil {
				return err
			}
			sums := rollupSums{}
			for _, sp := range spans {
				if err := s.sumReadings(ctx, st, sp[0], sp[1], sums, &missing); err != nil {
					return err
				}
			}
			if len(missing) > 0 {
				return errUnnamedParams
			}
			for _, sp := range spans {
				if _, err := tx.exec(ctx, s.q(`DELETE FROM rollups WHERE station = ? AND hour >= ? AND hour < ?`), st.key, sp[0], sp[1]); err != nil {
					return fmt.Errorf("rollups of station %d: %w", st.key, err)
				}
			}
			hours := sums.sorted()
			if len(hours) == 0 {
				return nil
			}
			keys := make([]hourKey, len(hours))
			cells := make([][]byte, len(hours))
			for i, h := range hours {
				keys[i] = h.hourKey
				cells[i] = appendCells(nil, h.cells, s.circularID)
			}
			return tx.putRollups(ctx, keys, cells)
		})
		if !errors.Is(err, errUnnamedParams) || attempt > 0 {
			return err
		}
		if err := s.ensureParamNames(ctx, missing); err != nil {
			return err
		}
	}
}

// recomputeHours rewrites the rollups of station's hours (epoch ms of their starts) from
// the stored readings: what a revised reading needs, since a minimum or maximum cannot be
// taken back. It runs after the revision's transaction committed, in its own.
func (s *sqlStore) recomputeHours(ctx context.Context, st stationRec, hours []int64) error {
	slices.Sort(hours)
	hours = slices.Compact(hours)
	spans := make([][2]int64, 0, len(hours))
	for _, h := range hours {
		if n := len(spans); n > 0 && spans[n-1][1] == h {
			spans[n-1][1] = h + hourMs
			continue
		}
		spans = append(spans, [2]int64{h, h + hourMs})
	}
	return s.rewriteHours(ctx, st, spans)
}

// rebuildRollups computes the rollups of every stored reading, station by station: the
// one-time job for readings stored before rollups existed, or on SQLite before they
// were one row per hour (store_jobs).
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
	rows, err := s.d.query(ctx, `SELECT skey FROM stations ORDER BY skey`)
	if err != nil {
		return fmt.Errorf("rebuild rollups: %w", err)
	}
	var keys []int32
	for rows.Next() {
		var k int32
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return fmt.Errorf("rebuild rollups: %w", err)
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("rebuild rollups: %w", err)
	}
	for _, k := range keys {
		if err := s.rewriteHours(ctx, stationRec{key: k}, [][2]int64{{math.MinInt64, math.MaxInt64}}); err != nil {
			return fmt.Errorf("rebuild rollups of station %d: %w", k, err)
		}
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM store_jobs WHERE name = 'rebuild_rollups'`); err != nil {
		return fmt.Errorf("store jobs: %w", err)
	}
	s.log.Info("store: rollups rebuilt from stored readings", "stations", len(keys))
	return nil
}
