package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
)

// row is one reading on its way to the table: its plain values first, then either its
// own compressed blobs (inline) or a reference into a block.
type row struct {
	station  int32
	ts       int64
	fetched  int64
	lat, lon *float64

	format         string // source format: the block grouping and dictionaries
	meas           []canon.Measurement
	rawPlain       []byte // raw fragment as served
	mDict, rawDict uint32

	// Stored form: measurements, raw_format and raw of an inline row; for a row whose
	// values are in a block, measurements holds the reference to it (appendBlockRef).
	measurements []byte
	rawFormat    *int32
	raw          []byte
}

// txn is the part of a transaction the ingest path needs, over pgx or database/sql.
type txn interface {
	exec(ctx context.Context, q string, args ...any) (int64, error)
	queryRow(ctx context.Context, q string, args ...any) scanner
	query(ctx context.Context, q string, args ...any) (rowsIter, error)
	// unstored returns the rows whose (station, ts) is not stored yet, so that only new
	// readings are compressed and packed into blocks.
	unstored(ctx context.Context, rows []row) ([]row, error)
	// addCounts moves each station's last_reading_ms and reading_count.
	addCounts(ctx context.Context, counts []stationCount) error
	// blockIDs gives blocks their ids.
	blockIDs(ctx context.Context, blocks []block) error
	// insertBlocks writes blocks.
	insertBlocks(ctx context.Context, blocks []block) error
	// insertReadings writes rows, skipping those already stored, and returns how many
	// were new per station key.
	insertReadings(ctx context.Context, rows []row) (map[int32]int64, error)
	// dropMonthsBefore drops whole months of readings and blocks that end at or before
	// cut (PostgreSQL partitions; nothing on SQLite) and returns the readings each
	// station lost.
	dropMonthsBefore(ctx context.Context, cut int64) (map[int32]int64, error)
	// deleteReadingsBefore deletes the readings before cut and returns how many each
	// station lost.
	deleteReadingsBefore(ctx context.Context, cut int64) (map[int32]int64, error)
}

type scanner interface{ Scan(dest ...any) error }

// rowsIter is the part of a result set the reads use, over pgx.Rows or *sql.Rows.
type rowsIter interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// sqlRows adapts *sql.Rows to rowsIter.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// dialect is what differs between PostgreSQL and SQLite.
type dialect struct {
	name     string
	greatest string // GREATEST or MAX
	// forUpdate locks the rows a SELECT reads (" FOR UPDATE"; SQLite has one writer and
	// needs none).
	forUpdate string
	// begin starts an ingest transaction and runs fn in it, committing when fn succeeds.
	inTx func(ctx context.Context, fn func(txn) error) error
	// prepare runs before a batch is written (PostgreSQL creates missing partitions).
	prepare func(ctx context.Context, rows []row) error
	rebind  func(string) string
	// query and queryRow run reads on the driver's native path (pgx for PostgreSQL: no
	// database/sql conversions on the 500-row hot path).
	query    func(ctx context.Context, q string, args ...any) (rowsIter, error)
	queryRow func(ctx context.Context, q string, args ...any) scanner
	size     func(ctx context.Context) (int64, error)
	// pruned tells the dialect that everything before cut (ms) is gone.
	pruned func(cut int64)
	close  func() error
}

// sqlStore implements Store over database/sql for reads and a dialect for writes.
type sqlStore struct {
	db        *sql.DB
	d         dialect
	serviceID string
	log       *slog.Logger
	codec     *codec
	now       func() time.Time

	mu    sync.Mutex
	dicts map[string]uint32 // dict name -> id
	// writeMu serializes ingest batches of this process: they touch the same stations,
	// and SQLite has one writer anyway.
	writeMu sync.Mutex
	phases  phaseTimes
	// horizon is the retention cutoff of the last Prune (epoch ms): older readings are
	// not stored again.
	horizon atomic.Int64
}

func (s *sqlStore) q(query string) string { return s.d.rebind(query) }

// Ping implements Store.
func (s *sqlStore) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("ping %s: %w", s.d.name, err)
	}
	return nil
}

// Close implements Store.
func (s *sqlStore) Close() error {
	err := s.d.close()
	s.codec.close()
	return err
}

const stationCols = `skey, external_id, provider, feed, name, description, sensor_type, status, data_types,
	deployment_date, decommissioned_date, latitude, longitude, reporting_interval_s, last_reading_ms, updated_ms, reading_count`

