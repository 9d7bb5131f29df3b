package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/jsonbytes"
	"github.com/sensorgate/sensorgate/services/runtime/qc"
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
	verdicts       []qc.Verdict // the QARTOD tests' verdicts of meas (assess); nil when they did not run
	rawPlain       []byte       // raw fragment as served
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
	// rollupsOf reads (and on PostgreSQL locks) the stored rollup rows of keys.
	rollupsOf(ctx context.Context, keys []hourKey) (map[hourKey][]byte, error)
	// putRollups writes rollup rows, replacing the stored ones.
	putRollups(ctx context.Context, keys []hourKey, cells [][]byte) error
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
	// rollupIDs and rollupNames map the parameters of the rollups to their ids
	// (rollup_params) and back.
	rollupIDs   map[string]uint16
	rollupNames []string
	// writeMu serializes ingest batches of this process: they touch the same stations,
	// and SQLite has one writer anyway.
	writeMu sync.Mutex
	phases  phaseTimes
	// horizon is the retention cutoff of the last Prune (epoch ms): older readings are
	// not stored again.
	horizon atomic.Int64
	// committed is Options.Committed.
	committed func(ctx context.Context, readings []Committed)
	// qcOff is Options.SkipQualityTests; tracks are the QARTOD tests' memory between
	// batches (guarded by writeMu).
	qcOff  bool
	tracks trackCache
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
	if r.DataTypes, err = jsonbytes.StringList(dataType); err != nil {
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

// station finds a station by its external id: byte for byte, or else, for a request that
// spells an id in another case ("tplm2"), the one station whose id equals it ignoring ASCII
// case. Two stations that differ only in case ("21 de Mayo", "21 de mayo") are each found
// by their own spelling only: a third spelling matches both and finds neither.
func (s *sqlStore) station(ctx context.Context, externalID string) (stationRec, error) {
	r, err := scanStation(s.d.queryRow(ctx, s.q(`SELECT `+stationCols+` FROM stations WHERE external_key = ?`), stationKey(externalID)))
	if isNoRows(err) {
		r, err = s.stationFolded(ctx, externalID)
	}
	if isNoRows(err) {
		return r, fmt.Errorf("%w: %q", ErrStationNotFound, externalID)
	}
	if err != nil {
		return r, fmt.Errorf("station %q: %w", externalID, err)
	}
	return r, nil
}

// stationFolded is station's case-insensitive fallback: sql.ErrNoRows unless exactly one
// station matches.
func (s *sqlStore) stationFolded(ctx context.Context, externalID string) (stationRec, error) {
	rows, err := s.d.query(ctx, s.q(`SELECT `+stationCols+` FROM stations WHERE lower(external_key) = lower(?) LIMIT 2`), externalID)
	if err != nil {
		return stationRec{}, err
	}
	defer rows.Close()
	var found []stationRec
	for rows.Next() {
		r, err := scanStation(rows)
		if err != nil {
			return stationRec{}, err
		}
		found = append(found, r)
	}
	if err := rows.Err(); err != nil {
		return stationRec{}, err
	}
	if len(found) != 1 {
		return stationRec{}, sql.ErrNoRows
	}
	return found[0], nil
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
	query := `SELECT ` + stationCols + ` FROM stations` + cond + ` ORDER BY external_key`
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
	rs, err := s.readings(ctx, st, math.MinInt64, math.MaxInt64, 1, 0, false, true, true)
	if err != nil {
		return Reading{}, err
	}
	if len(rs) == 0 {
		return Reading{}, fmt.Errorf("%w: %q", ErrNoReadings, externalID)
	}
	return rs[0], nil
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
	if s.d.name == "postgres" {
		if err := s.db.QueryRowContext(ctx, `SELECT pg_total_relation_size('rollups')`).Scan(&f.RollupBytes); err != nil {
			return f, fmt.Errorf("footprint: rollups: %w", err)
		}
	}
	return f, nil
}

// nullInt32 is p's value as a statement argument, NULL when p is nil.
func nullInt32(p *int32) any {
	if p == nil {
		return nil
	}
	return *p
}
