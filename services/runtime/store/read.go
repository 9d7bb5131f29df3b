package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
)

// Readings implements Reader.
func (s *sqlStore) Readings(ctx context.Context, externalID string, q contract.ReadingsQuery) ([]Reading, int, error) {
	st, err := s.station(ctx, externalID)
	if err != nil {
		return nil, 0, err
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !q.Since.IsZero() {
		lo = q.Since.UnixMilli()
	}
	if !q.Until.IsZero() {
		hi = q.Until.UnixMilli()
	}
	// Without a time range the total is the station's counter, kept by ingest.
	total := int(st.readings)
	if !q.Since.IsZero() || !q.Until.IsZero() {
		if err := s.d.queryRow(ctx, s.q(`SELECT count(*) FROM readings WHERE station = ? AND ts >= ? AND ts < ?`),
			st.key, lo, hi).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("count readings of %q: %w", externalID, err)
		}
	}
	limit := q.Limit
	if limit <= 0 {
		limit = contract.DefaultReadingsLimit
	}
	offset := max(q.Page-1, 0) * limit
	if offset >= total {
		return []Reading{}, total, nil
	}
	// A page in the far half is found from the other end: skipping (total - offset -
	// limit) keys in the opposite order costs less than skipping offset keys.
	asc, n, off := q.Ascending, limit, offset
	flipped := offset > total/2
	if flipped {
		asc = !asc
		off = max(total-offset-limit, 0)
		n = min(limit, total-offset)
	}
	rs, err := s.readings(ctx, st, lo, hi, n, off, asc, q.Format == contract.FormatRaw, true)
	if err != nil {
		return nil, 0, err
	}
	if flipped {
		slices.Reverse(rs)
	}
	if q.Revisions {
		if err := s.fillRevisions(ctx, st, rs); err != nil {
			return nil, 0, err
		}
	}
	return rs, total, nil
}