type stationRec struct {
	key      int32
	readings int64
	contract.Station
}

func scanStation(sc scanner) (stationRec, error) {
	var (
		r        stationRec
		dataType string
		decom    sql.NullString
		lat, lon sql.NullFloat64
		last     sql.NullInt64
		updated  int64
	)
	err := sc.Scan(&r.key, &r.ExternalID, &r.ProviderSlug, &r.FeedSlug, &r.Name, &r.Description, &r.SensorType,
		&r.Status, &dataType, &r.DeploymentDate, &decom, &lat, &lon, &r.ReportingIntervalS, &last, &updated, &r.readings)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(dataType), &r.DataTypes); err != nil {
		return r, fmt.Errorf("station %s: data_types: %w", r.ExternalID, err)
	}
	if r.DataTypes == nil {
		r.DataTypes = []string{}
	}
	if decom.Valid {
		r.DecommissionedDate = &decom.String
	}
	if lat.Valid && lon.Valid {
		r.Latitude, r.Longitude = &lat.Float64, &lon.Float64
	}
	if last.Valid {
		r.LastReadingAt = &contract.Time{Time: time.UnixMilli(last.Int64).UTC()}
	}
	r.UpdatedAt = contract.Time{Time: time.UnixMilli(updated).UTC()}
	return r, nil
}

func (s *sqlStore) station(ctx context.Context, externalID string) (stationRec, error) {
	r, err := scanStation(s.d.queryRow(ctx, s.q(`SELECT `+stationCols+` FROM stations WHERE external_upper = ?`), strings.ToUpper(externalID)))
	if isNoRows(err) {
		return r, fmt.Errorf("%w: %q", ErrStationNotFound, externalID)
	}
	if err != nil {
		return r, fmt.Errorf("station %q: %w", externalID, err)
	}
	return r, nil
}

// Station implements Reader.
func (s *sqlStore) Station(ctx context.Context, externalID string) (contract.Station, error) {
	r, err := s.station(ctx, externalID)
	return r.Station, err
}

