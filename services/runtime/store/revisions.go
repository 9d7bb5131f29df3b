package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"time"
)

// Revision is an earlier value of a reading, superseded by a better source (docs/services.md
// "Revisions"): what it was, where it came from, and what replaced it when.
type Revision struct {
	// Measurements is the superseded canonical JSON, as it was served.
	Measurements []byte
	// SourceFormat is the superseded value's source format (its kind, such as
	// ndbc.realtime2.stdmet) and Source the file or URL it was read from ("" when not
	// recorded: readings stored before sources were recorded).
	SourceFormat, Source string
	FetchedAt            time.Time
	RevisedAt            time.Time
	// NewFormat and NewSource are those of the value that replaced it.
	NewFormat, NewSource string
}

// SourceRank orders the sources of one reading: a value from a higher-ranked source
// supersedes a stored one from a lower-ranked source; equal ranks keep the first value
// (a realtime file polled again changes nothing). Quality-controlled historical files
// (NDBC's monthly and yearly stdmet, raw format *.historical.*) rank above everything
// else, which is realtime.
func SourceRank(format string) int {
	if strings.Contains(format, ".historical.") {
		return 2
	}
	return 1
}

// reviseDuplicates supersedes stored readings that rows (already stored, so not written
// by this batch) bring from a better source with a different value: the stored value goes
// to the revisions table with its source, the row's value replaces it. It returns the
// revised hours per station, whose rollups the caller recomputes after the commit. Only a
// batch of a higher-ranked source pays for the lookup: a realtime replay reads nothing.
func (s *sqlStore) reviseDuplicates(ctx context.Context, tx txn, rows []row, fresh []row, source string) (map[int32][]int64, error) {
	isFresh := make(map[[2]int64]bool, len(fresh))
	for _, r := range fresh {
		isFresh[[2]int64{int64(r.station), r.ts}] = true
	}
	byStation := map[int32][]int{}
	for i, r := range rows {
		if SourceRank(r.format) > 1 && !isFresh[[2]int64{int64(r.station), r.ts}] {
			byStation[r.station] = append(byStation[r.station], i)
		}
	}
	if len(byStation) == 0 {
		return nil, nil
	}
	revised := map[int32][]int64{}
	me := newMeasEncoder()
	p := newPacker(s.codec)
	now := s.now().UnixMilli()
	for key, idx := range byStation {
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for _, i := range idx {
			lo, hi = min(lo, rows[i].ts), max(hi, rows[i].ts)
		}
		stored := map[int64]Reading{}
		st := stationRec{key: key}
		err := s.scanRangeTx(ctx, tx, st, lo, hi+1, func(r Reading) error {
			stored[r.Time.UnixMilli()] = r
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("ingest: revisions: %w", err)
		}
		for _, i := range idx {
			r := &rows[i]
			old, ok := stored[r.ts]
			if !ok || SourceRank(r.format) <= SourceRank(old.RawFormat) {
				continue
			}
			cur, err := me.encode(nil, r.meas, r.verdicts)
			if err != nil {
				return nil, fmt.Errorf("ingest: revisions: %w", err)
			}
			if bytes.Equal(cur, old.Measurements) {
				continue
			}
			oldSource, err := s.sourceOf(ctx, tx, key, r.ts, old.FetchedAt.UnixMilli())
			if err != nil {
				return nil, err
			}
			if _, err := tx.exec(ctx, s.q(`INSERT INTO revisions (station, ts, measurements, source_format, source, fetched_ms, revised_ms, new_format, new_source)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), key, r.ts, string(old.Measurements), old.RawFormat, oldSource, old.FetchedAt.UnixMilli(), now, r.format, source); err != nil {
				return nil, fmt.Errorf("ingest: revisions: %w", err)
			}
			if err := p.inline(r); err != nil {
				return nil, err
			}
			if _, err := tx.exec(ctx, s.q(`UPDATE readings SET fetched_ms = ?, lat = ?, lon = ?, measurements = ?, raw_format = ?, raw = ? WHERE station = ? AND ts = ?`),
				r.fetched, r.lat, r.lon, r.measurements, nullInt32(r.rawFormat), r.raw, key, r.ts); err != nil {
				return nil, fmt.Errorf("ingest: revise reading: %w", err)
			}
			revised[key] = append(revised[key], hourOf(r.ts))
		}
	}
	return revised, nil
}

// sourceOf is where the stored value of (station, ts) fetched at fetched came from: the
// source that replaced an earlier value of it, else the batch source recorded at that
// fetch time, else "".
func (s *sqlStore) sourceOf(ctx context.Context, tx txn, station int32, ts, fetched int64) (string, error) {
	var src string
	err := tx.queryRow(ctx, s.q(`SELECT new_source FROM revisions WHERE station = ? AND ts = ? ORDER BY revised_ms DESC, id DESC LIMIT 1`), station, ts).Scan(&src)
	if err == nil {
		return src, nil
	}
	if !isNoRows(err) {
		return "", fmt.Errorf("ingest: revisions: %w", err)
	}
	err = tx.queryRow(ctx, s.q(`SELECT source FROM fetches WHERE fetched_ms = ? ORDER BY source LIMIT 1`), fetched).Scan(&src)
	if err != nil && !isNoRows(err) {
		return "", fmt.Errorf("ingest: fetch sources: %w", err)
	}
	return src, nil
}

// recordFetch remembers which source a batch fetched at fetched read, so that a value
// superseded later can say where it came from.
func (s *sqlStore) recordFetch(ctx context.Context, tx txn, fetched int64, source string) error {
	if source == "" {
		return nil
	}
	if _, err := tx.exec(ctx, s.q(`INSERT INTO fetches (fetched_ms, source) VALUES (?, ?) ON CONFLICT DO NOTHING`), fetched, source); err != nil {
		return fmt.Errorf("ingest: fetch source: %w", err)
	}
	return nil
}

// scanRangeTx reads the readings of st in [lo, hi) inside tx, raw format included, so that
// the revision check sees what this transaction sees.
func (s *sqlStore) scanRangeTx(ctx context.Context, tx txn, st stationRec, lo, hi int64, fn func(Reading) error) error {
	rows, err := tx.query(ctx, s.q(`SELECT ts, fetched_ms, measurements, raw_format FROM readings WHERE station = ? AND ts >= ? AND ts < ? ORDER BY ts`), st.key, lo, hi)
	if err != nil {
		return err
	}
	type stored struct {
		ts, fetched int64
		m           []byte
		rawFormat   sql.NullInt64
	}
	var all []stored
	for rows.Next() {
		var r stored
		var m []byte
		if err := rows.Scan(&r.ts, &r.fetched, &m, &r.rawFormat); err != nil {
			rows.Close()
			return err
		}
		r.m = append([]byte(nil), m...)
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// Block references are resolved with the block's own raw format; consecutive
	// readings share blocks, each read once.
	blocks := map[int64]decodedBlock{}
	for _, r := range all {
		rd := Reading{Time: time.UnixMilli(r.ts).UTC(), FetchedAt: time.UnixMilli(r.fetched).UTC()}
		if ref, inBlock := parseBlockRef(r.m); inBlock {
			id, idx := splitRef(ref)
			b, ok := blocks[id]
			if !ok {
				var err error
				if b, err = s.blockTx(ctx, tx, id, r.ts); err != nil {
					return err
				}
				blocks[id] = b
			}
			if idx >= len(b.measurements) {
				return fmt.Errorf("reading %d: block %d has no index %d", r.ts, id, idx)
			}
			rd.Measurements, rd.RawFormat = b.measurements[idx], b.rawFormat
		} else {
			var err error
			if rd.Measurements, err = s.decode(ctx, r.m); err != nil {
				return err
			}
			if r.rawFormat.Valid {
				if rd.RawFormat, err = s.dictFormat(ctx, uint32(r.rawFormat.Int64)); err != nil {
					return err
				}
			}
		}
		if err := fn(rd); err != nil {
			return err
		}
	}
	return nil
}

// blockTx reads one block inside tx: its measurements and raw format, not the raw
// fragments.
func (s *sqlStore) blockTx(ctx context.Context, tx txn, id, ts int64) (decodedBlock, error) {
	var (
		m         []byte
		rawFormat sql.NullInt64
	)
	if err := tx.queryRow(ctx, s.q(`SELECT measurements, raw_format FROM blocks WHERE ts >= ? AND ts <= ? AND id = ?`),
		monthStart(ts).UnixMilli(), ts, id).Scan(&m, &rawFormat); err != nil {
		return decodedBlock{}, fmt.Errorf("block %d: %w", id, err)
	}
	var b decodedBlock
	var err error
	if b.measurements, err = s.decodeBlock(ctx, append([]byte(nil), m...)); err != nil {
		return b, fmt.Errorf("block %d: %w", id, err)
	}
	if rawFormat.Valid {
		if b.rawFormat, err = s.dictFormat(ctx, uint32(rawFormat.Int64)); err != nil {
			return b, err
		}
	}
	return b, nil
}

// revisionsOf returns the revisions of station's readings in [lo, hi], by reading time.
func (s *sqlStore) revisionsOf(ctx context.Context, station int32, lo, hi int64) (map[int64][]Revision, error) {
	rows, err := s.d.query(ctx, s.q(`SELECT ts, measurements, source_format, source, fetched_ms, revised_ms, new_format, new_source
		FROM revisions WHERE station = ? AND ts >= ? AND ts <= ? ORDER BY ts, revised_ms, id`), station, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("revisions: %w", err)
	}
	defer rows.Close()
	out := map[int64][]Revision{}
	for rows.Next() {
		var (
			ts, fetched, revised int64
			m                    string
			r                    Revision
		)
		if err := rows.Scan(&ts, &m, &r.SourceFormat, &r.Source, &fetched, &revised, &r.NewFormat, &r.NewSource); err != nil {
			return nil, fmt.Errorf("revisions: %w", err)
		}
		r.Measurements = []byte(m)
		r.FetchedAt, r.RevisedAt = time.UnixMilli(fetched).UTC(), time.UnixMilli(revised).UTC()
		out[ts] = append(out[ts], r)
	}
	return out, rows.Err()
}

// fillRevisions attaches each reading's revisions (for readings asked with revisions=true).
func (s *sqlStore) fillRevisions(ctx context.Context, st stationRec, rs []Reading) error {
	if len(rs) == 0 {
		return nil
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range rs {
		lo, hi = min(lo, r.Time.UnixMilli()), max(hi, r.Time.UnixMilli())
	}
	revs, err := s.revisionsOf(ctx, st.key, lo, hi)
	if err != nil {
		return fmt.Errorf("readings of %q: %w", st.ExternalID, err)
	}
	for i := range rs {
		rs[i].Revisions = revs[rs[i].Time.UnixMilli()]
		if rs[i].Revisions == nil {
			rs[i].Revisions = []Revision{}
		}
	}
	return nil
}