func (s *sqlStore) readings(ctx context.Context, st stationRec, lo, hi int64, limit, offset int, asc, withRaw, withIDs bool) ([]Reading, error) {
	order := "DESC"
	if asc {
		order = "ASC"
	}
	// raw_format is read always (a small integer): lineage names source fields by it.
	cols := "ts, fetched_ms, lat, lon, measurements, raw_format, NULL"
	if withRaw {
		cols = "ts, fetched_ms, lat, lon, measurements, raw_format, raw"
	}
	// A deep page is found on the primary key alone (index-only) before any row is
	// read, so page 20 costs about what page 1 does.
	if offset > 0 {
		var edge int64
		err := s.d.queryRow(ctx, s.q(`SELECT ts FROM readings WHERE station = ? AND ts >= ? AND ts < ? ORDER BY ts `+order+
			fmt.Sprintf(` LIMIT 1 OFFSET %d`, offset)), st.key, lo, hi).Scan(&edge)
		if isNoRows(err) {
			return []Reading{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("readings of %q: page edge: %w", st.ExternalID, err)
		}
		if asc {
			lo = edge
		} else {
			hi = edge + 1
		}
	}
	rows, err := s.d.query(ctx, s.q(`SELECT `+cols+` FROM readings WHERE station = ? AND ts >= ? AND ts < ? ORDER BY ts `+order+
		fmt.Sprintf(` LIMIT %d`, limit)), st.key, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("readings of %q: %w", st.ExternalID, err)
	}
	defer rows.Close()
	rid := newReadingIDs(ids.Sensor(s.serviceID, st.ExternalID))
	out := make([]Reading, 0, limit)
	var refs []int64 // block reference of out[i], 0 when inline
	// The scan's destinations are made once, not per row (each one a row escaped to the
	// heap was most of a bulk export's allocations); nullable columns scan into pointers,
	// which both drivers set to nil or to a new value, so each reading keeps its own.
	var (
		ts, fetched int64
		lat, lon    *float64
		m, raw      []byte
		rawFormat   *int64
	)
	dest := []any{&ts, &fetched, &lat, &lon, &m, &rawFormat, &raw}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("readings of %q: %w", st.ExternalID, err)
		}
		t := time.UnixMilli(ts).UTC()
		r := Reading{StationID: st.ExternalID, Time: t, FetchedAt: time.UnixMilli(fetched).UTC(), Provider: st.ProviderSlug}
		if withIDs {
			r.ID = rid.id(t)
		}
		if lat != nil && lon != nil {
			r.Lat, r.Lon = lat, lon
		}
		ref, inBlock := parseBlockRef(m)
		refs = append(refs, ref)
		if inBlock {
			out = append(out, r)
			continue
		}
		if err := s.fillInline(ctx, &r, m, rawFormat, raw, withRaw); err != nil {
			return nil, fmt.Errorf("reading %s of %q: %w", r.Time.Format(time.RFC3339), st.ExternalID, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("readings of %q: %w", st.ExternalID, err)
	}
	if err := s.fillFromBlocks(ctx, st, out, refs, withRaw); err != nil {
		return nil, err
	}
	return out, nil
}

// fillInline decodes the values a row holds itself (rows written before blocks, and
// readings that were alone in their batch).
func (s *sqlStore) fillInline(ctx context.Context, r *Reading, m []byte, rawFormat *int64, raw []byte, withRaw bool) error {
	var err error
	if r.Measurements, err = s.decode(ctx, m); err != nil {
		return fmt.Errorf("measurements: %w", err)
	}
	r.Measurements = withQC(r.Measurements)
	if rawFormat != nil {
		if r.RawFormat, err = s.dictFormat(ctx, uint32(*rawFormat)); err != nil {
			return err
		}
	}
	if !withRaw || raw == nil {
		return nil
	}
	if r.Raw, err = s.decode(ctx, raw); err != nil {
		return fmt.Errorf("raw: %w", err)
	}
	return nil
}

// decodedBlock is one block's values, sliced per reading.
type decodedBlock struct {
	measurements, raw [][]byte
	rawFormat         string
}

// fillFromBlocks reads the blocks that out's block readings point into, each once (a
// 500-row page touches ~16 blocks), and slices every reading's values out of its block
// without copying them.
func (s *sqlStore) fillFromBlocks(ctx context.Context, st stationRec, out []Reading, refs []int64, withRaw bool) error {
	blocks, err := s.readBlocks(ctx, refs, func(i int) time.Time { return out[i].Time }, withRaw)
	if err != nil {
		return fmt.Errorf("readings of %q: %w", st.ExternalID, err)
	}
	for i, ref := range refs {
		if ref == 0 {
			continue
		}
		b, idx, err := blockAt(blocks, ref)
		if err != nil {
			return fmt.Errorf("reading %s of %q: %w", out[i].Time.Format(time.RFC3339), st.ExternalID, err)
		}
		out[i].Measurements = withQC(b.measurements[idx])
		out[i].RawFormat = b.rawFormat
		if withRaw && idx < len(b.raw) && b.raw[idx] != nil {
			out[i].Raw = b.raw[idx]
		}
	}
	return nil
}

// blockAt returns the values of the block that ref points into and the reading's index in
// them; an error when that block was not read or holds fewer readings.
func blockAt(blocks map[int64]decodedBlock, ref int64) (decodedBlock, int, error) {
	id, idx := splitRef(ref)
	b, ok := blocks[id]
	if !ok || idx >= len(b.measurements) {
		return b, idx, fmt.Errorf("block %d (index %d) is missing", id, idx)
	}
	return b, idx, nil
}

// readBlocks reads and decodes, each once, the blocks that refs point into (a ref of 0
// points into none); at(i) is the time of the reading of refs[i]. A block lies in the
// month of its readings, between the start of the month of the oldest and the newest,
// which lets PostgreSQL read only those months' partitions.
func (s *sqlStore) readBlocks(ctx context.Context, refs []int64, at func(i int) time.Time, withRaw bool) (map[int64]decodedBlock, error) {
	var ids []any
	seen := map[int64]bool{}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i, ref := range refs {
		if ref == 0 {
			continue
		}
		if id, _ := splitRef(ref); !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
		ts := at(i).UnixMilli()
		lo, hi = min(lo, ts), max(hi, ts)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	cols := "id, measurements, raw_format, NULL"
	if withRaw {
		cols = "id, measurements, raw_format, raw"
	}
	q := `SELECT ` + cols + ` FROM blocks WHERE ts >= ? AND ts <= ? AND id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`
	args := append([]any{monthStart(lo).UnixMilli(), hi}, ids...)
	rows, err := s.d.query(ctx, s.q(q), args...)
	if err != nil {
		return nil, fmt.Errorf("blocks: %w", err)
	}
	defer rows.Close()
	out := make(map[int64]decodedBlock, len(ids))
	for rows.Next() {
		var (
			id        int64
			m, raw    []byte
			rawFormat sql.NullInt64
		)
		if err := rows.Scan(&id, &m, &rawFormat, &raw); err != nil {
			return nil, fmt.Errorf("blocks: %w", err)
		}
		var b decodedBlock
		if b.measurements, err = s.decodeBlock(ctx, m); err != nil {
			return nil, fmt.Errorf("block %d: measurements: %w", id, err)
		}
		if rawFormat.Valid {
			if b.rawFormat, err = s.dictFormat(ctx, uint32(rawFormat.Int64)); err != nil {
				return nil, err
			}
		}
		if withRaw && raw != nil {
			if b.raw, err = s.decodeBlock(ctx, raw); err != nil {
				return nil, fmt.Errorf("block %d: raw: %w", id, err)
			}
		}
		out[id] = b
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("blocks: %w", err)
	}
	return out, nil
}

// decodeBlock decompresses a stored block blob and slices it into its parts.
func (s *sqlStore) decodeBlock(ctx context.Context, b []byte) ([][]byte, error) {
	plain, err := s.decode(ctx, b)
	if err != nil {
		return nil, err
	}
	return unpack(plain)
}

// decode decompresses a stored blob, loading its dictionary when another process made it.
func (s *sqlStore) decode(ctx context.Context, b []byte) ([]byte, error) {
	if id := dictID(b); id != 0 && !s.codec.has(id) {
		if err := s.loadDicts(ctx); err != nil {
			return nil, err
		}
	}
	out, err := s.codec.decode(b)
	if err != nil {
		return nil, err
	}
	// The scan buffer may be reused by the driver; plain values must be copied.
	if len(out) > 0 && &out[0] == &b[0] {
		out = append([]byte(nil), out...)
	}
	return out, nil
}

func (s *sqlStore) dictFormat(ctx context.Context, id uint32) (string, error) {
	find := func() (string, bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for name, v := range s.dicts {
			if v == id {
				return strings.TrimPrefix(name, "raw:"), true
			}
		}
		return "", false
	}
	if f, ok := find(); ok {
		return f, nil
	}
	if err := s.loadDicts(ctx); err != nil {
		return "", err
	}
	if f, ok := find(); ok {
		return f, nil
	}
	return "", fmt.Errorf("raw format %d is not in the dictionary table", id)
}