// Stations implements Reader.
func (s *sqlStore) Stations(ctx context.Context, f StationFilter) ([]contract.Station, int, error) {
	var where []string
	var args []any
	if !f.UpdatedSince.IsZero() {
		where = append(where, "updated_ms >= ?")
		args = append(args, f.UpdatedSince.UnixMilli())
	}
	if f.Provider != "" {
		where = append(where, "provider = ?")
		args = append(args, f.Provider)
	}
	if f.Feed != "" {
		where = append(where, "feed = ?")
		args = append(args, f.Feed)
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	var total int
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT count(*) FROM stations`+cond), args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count stations: %w", err)
	}
	query := `SELECT ` + stationCols + ` FROM stations` + cond + ` ORDER BY external_upper`
	if f.Limit > 0 {
		page := max(f.Page, 1)
		query += fmt.Sprintf(" LIMIT %d OFFSET %d", f.Limit, (page-1)*f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list stations: %w", err)
	}
	defer rows.Close()
	out := []contract.Station{}
	for rows.Next() {
		r, err := scanStation(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list stations: %w", err)
		}
		out = append(out, r.Station)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list stations: %w", err)
	}
	return out, total, nil
}

// LatestReading implements Reader.
func (s *sqlStore) LatestReading(ctx context.Context, externalID string) (Reading, error) {
	st, err := s.station(ctx, externalID)
	if err != nil {
		return Reading{}, err
	}
	rs, err := s.readings(ctx, st, math.MinInt64, math.MaxInt64, 1, 0, false, true)
	if err != nil {
		return Reading{}, err
	}
	if len(rs) == 0 {
		return Reading{}, fmt.Errorf("%w: %q", ErrNoReadings, externalID)
	}
	return rs[0], nil
}

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
	rs, err := s.readings(ctx, st, lo, hi, n, off, asc, q.Format == contract.FormatRaw)
	if err != nil {
		return nil, 0, err
	}
	if flipped {
		slices.Reverse(rs)
	}
	return rs, total, nil
}

func (s *sqlStore) readings(ctx context.Context, st stationRec, lo, hi int64, limit, offset int, asc, withRaw bool) ([]Reading, error) {
	order := "DESC"
	if asc {
		order = "ASC"
	}
	cols := "ts, fetched_ms, lat, lon, measurements, NULL, NULL"
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
	for rows.Next() {
		var (
			ts, fetched int64
			lat, lon    sql.NullFloat64
			m, raw      []byte
			rawFormat   sql.NullInt64
		)
		if err := rows.Scan(&ts, &fetched, &lat, &lon, &m, &rawFormat, &raw); err != nil {
			return nil, fmt.Errorf("readings of %q: %w", st.ExternalID, err)
		}
		t := time.UnixMilli(ts).UTC()
		r := Reading{ID: rid.id(t), StationID: st.ExternalID, Time: t, FetchedAt: time.UnixMilli(fetched).UTC(), Provider: st.ProviderSlug}
		if lat.Valid && lon.Valid {
			r.Lat, r.Lon = &lat.Float64, &lon.Float64
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
func (s *sqlStore) fillInline(ctx context.Context, r *Reading, m []byte, rawFormat sql.NullInt64, raw []byte, withRaw bool) error {
	var err error
	if r.Measurements, err = s.decode(ctx, m); err != nil {
		return fmt.Errorf("measurements: %w", err)
	}
	if !withRaw || raw == nil {
		return nil
	}
	if r.Raw, err = s.decode(ctx, raw); err != nil {
		return fmt.Errorf("raw: %w", err)
	}
	if rawFormat.Valid {
		r.RawFormat, err = s.dictFormat(ctx, uint32(rawFormat.Int64))
	}
	return err
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
	var blockIDs []any
	seen := map[int64]bool{}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i, ref := range refs {
		if ref == 0 {
			continue
		}
		if id, _ := splitRef(ref); !seen[id] {
			seen[id] = true
			blockIDs = append(blockIDs, id)
		}
		ts := out[i].Time.UnixMilli()
		lo, hi = min(lo, ts), max(hi, ts)
	}
	if len(blockIDs) == 0 {
		return nil
	}
	blocks, err := s.readBlocks(ctx, blockIDs, lo, hi, withRaw)
	if err != nil {
		return fmt.Errorf("readings of %q: %w", st.ExternalID, err)
	}
	for i, ref := range refs {
		if ref == 0 {
			continue
		}
		id, idx := splitRef(ref)
		b, ok := blocks[id]
		if !ok || idx >= len(b.measurements) {
			return fmt.Errorf("reading %s of %q: block %d (index %d) is missing", out[i].Time.Format(time.RFC3339), st.ExternalID, id, idx)
		}
		out[i].Measurements = b.measurements[idx]
		if withRaw && idx < len(b.raw) && b.raw[idx] != nil {
			out[i].Raw, out[i].RawFormat = b.raw[idx], b.rawFormat
		}
	}
	return nil
}

// readBlocks reads and decodes blocks by id. A block lies in the month of its readings,
// between the start of the month of lo and hi, which lets PostgreSQL read only those
// months' partitions.
func (s *sqlStore) readBlocks(ctx context.Context, ids []any, lo, hi int64, withRaw bool) (map[int64]decodedBlock, error) {
	cols := "id, measurements, NULL, NULL"
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
		if withRaw && raw != nil {
			if b.raw, err = s.decodeBlock(ctx, raw); err != nil {
				return nil, fmt.Errorf("block %d: raw: %w", id, err)
			}
			if rawFormat.Valid {
				if b.rawFormat, err = s.dictFormat(ctx, uint32(rawFormat.Int64)); err != nil {
					return nil, err
				}
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

// loadDicts reads every dictionary into the codec.
func (s *sqlStore) loadDicts(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, content FROM dicts`)
	if err != nil {
		return fmt.Errorf("load dictionaries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      int64
			name    string
			content []byte
		)
		if err := rows.Scan(&id, &name, &content); err != nil {
			return fmt.Errorf("load dictionaries: %w", err)
		}
		if err := s.codec.add(uint32(id), append([]byte(nil), content...)); err != nil {
			return err
		}
		s.mu.Lock()
		s.dicts[name] = uint32(id)
		s.mu.Unlock()
	}
	return rows.Err()
}

// dict returns the id of the dictionary name, creating it from samples when new.
func (s *sqlStore) dict(ctx context.Context, name string, samples [][]byte) (uint32, error) {
	s.mu.Lock()
	id, ok := s.dicts[name]
	s.mu.Unlock()
	if ok {
		return id, nil
	}
	content := dictContent(samples)
	if len(content) == 0 {
		return 0, nil
	}
	var id64 int64
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO dicts (name, content) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`), name, content); err != nil {
		return 0, fmt.Errorf("create dictionary %s: %w", name, err)
	}
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT id, content FROM dicts WHERE name = ?`), name).Scan(&id64, &content); err != nil {
		return 0, fmt.Errorf("read dictionary %s: %w", name, err)
	}
	if err := s.codec.add(uint32(id64), append([]byte(nil), content...)); err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.dicts[name] = uint32(id64)
	s.mu.Unlock()
	return uint32(id64), nil
}

