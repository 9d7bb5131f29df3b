package store

import (
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
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
)

// row is one reading ready to be written.
type row struct {
	station      int32
	ts           int64
	fetched      int64
	lat, lon     *float64
	measurements []byte
	rawFormat    *int32
	raw          []byte
}

// txn is the part of a transaction the ingest path needs, over pgx or database/sql.
type txn interface {
	exec(ctx context.Context, q string, args ...any) (int64, error)
	queryRow(ctx context.Context, q string, args ...any) scanner
	// insertReadings writes rows, skipping those already stored, and returns how many
	// were new per station key.
	insertReadings(ctx context.Context, rows []row) (map[int32]int64, error)
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
	close    func() error
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
		if r.Measurements, err = s.decode(ctx, m); err != nil {
			return nil, fmt.Errorf("reading %s of %q: measurements: %w", r.Time.Format(time.RFC3339), st.ExternalID, err)
		}
		if withRaw && raw != nil {
			if r.Raw, err = s.decode(ctx, raw); err != nil {
				return nil, fmt.Errorf("reading %s of %q: raw: %w", r.Time.Format(time.RFC3339), st.ExternalID, err)
			}
			if rawFormat.Valid {
				r.RawFormat, err = s.dictFormat(ctx, uint32(rawFormat.Int64))
				if err != nil {
					return nil, err
				}
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("readings of %q: %w", st.ExternalID, err)
	}
	return out, nil
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
	keys := map[string]int32{}
	err = s.d.inTx(ctx, func(tx txn) error {
		res.Stations = 0
		for _, st := range stations {
			key, changed, err := s.upsertStation(ctx, tx, st, len(b.Observations) == 0)
			if err != nil {
				return err
			}
			keys[strings.ToUpper(st.ExternalID)] = key
			if changed {
				res.Stations++
			}
		}
		last := map[int32]int64{}
		for i := range rows {
			k, ok := keys[uppers[i]]
			if !ok {
				return fmt.Errorf("ingest: observation of unknown station %q", uppers[i])
			}
			rows[i].station = k
			if rows[i].ts > last[k] {
				last[k] = rows[i].ts
			}
		}
		added, err := tx.insertReadings(ctx, rows)
		if err != nil {
			return err
		}
		res.Inserted = 0
		for _, n := range added {
			res.Inserted += int(n)
		}
		res.Duplicates = len(b.Observations) - res.Inserted
		for k, ts := range last {
			if _, err := tx.exec(ctx, s.q(`UPDATE stations SET last_reading_ms = `+s.d.greatest+`(COALESCE(last_reading_ms, 0), ?),
				reading_count = reading_count + ? WHERE skey = ?`), ts, added[k], k); err != nil {
				return fmt.Errorf("ingest: last reading of station %d: %w", k, err)
			}
		}
		return nil
	})
	if err != nil {
		return IngestResult{}, err
	}
	return res, nil
}

// prepareRows encodes observations (outside the transaction: compression is the costly
// part) and drops repeats of one (station, time) within the batch, keeping the last.
func (s *sqlStore) prepareRows(ctx context.Context, b Batch) ([]row, []string, error) {
	n := len(b.Observations)
	formats := make([]string, n)
	ms := make([][]byte, n)
	for i, o := range b.Observations {
		formats[i] = o.RawFormat
		if formats[i] == "" {
			formats[i] = b.Provider
		}
	}
	// Measurements JSON, in parallel: encoding is most of the ingest CPU.
	err := parallel(n, func(lo, hi int) error {
		me := newMeasEncoder()
		for i := lo; i < hi; i++ {
			o := &b.Observations[i]
			j, err := me.encode(nil, o.Measurements)
			if err != nil {
				return fmt.Errorf("ingest: measurements of %s at %s: %w", o.StationID, o.Time.Format(time.RFC3339), err)
			}
			ms[i] = j
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	// Dictionaries of formats not seen before, from up to 8 samples of different stations
	// (what varies between stations is what the dictionary must cover).
	mDict, rawDict := map[string]uint32{}, map[string]uint32{}
	mSamples, rawSamples := map[string][][]byte{}, map[string][][]byte{}
	mSeen, rawSeen := map[string]bool{}, map[string]bool{}
	for i, o := range b.Observations {
		f := formats[i]
		if k := f + "\x00" + o.StationID; !mSeen[k] && len(mSamples[f]) < 8 {
			mSeen[k] = true
			mSamples[f] = append(mSamples[f], ms[i])
		}
		if k := f + "\x00" + o.StationID; len(o.Raw) > 0 && !rawSeen[k] && len(rawSamples[f]) < 8 {
			rawSeen[k] = true
			rawSamples[f] = append(rawSamples[f], o.Raw)
		}
	}
	for f, samples := range mSamples {
		if mDict[f], err = s.dict(ctx, "m:"+f, samples); err != nil {
			return nil, nil, err
		}
	}
	for f, samples := range rawSamples {
		if rawDict[f], err = s.dict(ctx, "raw:"+f, samples); err != nil {
			return nil, nil, err
		}
	}
	// Compression, in parallel.
	fetched := b.FetchedAt.UnixMilli()
	all := make([]row, n)
	err = parallel(n, func(lo, hi int) error {
		for i := lo; i < hi; i++ {
			o := &b.Observations[i]
			f := formats[i]
			r := row{ts: o.Time.UTC().Truncate(time.Millisecond).UnixMilli(), fetched: fetched, lat: o.Lat, lon: o.Lon}
			r.measurements = s.codec.encode(mDict[f], ms[i], nil)
			if len(o.Raw) > 0 {
				id := int32(rawDict[f])
				if id == 0 {
					return fmt.Errorf("ingest: raw format %s of %s has no dictionary entry", f, o.StationID)
				}
				r.raw = s.codec.encode(rawDict[f], o.Raw, nil)
				r.rawFormat = &id
			}
			all[i] = r
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	// One row per (station, time): the last observation wins.
	type rowKey struct {
		upper string
		ts    int64
	}
	index := make(map[rowKey]int, n)
	out := make([]row, 0, n)
	uppers := make([]string, 0, n)
	for i, o := range b.Observations {
		upper := strings.ToUpper(o.StationID)
		k := rowKey{upper, all[i].ts}
		if j, ok := index[k]; ok {
			out[j] = all[i]
			continue
		}
		index[k] = len(out)
		out = append(out, all[i])
		uppers = append(uppers, upper)
	}
	return out, uppers, nil
}

// parallel runs fn over [0, n) in contiguous chunks on every CPU; small inputs run inline.
func parallel(n int, fn func(lo, hi int) error) error {
	workers := runtime.GOMAXPROCS(0)
	if n < 2048 || workers < 2 {
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
			stored, err := s.station(ctx, o.StationID)
			switch {
			case err == nil:
				st = add(stored.Station)
			case errors.Is(err, ErrStationNotFound):
				st = add(contract.Station{ExternalID: o.StationID, Name: o.StationID})
			default:
				return nil, err
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

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// upsertStation writes st unless the stored row already says the same, keeping the stored
// data types that st lacks (a station never forgets a parameter it reported). It returns
// the station key and whether anything changed (which moves updated_at, the cursor of the
// gateway's incremental sync).
func (s *sqlStore) upsertStation(ctx context.Context, tx txn, st contract.Station, authoritative bool) (int32, bool, error) {
	upper := strings.ToUpper(st.ExternalID)
	// The station row is locked before any reading is written, and batches lock their
	// stations in one order (by id), so replicas writing the same station queue up
	// instead of deadlocking on each other's readings.
	cur, err := scanStation(tx.queryRow(ctx, s.q(`SELECT `+stationCols+` FROM stations WHERE external_upper = ?`+s.d.forUpdate), upper))
	exists := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) && !isNoRows(err) {
		return 0, false, fmt.Errorf("ingest: read station %q: %w", st.ExternalID, err)
	}
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
	err = tx.queryRow(ctx, s.q(`INSERT INTO stations (external_id, external_upper, provider, feed, name, description, sensor_type,
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