// dictContent joins samples (most useful last, as zstd prefers recent history) up to a
// size where encoders stay cheap.
func dictContent(samples [][]byte) []byte {
	const maxDict = 16 << 10
	var out []byte
	for i := len(samples) - 1; i >= 0; i-- {
		if len(out)+len(samples[i]) > maxDict {
			break
		}
		out = append(append([]byte(nil), samples[i]...), out...)
	}
	return out
}

// Ingest implements Writer.
func (s *sqlStore) Ingest(ctx context.Context, b Batch) (IngestResult, error) {
	var res IngestResult
	if b.Provider == "" {
		return res, fmt.Errorf("ingest: batch has no provider")
	}
	if b.FetchedAt.IsZero() {
		b.FetchedAt = s.now()
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	ph := s.phases.start()
	stations, err := s.mergeStations(ctx, b)
	if err != nil {
		return res, err
	}
	rows, uppers, err := s.prepareRows(ctx, b)
	if err != nil {
		return res, err
	}
	if err := s.d.prepare(ctx, rows); err != nil {
		return res, err
	}
	ph.done(phasePrepare)
	err = s.d.inTx(ctx, func(tx txn) error {
		changed, err := s.writeStations(ctx, tx, stations, rows, uppers, len(b.Observations) == 0)
		if err != nil {
			return err
		}
		ph.done(phaseStations)
		fresh, added, err := s.writeReadings(ctx, tx, rows, &ph)
		if err != nil {
			return err
		}
		res = IngestResult{Stations: changed}
		for _, n := range added {
			res.Inserted += int(n)
		}
		res.Duplicates = len(b.Observations) - res.Inserted
		if err := s.countReadings(ctx, tx, fresh, added); err != nil {
			return err
		}
		ph.done(phaseCounters)
		return nil
	})
	if err != nil {
		return IngestResult{}, err
	}
	ph.done(phaseCommit)
	return res, nil
}

// writeStations locks and upserts the batch's stations, gives every row its station
// key, and returns how many stations changed.
func (s *sqlStore) writeStations(ctx context.Context, tx txn, stations []contract.Station, rows []row, uppers []string, authoritative bool) (int, error) {
	stored, err := s.lockStations(ctx, tx, stations)
	if err != nil {
		return 0, err
	}
	keys := make(map[string]int32, len(stations))
	changed := 0
	for _, st := range stations {
		upper := strings.ToUpper(st.ExternalID)
		cur, exists := stored[upper]
		key, ch, err := s.upsertStation(ctx, tx, st, cur, exists, authoritative)
		if err != nil {
			return 0, err
		}
		keys[upper] = key
		if ch {
			changed++
		}
	}
	for i := range rows {
		k, ok := keys[uppers[i]]
		if !ok {
			return 0, fmt.Errorf("ingest: observation of unknown station %q", uppers[i])
		}
		rows[i].station = k
	}
	return changed, nil
}

// writeReadings writes the rows not stored yet (returned) and their blocks, and returns
// how many readings each station gained.
func (s *sqlStore) writeReadings(ctx context.Context, tx txn, rows []row, ph *phaseClock) ([]row, map[int32]int64, error) {
	fresh, err := tx.unstored(ctx, rows)
	if err != nil {
		return nil, nil, err
	}
	ph.done(phaseLookup)
	// The blocks get their ids first, so that the readings (which only point at them)
	// are written while the blocks are still being compressed: PostgreSQL's insert and
	// index work and Go's compression overlap on the two cores.
	blocks, inline := groupBlocks(fresh)
	if err := tx.blockIDs(ctx, blocks); err != nil {
		return nil, nil, err
	}
	setBlockRefs(blocks, fresh)
	if err := s.packInline(fresh, inline); err != nil {
		return nil, nil, err
	}
	ph.done(phaseCompress)
	packed := s.packBlocks(blocks, fresh)
	if !overlapPack {
		if err := packed(); err != nil {
			return nil, nil, err
		}
		packed = func() error { return nil }
	}
	added, err := tx.insertReadings(ctx, fresh)
	if perr := packed(); err == nil {
		err = perr
	}
	if err != nil {
		return nil, nil, err
	}
	ph.done(phaseReadings)
	if err := tx.insertBlocks(ctx, blocks); err != nil {
		return nil, nil, err
	}
	ph.done(phaseBlocks)
	return fresh, added, nil
}

// countReadings moves the counters of the stations that gained readings. A station that
// gained none is not written: a replay (the NDBC 45-day file polled again) updates no row.
func (s *sqlStore) countReadings(ctx context.Context, tx txn, fresh []row, added map[int32]int64) error {
	last := map[int32]int64{}
	for _, r := range fresh {
		if r.ts > last[r.station] || last[r.station] == 0 {
			last[r.station] = r.ts
		}
	}
	var counts []stationCount
	for k, ts := range last {
		if added[k] > 0 {
			counts = append(counts, stationCount{k, ts, added[k]})
		}
	}
	slices.SortFunc(counts, func(a, b stationCount) int { return cmp.Compare(a.key, b.key) })
	if err := tx.addCounts(ctx, counts); err != nil {
		return fmt.Errorf("ingest: station counters: %w", err)
	}
	return nil
}

// stationCount is what a batch adds to a station's counters.
type stationCount struct {
	key      int32
	last     int64 // newest reading's time
	readings int64
}

// packInline encodes and compresses the rows that keep their values (the indexes
// inline), on every CPU. Only readings not stored yet are encoded: a replay encodes
// nothing.
func (s *sqlStore) packInline(rows []row, inline []int) error {
	return parallelMin(len(inline), 64, func(lo, hi int) error {
		p := newPacker(s.codec)
		for _, i := range inline[lo:hi] {
			if err := p.inline(&rows[i]); err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
		}
		return nil
	})
}

// packBlocks encodes and compresses blocks in the background, on every CPU (one
// dictionary encode per block instead of two per reading), and returns the wait for it.
func (s *sqlStore) packBlocks(blocks []block, rows []row) (wait func() error) {
	done := make(chan error, 1)
	go func() {
		done <- parallelMin(len(blocks), 16, func(lo, hi int) error {
			p := newPacker(s.codec)
			for i := lo; i < hi; i++ {
				if err := p.block(&blocks[i], rows); err != nil {
					return fmt.Errorf("ingest: %w", err)
				}
			}
			return nil
		})
	}()
	return func() error { return <-done }
}

// prepareRows encodes the observations' measurements JSON (outside the transaction, on
// every CPU), makes the dictionaries of formats not seen before, and drops repeats of one
// (station, time) within the batch, keeping the last. Compression waits until the
// transaction knows which readings are new.
func (s *sqlStore) prepareRows(ctx context.Context, b Batch) ([]row, []string, error) {
	n := len(b.Observations)
	fetched := b.FetchedAt.UnixMilli()
	horizon := s.horizon.Load()
	// One row per (station, time): the last observation wins. Readings older than what
	// retention already removed are not stored again (a source that repeats 45 days would
	// otherwise bring them back every poll). Stations are numbered first so that the
	// repeat check hashes two integers, not a string, per reading.
	type rowKey struct {
		station int32
		ts      int64
	}
	stationIdx := map[string]int32{}
	index := make(map[rowKey]int, n)
	out := make([]row, 0, n)
	uppers := make([]string, 0, n)
	for i := range b.Observations {
		o := &b.Observations[i]
		ts := o.Time.UTC().Truncate(time.Millisecond).UnixMilli()
		if horizon != 0 && ts < horizon {
			continue
		}
		upper := strings.ToUpper(o.StationID)
		si, ok := stationIdx[upper]
		if !ok {
			si = int32(len(stationIdx))
			stationIdx[upper] = si
		}
		r := row{ts: ts, fetched: fetched, lat: o.Lat, lon: o.Lon, format: o.RawFormat, meas: o.Measurements, rawPlain: o.Raw}
		if r.format == "" {
			r.format = b.Provider
		}
		k := rowKey{si, ts}
		if j, ok := index[k]; ok {
			out[j] = r
			continue
		}
		index[k] = len(out)
		out = append(out, r)
		uppers = append(uppers, upper)
	}
	if err := s.setDicts(ctx, out, uppers); err != nil {
		return nil, nil, err
	}
	return out, uppers, nil
}

// setDicts gives every row its dictionaries, creating those of formats not seen before
// from up to 8 samples of different stations (what varies between stations is what the
// dictionary must cover).
func (s *sqlStore) setDicts(ctx context.Context, rows []row, uppers []string) error {
	mDict, rawDict := map[string]uint32{}, map[string]uint32{}
	mSamples, rawSamples := map[string][][]canon.Measurement{}, map[string][][]byte{}
	mJSON := map[string][][]byte{}
	type seenKey struct{ format, station string }
	mSeen, rawSeen := map[seenKey]bool{}, map[seenKey]bool{}
	s.mu.Lock()
	for i := range rows {
		f := rows[i].format
		if _, ok := mDict[f]; ok {
			continue
		}
		mID, mOK := s.dicts["m:"+f]
		rawID, rawOK := s.dicts["raw:"+f]
		if mOK && rawOK {
			mDict[f], rawDict[f] = mID, rawID
		}
	}
	s.mu.Unlock()
	for i := range rows {
		f := rows[i].format
		if _, known := rawDict[f]; known {
			continue
		}
		if k := (seenKey{f, uppers[i]}); !mSeen[k] && len(mSamples[f]) < 8 {
			mSeen[k] = true
			mSamples[f] = append(mSamples[f], rows[i].meas)
		}
		if k := (seenKey{f, uppers[i]}); len(rows[i].rawPlain) > 0 && !rawSeen[k] && len(rawSamples[f]) < 8 {
			rawSeen[k] = true
			rawSamples[f] = append(rawSamples[f], rows[i].rawPlain)
		}
	}
	me := newMeasEncoder()
	for f, samples := range mSamples {
		for _, ms := range samples {
			j, err := me.encode(nil, ms)
			if err != nil {
				return fmt.Errorf("ingest: measurements of format %s: %w", f, err)
			}
			mJSON[f] = append(mJSON[f], j)
		}
	}
	var err error
	for f, samples := range mJSON {
		if mDict[f], err = s.dict(ctx, "m:"+f, samples); err != nil {
			return err
		}
	}
	for f, samples := range rawSamples {
		if rawDict[f], err = s.dict(ctx, "raw:"+f, samples); err != nil {
			return err
		}
	}
	for i := range rows {
		r := &rows[i]
		r.mDict = mDict[r.format]
		if len(r.rawPlain) > 0 {
			if r.rawDict = rawDict[r.format]; r.rawDict == 0 {
				return fmt.Errorf("ingest: raw format %s of %s has no dictionary entry", r.format, uppers[i])
			}
		}
	}
	return nil
}

// parallel runs fn over [0, n) in contiguous chunks on every CPU; small inputs run inline.
func parallel(n int, fn func(lo, hi int) error) error { return parallelMin(n, 2048, fn) }

// parallelMin is parallel for units of work worth a goroutine from least of them up.
func parallelMin(n, least int, fn func(lo, hi int) error) error {
	workers := runtime.GOMAXPROCS(0)
	if n < least || workers < 2 {
		return fn(0, n)
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	chunk := (n + workers - 1) / workers
	for w := 0; w < workers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, n)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = fn(lo, hi)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// mergeStations combines the batch's station metadata with what its observations show
// (parameters, location) into the stations to upsert.
func (s *sqlStore) mergeStations(ctx context.Context, b Batch) ([]contract.Station, error) {
	byUpper := map[string]*contract.Station{}
	var order []string
	add := func(st contract.Station) *contract.Station {
		u := strings.ToUpper(st.ExternalID)
		if cur, ok := byUpper[u]; ok {
			return cur
		}
		c := st
		byUpper[u] = &c
		order = append(order, u)
		return &c
	}
	for _, st := range b.Stations {
		if err := contract.ValidExternalID(st.ExternalID); err != nil {
			return nil, fmt.Errorf("ingest: station %q: %w", st.ExternalID, err)
		}
		add(st)
	}
	stored, err := s.storedStations(ctx, b, byUpper)
	if err != nil {
		return nil, err
	}
	for _, o := range b.Observations {
		if err := contract.ValidExternalID(o.StationID); err != nil {
			return nil, fmt.Errorf("ingest: observation station %q: %w", o.StationID, err)
		}
		if o.Time.IsZero() {
			return nil, fmt.Errorf("ingest: observation of %q has no time", o.StationID)
		}
		u := strings.ToUpper(o.StationID)
		st, ok := byUpper[u]
		if !ok {
			if cur, found := stored[u]; found {
				st = add(cur.Station)
			} else {
				st = add(contract.Station{ExternalID: o.StationID, Name: o.StationID})
			}
		}
		for _, m := range o.Measurements {
			if !contains(st.DataTypes, m.Parameter) {
				st.DataTypes = append(st.DataTypes, m.Parameter)
			}
		}
		if st.Latitude == nil && o.Lat != nil && o.Lon != nil {
			st.Latitude, st.Longitude = o.Lat, o.Lon
		}
	}
	sort.Strings(order) // the lock order of upsertStation
	out := make([]contract.Station, 0, len(order))
	for _, u := range order {
		st := *byUpper[u]
		if st.ProviderSlug == "" {
			st.ProviderSlug = b.Provider
		}
		if st.FeedSlug == "" {
			st.FeedSlug = b.Feed
		}
		if st.FeedSlug == "" {
			st.FeedSlug = b.Provider
		}
		if st.Name == "" {
			st.Name = st.ExternalID
		}
		if st.Status == "" {
			st.Status = "active"
		}
		out = append(out, st)
	}
	return out, nil
}

// storedStations reads, in one query per 500, the stored rows of the stations that the
// batch's observations name and its station list does not.
func (s *sqlStore) storedStations(ctx context.Context, b Batch, listed map[string]*contract.Station) (map[string]stationRec, error) {
	var uppers []any
	seen := map[string]bool{}
	for _, o := range b.Observations {
		u := strings.ToUpper(o.StationID)
		if listed[u] == nil && !seen[u] {
			seen[u] = true
			uppers = append(uppers, u)
		}
	}
	out := make(map[string]stationRec, len(uppers))
	const chunk = 500
	for start := 0; start < len(uppers); start += chunk {
		part := uppers[start:min(start+chunk, len(uppers))]
		rows, err := s.d.query(ctx, s.q(`SELECT `+stationCols+` FROM stations WHERE external_upper IN (?`+strings.Repeat(", ?", len(part)-1)+`)`), part...)
		if err != nil {
			return nil, fmt.Errorf("ingest: read stations: %w", err)
		}
		for rows.Next() {
			r, err := scanStation(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("ingest: read stations: %w", err)
			}
			out[strings.ToUpper(r.ExternalID)] = r
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("ingest: read stations: %w", err)
		}
	}
	return out, nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// lockStations reads and locks the stored rows of stations in one query. Rows are locked
// before any reading is written, and batches lock their stations in one order (by id,
// as are the inserts of new ones that follow), so replicas writing the same stations
// queue up instead of deadlocking on each other's readings.
func (s *sqlStore) lockStations(ctx context.Context, tx txn, stations []contract.Station) (map[string]stationRec, error) {
	out := make(map[string]stationRec, len(stations))
	const chunk = 500
	for start := 0; start < len(stations); start += chunk {
		part := stations[start:min(start+chunk, len(stations))]
		args := make([]any, len(part))
		for i, st := range part {
			args[i] = strings.ToUpper(st.ExternalID)
		}
		rows, err := tx.query(ctx, s.q(`SELECT `+stationCols+` FROM stations WHERE external_upper IN (?`+
			strings.Repeat(", ?", len(part)-1)+`) ORDER BY external_upper`+s.d.forUpdate), args...)
		if err != nil {
			return nil, fmt.Errorf("ingest: read stations: %w", err)
		}
		for rows.Next() {
			r, err := scanStation(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("ingest: read stations: %w", err)
			}
			out[strings.ToUpper(r.ExternalID)] = r
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("ingest: read stations: %w", err)
		}
	}
	return out, nil
}

// upsertStation writes st unless the stored row already says the same, keeping the stored
// data types that st lacks (a station never forgets a parameter it reported). It returns
// the station key and whether anything changed (which moves updated_at, the cursor of the
// gateway's incremental sync).
func (s *sqlStore) upsertStation(ctx context.Context, tx txn, st contract.Station, cur stationRec, exists, authoritative bool) (int32, bool, error) {
	upper := strings.ToUpper(st.ExternalID)
	if exists && !authoritative {
		in := st
		st = cur.Station
		st.DataTypes = append([]string(nil), cur.DataTypes...)
		for _, p := range in.DataTypes {
			if !contains(st.DataTypes, p) {
				st.DataTypes = append(st.DataTypes, p)
			}
		}
		if st.Latitude == nil {
			st.Latitude, st.Longitude = in.Latitude, in.Longitude
		}
		if st.Name == "" || st.Name == st.ExternalID {
			st.Name = in.Name
		}
		if st.Description == "" {
			st.Description = in.Description
		}
		if st.SensorType == "" {
			st.SensorType = in.SensorType
		}
		if st.DeploymentDate == "" {
			st.DeploymentDate = in.DeploymentDate
		}
		if st.ReportingIntervalS == 0 {
			st.ReportingIntervalS = in.ReportingIntervalS
		}
		if st.Status == "" {
			st.Status = in.Status
		}
	}
	if exists {
		for _, p := range cur.DataTypes {
			if !contains(st.DataTypes, p) {
				st.DataTypes = append(st.DataTypes, p)
			}
		}
		if st.Latitude == nil {
			st.Latitude, st.Longitude = cur.Latitude, cur.Longitude
		}
		if st.Description == "" {
			st.Description = cur.Description
		}
		if st.SensorType == "" {
			st.SensorType = cur.SensorType
		}
		if st.DeploymentDate == "" {
			st.DeploymentDate = cur.DeploymentDate
		}
		if st.ReportingIntervalS == 0 {
			st.ReportingIntervalS = cur.ReportingIntervalS
		}
		if st.Name == st.ExternalID && cur.Name != "" {
			st.Name = cur.Name
		}
	}
	sort.Strings(st.DataTypes)
	if st.DataTypes == nil {
		st.DataTypes = []string{}
	}
	if exists && sameStation(cur.Station, st) {
		return cur.key, false, nil
	}
	dt, _ := json.Marshal(st.DataTypes)
	var lat, lon any
	if st.Latitude != nil && st.Longitude != nil {
		lat, lon = *st.Latitude, *st.Longitude
	}
	var decom any
	if st.DecommissionedDate != nil {
		decom = *st.DecommissionedDate
	}
	args := []any{st.ExternalID, upper, st.ProviderSlug, st.FeedSlug, st.Name, st.Description, st.SensorType, st.Status,
		string(dt), st.DeploymentDate, decom, lat, lon, st.ReportingIntervalS, s.now().UnixMilli()}
	var key int32
	err := tx.queryRow(ctx, s.q(`INSERT INTO stations (external_id, external_upper, provider, feed, name, description, sensor_type,
		status, data_types, deployment_date, decommissioned_date, latitude, longitude, reporting_interval_s, updated_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (external_upper) DO UPDATE SET external_id = excluded.external_id, provider = excluded.provider,
		feed = excluded.feed, name = excluded.name, description = excluded.description, sensor_type = excluded.sensor_type,
		status = excluded.status, data_types = excluded.data_types, deployment_date = excluded.deployment_date,
		decommissioned_date = excluded.decommissioned_date, latitude = excluded.latitude, longitude = excluded.longitude,
		reporting_interval_s = excluded.reporting_interval_s, updated_ms = excluded.updated_ms
		RETURNING skey`), args...).Scan(&key)
	if err != nil {
		return 0, false, fmt.Errorf("ingest: upsert station %q: %w", st.ExternalID, err)
	}
	return key, true, nil
}

func sameStation(a, b contract.Station) bool {
	eqf := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqs := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	if len(a.DataTypes) != len(b.DataTypes) {
		return false
	}
	for i := range a.DataTypes {
		if a.DataTypes[i] != b.DataTypes[i] {
			return false
		}
	}
	return a.ExternalID == b.ExternalID && a.ProviderSlug == b.ProviderSlug && a.FeedSlug == b.FeedSlug &&
		a.Name == b.Name && a.Description == b.Description && a.SensorType == b.SensorType && a.Status == b.Status &&
		a.DeploymentDate == b.DeploymentDate && eqs(a.DecommissionedDate, b.DecommissionedDate) &&
		eqf(a.Latitude, b.Latitude) && eqf(a.Longitude, b.Longitude) && a.ReportingIntervalS == b.ReportingIntervalS
}

// Stats implements Store.
func (s *sqlStore) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Dialect: s.d.name}
	var last sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT count(*), max(last_reading_ms) FROM stations`).Scan(&st.Stations, &last); err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	if last.Valid {
		t := time.UnixMilli(last.Int64).UTC()
		st.LastReading = &t
	}
	return st, nil
}

// Footprint implements Store.
func (s *sqlStore) Footprint(ctx context.Context) (Footprint, error) {
	var f Footprint
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM readings`).Scan(&f.Readings); err != nil {
		return f, fmt.Errorf("footprint: %w", err)
	}
	n, err := s.d.size(ctx)
	if err != nil {
		return f, err
	}
	f.Bytes = n
	return f, nil
}
