package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	migrator "github.com/sensorgate/sensorgate/pkg/migrate"
)

// openPostgres wires s to PostgreSQL: reads through database/sql over a pgx pool, ingest
// transactions on pgx directly (COPY needs the native connection).
func openPostgres(ctx context.Context, s *sqlStore, o Options) error {
	cfg, err := pgxpool.ParseConfig(o.DatabaseURL)
	if err != nil {
		return fmt.Errorf("store: readings database URL: %w", err)
	}
	cfg.MaxConns = int32(o.MaxConns)
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 8
	}
	cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("store: connect PostgreSQL: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return fmt.Errorf("store: PostgreSQL at %s:%d does not answer: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	db := stdlib.OpenDBFromPool(pool)
	if err := migrate(ctx, db, migrator.Postgres, "postgres", o.Logger); err != nil {
		_ = db.Close()
		pool.Close()
		return err
	}
	method := o.InsertMethod
	switch method {
	case "":
		method = InsertCopy
	case InsertCopy, InsertStaged, InsertUnnest, InsertValues:
	default:
		_ = db.Close()
		pool.Close()
		return fmt.Errorf("store: insert method must be %s, %s, %s or %s, got %q", InsertCopy, InsertStaged, InsertUnnest, InsertValues, method)
	}
	p := &pgParts{pool: pool, known: map[int64]bool{}}
	s.db = db
	s.d = dialect{
		name:      "postgres",
		greatest:  "GREATEST",
		forUpdate: " FOR UPDATE",
		rebind:    rebindDollar,
		prepare:   p.ensure,
		pruned:    p.forget,
		query: func(ctx context.Context, q string, args ...any) (rowsIter, error) {
			rows, err := pool.Query(ctx, q, args...)
			if err != nil {
				return nil, err
			}
			return pgRows{rows}, nil
		},
		queryRow: func(ctx context.Context, q string, args ...any) scanner { return pool.QueryRow(ctx, q, args...) },
		inTx: func(ctx context.Context, fn func(txn) error) error {
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				// The commit does not wait for the WAL flush. Safe here: ingestion is
				// idempotent and every source is fetched again after a restart (validators
				// are kept only once a batch is stored), so a crash that loses the last
				// commits loses nothing that the next poll does not write again; PostgreSQL
				// stays consistent either way. It saves the commit's fsync wait per batch.
				if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
					return fmt.Errorf("ingest: synchronous_commit: %w", err)
				}
				return fn(pgTx{tx: tx, method: method})
			})
			p.forgetOnMissingPartition(err)
			return err
		},
		size: func(ctx context.Context) (int64, error) {
			var n int64
			err := pool.QueryRow(ctx, `SELECT COALESCE(sum(pg_total_relation_size(inhrelid)), 0)::bigint FROM pg_inherits WHERE inhparent IN ('readings'::regclass, 'blocks'::regclass)`).Scan(&n)
			if err != nil {
				return 0, fmt.Errorf("readings size: %w", err)
			}
			return n, nil
		},
		close: func() error {
			err := db.Close()
			pool.Close()
			return err
		},
	}
	return nil
}

// pgParts creates the monthly partitions of readings on demand, so that retention is a
// partition drop and a time-bounded query touches only its months.
type pgParts struct {
	pool  *pgxpool.Pool
	mu    sync.Mutex
	known map[int64]bool // month start (ms) -> partition exists
}

func monthStart(ms int64) time.Time {
	t := time.UnixMilli(ms).UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

func (p *pgParts) ensure(ctx context.Context, rows []row) error {
	months := map[int64]time.Time{}
	for _, r := range rows {
		m := monthStart(r.ts)
		months[m.UnixMilli()] = m
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, m := range months {
		if p.known[k] {
			continue
		}
		if m.Year() < 1900 || m.Year() > 2200 {
			return fmt.Errorf("store: reading time %s is outside the years 1900-2200", m.Format("2006-01"))
		}
		suffix := fmt.Sprintf("_p%04d%02d", m.Year(), int(m.Month()))
		bounds := fmt.Sprintf(`FOR VALUES FROM (%d) TO (%d)`, m.UnixMilli(), m.AddDate(0, 1, 0).UnixMilli())
		// A block row up to a page (8 KB) stays inline and uncompressed: its values are
		// compressed already (zstd), and the default (2 KB) would have PostgreSQL try pglz on them and
		// move them to TOAST, a second lookup per block read.
		for _, ddl := range []string{
			`CREATE TABLE IF NOT EXISTS readings` + suffix + ` PARTITION OF readings ` + bounds,
			`CREATE TABLE IF NOT EXISTS blocks` + suffix + ` PARTITION OF blocks ` + bounds + ` WITH (toast_tuple_target = 8160)`,
		} {
			if err := p.create(ctx, ddl); err != nil {
				return err
			}
		}
		p.known[k] = true
	}
	return nil
}

func (p *pgParts) create(ctx context.Context, ddl string) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		// Two processes creating the same partition at once can collide in the catalog;
		// the loser retries and finds it.
		if _, err = p.pool.Exec(ctx, ddl); err == nil || !strings.Contains(err.Error(), "already exists") {
			break
		}
	}
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("store: %s: %w", ddl, err)
	}
	return nil
}

// forget makes the partitions of months before cutoff (ms) be created again if needed.
func (p *pgParts) forget(cutoff int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.known {
		if k < cutoff {
			delete(p.known, k)
		}
	}
}

// forgetOnMissingPartition drops what p knows when err says a row found no partition:
// another replica's retention dropped a month this process still remembered, and the
// ingest loop's next attempt creates it again.
func (p *pgParts) forgetOnMissingPartition(err error) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23514" { // check_violation: no partition for the row
		p.mu.Lock()
		p.known = map[int64]bool{}
		p.mu.Unlock()
	}
}

type pgTx struct {
	tx     pgx.Tx
	method string
}

func (t pgTx) exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (t pgTx) query(ctx context.Context, q string, args ...any) (rowsIter, error) {
	rows, err := t.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgRows{rows}, nil
}

// addCounts updates every station's counters in one statement.
func (t pgTx) addCounts(ctx context.Context, counts []stationCount) error {
	if len(counts) == 0 {
		return nil
	}
	keys, last, n := make([]int32, len(counts)), make([]int64, len(counts)), make([]int64, len(counts))
	for i, c := range counts {
		keys[i], last[i], n[i] = c.key, c.last, c.readings
	}
	_, err := t.tx.Exec(ctx, `UPDATE stations s SET last_reading_ms = GREATEST(COALESCE(s.last_reading_ms, u.last), u.last),
		reading_count = s.reading_count + u.n
		FROM unnest($1::int4[], $2::int8[], $3::int8[]) AS u(skey, last, n) WHERE s.skey = u.skey`, keys, last, n)
	return err
}

func (t pgTx) queryRow(ctx context.Context, q string, args ...any) scanner {
	return t.tx.QueryRow(ctx, q, args...)
}

var (
	readingCols = []string{"station", "ts", "fetched_ms", "lat", "lon", "measurements", "raw_format", "raw"}
	blockCols   = []string{"id", "station", "ts", "ts_last", "measurements", "raw_format", "raw"}
)

// blockIDs takes ids for blocks from the sequence in one round trip.
func (t pgTx) blockIDs(ctx context.Context, blocks []block) error {
	if len(blocks) == 0 {
		return nil
	}
	rows, err := t.tx.Query(ctx, `SELECT nextval('blocks_id_seq') FROM generate_series(1, $1)`, len(blocks))
	if err != nil {
		return fmt.Errorf("ingest: block ids: %w", err)
	}
	i := 0
	for rows.Next() {
		if err := rows.Scan(&blocks[i].id); err != nil {
			rows.Close()
			return fmt.Errorf("ingest: block ids: %w", err)
		}
		i++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("ingest: block ids: %w", err)
	}
	return nil
}

// insertBlocks COPYs blocks in. Blocks never conflict (their ids are new), so this is
// outside the readings' savepoint: if another replica stored some of the readings in
// between, the blocks they would have used stay unreferenced until retention removes
// their month.
func (t pgTx) insertBlocks(ctx context.Context, blocks []block) error {
	if len(blocks) == 0 {
		return nil
	}
	_, err := t.tx.CopyFrom(ctx, pgx.Identifier{"blocks"}, blockCols, pgx.CopyFromSlice(len(blocks), func(i int) ([]any, error) {
		b := &blocks[i]
		return []any{b.id, b.station, b.ts, b.tsLast, b.measurements, nullInt32(b.rawFormat), b.raw}, nil
	}))
	if err != nil {
		return fmt.Errorf("ingest: copy blocks: %w", err)
	}
	return nil
}

// countInserted wraps an INSERT .. ON CONFLICT DO NOTHING so that it answers how many rows
// each station gained.
func countInserted(insert string) string {
	return `WITH ins AS (` + insert + ` RETURNING station) SELECT station, count(*) FROM ins GROUP BY station`
}

func (t pgTx) counts(ctx context.Context, q string, args ...any) (map[int32]int64, error) {
	rows, err := t.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int32]int64{}
	for rows.Next() {
		var k int32
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, err
		}
		out[k] += n
	}
	return out, rows.Err()
}

func (t pgTx) insertReadings(ctx context.Context, rows []row) (map[int32]int64, error) {
	if len(rows) == 0 {
		return map[int32]int64{}, nil
	}
	switch t.method {
	case InsertUnnest:
		return t.insertUnnest(ctx, rows)
	case InsertStaged:
		return t.insertStaged(ctx, rows)
	case InsertValues:
		return t.insertValues(ctx, rows)
	default:
		return t.insertCopy(ctx, rows)
	}
}

// insertCopy COPYs rows (new when the batch's keys were looked up) straight into
// readings, and counts them in Go. A concurrent writer (another replica) may store one of
// them in between: the COPY then fails on the key, is rolled back to its savepoint, and
// the rows go through a temporary table and INSERT .. ON CONFLICT DO NOTHING instead.
func (t pgTx) insertCopy(ctx context.Context, fresh []row) (map[int32]int64, error) {
	added := map[int32]int64{}
	if len(fresh) == 0 {
		return added, nil
	}
	sp, err := t.tx.Begin(ctx) // savepoint
	if err != nil {
		return nil, fmt.Errorf("ingest: savepoint: %w", err)
	}
	_, err = sp.CopyFrom(ctx, pgx.Identifier{"readings"}, readingCols, copyRows(fresh))
	if err == nil {
		if err := sp.Commit(ctx); err != nil {
			return nil, fmt.Errorf("ingest: release savepoint: %w", err)
		}
		for _, r := range fresh {
			added[r.station]++
		}
		return added, nil
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" { // unique_violation
		_ = sp.Rollback(ctx)
		return nil, fmt.Errorf("ingest: copy readings: %w", err)
	}
	if err := sp.Rollback(ctx); err != nil {
		return nil, fmt.Errorf("ingest: rollback to savepoint: %w", err)
	}
	return t.insertStaged(ctx, fresh)
}

// unstored returns the rows whose (station, ts) is not stored yet.
func (t pgTx) unstored(ctx context.Context, rows []row) ([]row, error) {
	spans := stationSpans(rows)
	st, lo, hi := make([]int32, 0, len(spans)), make([]int64, 0, len(spans)), make([]int64, 0, len(spans))
	for k, sp := range spans {
		st, lo, hi = append(st, k), append(lo, sp.lo), append(hi, sp.hi)
	}
	q, err := t.tx.Query(ctx, `SELECT r.station, r.ts FROM unnest($1::int4[], $2::int8[], $3::int8[]) AS s(station, lo, hi)
		JOIN readings r ON r.station = s.station AND r.ts >= s.lo AND r.ts <= s.hi`, st, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("ingest: stored keys: %w", err)
	}
	defer q.Close()
	type key struct {
		station int32
		ts      int64
	}
	stored := map[key]struct{}{}
	for q.Next() {
		var k key
		if err := q.Scan(&k.station, &k.ts); err != nil {
			return nil, fmt.Errorf("ingest: stored keys: %w", err)
		}
		stored[k] = struct{}{}
	}
	if err := q.Err(); err != nil {
		return nil, fmt.Errorf("ingest: stored keys: %w", err)
	}
	if len(stored) == 0 {
		return rows, nil
	}
	out := make([]row, 0, len(rows)-min(len(stored), len(rows)))
	for _, r := range rows {
		if _, ok := stored[key{r.station, r.ts}]; !ok {
			out = append(out, r)
		}
	}
	return out, nil
}

func copyRows(rows []row) pgx.CopyFromSource {
	return pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		r := &rows[i]
		return []any{r.station, r.ts, r.fetched, r.lat, r.lon, r.measurements, nullInt32(r.rawFormat), r.raw}, nil
	})
}

// insertStaged COPYs into a temporary table, then inserts what is not stored yet.
func (t pgTx) insertStaged(ctx context.Context, rows []row) (map[int32]int64, error) {
	if _, err := t.tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS readings_stage (LIKE readings) ON COMMIT DELETE ROWS`); err != nil {
		return nil, fmt.Errorf("ingest: staging table: %w", err)
	}
	if _, err := t.tx.CopyFrom(ctx, pgx.Identifier{"readings_stage"}, readingCols, copyRows(rows)); err != nil {
		return nil, fmt.Errorf("ingest: copy readings: %w", err)
	}
	added, err := t.counts(ctx, countInserted(`INSERT INTO readings SELECT * FROM readings_stage ON CONFLICT DO NOTHING`))
	if err != nil {
		return nil, fmt.Errorf("ingest: insert readings: %w", err)
	}
	if _, err := t.tx.Exec(ctx, `TRUNCATE readings_stage`); err != nil {
		return nil, fmt.Errorf("ingest: clear staging table: %w", err)
	}
	return added, nil
}

func (t pgTx) insertUnnest(ctx context.Context, rows []row) (map[int32]int64, error) {
	n := len(rows)
	st, ts, fe := make([]int32, n), make([]int64, n), make([]int64, n)
	lat, lon := make([]*float64, n), make([]*float64, n)
	ms, raw := make([][]byte, n), make([][]byte, n)
	rf := make([]*int32, n)
	for i, r := range rows {
		st[i], ts[i], fe[i], lat[i], lon[i], ms[i], rf[i], raw[i] = r.station, r.ts, r.fetched, r.lat, r.lon, r.measurements, r.rawFormat, r.raw
	}
	added, err := t.counts(ctx, countInserted(`INSERT INTO readings (station, ts, fetched_ms, lat, lon, measurements, raw_format, raw)
		SELECT * FROM unnest($1::int4[], $2::int8[], $3::int8[], $4::float8[], $5::float8[], $6::bytea[], $7::int4[], $8::bytea[])
		ON CONFLICT DO NOTHING`), st, ts, fe, lat, lon, ms, rf, raw)
	if err != nil {
		return nil, fmt.Errorf("ingest: insert readings: %w", err)
	}
	return added, nil
}

func (t pgTx) insertValues(ctx context.Context, rows []row) (map[int32]int64, error) {
	const chunk = 1000 // 8 parameters a row, under the protocol's 65535
	total := map[int32]int64{}
	for start := 0; start < len(rows); start += chunk {
		part := rows[start:min(start+chunk, len(rows))]
		var b strings.Builder
		b.WriteString(`INSERT INTO readings (station, ts, fetched_ms, lat, lon, measurements, raw_format, raw) VALUES `)
		args := make([]any, 0, len(part)*8)
		for i, r := range part {
			if i > 0 {
				b.WriteByte(',')
			}
			k := i * 8
			fmt.Fprintf(&b, "($%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d)", k+1, k+2, k+3, k+4, k+5, k+6, k+7, k+8)
			args = append(args, r.station, r.ts, r.fetched, r.lat, r.lon, r.measurements, nullInt32(r.rawFormat), r.raw)
		}
		b.WriteString(` ON CONFLICT DO NOTHING`)
		added, err := t.counts(ctx, countInserted(b.String()), args...)
		if err != nil {
			return nil, fmt.Errorf("ingest: insert readings: %w", err)
		}
		for k, n := range added {
			total[k] += n
		}
	}
	return total, nil
}

// pgRows adapts pgx.Rows to rowsIter.
type pgRows struct{ pgx.Rows }

func (r pgRows) Close() { r.Rows.Close() }

// dropMonthsBefore drops the readings and blocks partitions of the months that end at or
// before cut. Each is locked before its rows are counted, so that no replica adds to it
// between the count and the drop; replicas pruning at once take turns on an advisory lock.
func (t pgTx) dropMonthsBefore(ctx context.Context, cut int64) (map[int32]int64, error) {
	out := map[int32]int64{}
	if _, err := t.tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7261530002)`); err != nil {
		return nil, fmt.Errorf("prune: lock: %w", err)
	}
	rows, err := t.tx.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'readings'::regclass ORDER BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("prune: partitions: %w", err)
	}
	var months []time.Time
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("prune: partitions: %w", err)
		}
		m, err := time.Parse("200601", strings.TrimPrefix(name, "readings_p"))
		if err != nil {
			continue // not one of ours
		}
		if m.AddDate(0, 1, 0).UnixMilli() <= cut {
			months = append(months, m)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("prune: partitions: %w", err)
	}
	for _, m := range months {
		if err := t.dropMonth(ctx, m, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dropMonth subtracts a month's readings from out and drops its partitions.
func (t pgTx) dropMonth(ctx context.Context, m time.Time, out map[int32]int64) error {
	suffix := m.Format("_p200601")
	if _, err := t.tx.Exec(ctx, `LOCK TABLE readings`+suffix+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("prune: lock readings%s: %w", suffix, err)
	}
	counts, err := t.counts(ctx, `SELECT station, count(*) FROM readings`+suffix+` GROUP BY station`)
	if err != nil {
		return fmt.Errorf("prune: count readings%s: %w", suffix, err)
	}
	for k, n := range counts {
		out[k] += n
	}
	for _, ddl := range []string{`DROP TABLE readings` + suffix, `DROP TABLE IF EXISTS blocks` + suffix} {
		if _, err := t.tx.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("prune: %s: %w", ddl, err)
		}
	}
	return nil
}

func (t pgTx) deleteReadingsBefore(ctx context.Context, cut int64) (map[int32]int64, error) {
	out, err := t.counts(ctx, `WITH d AS (DELETE FROM readings WHERE ts < $1 RETURNING station) SELECT station, count(*) FROM d GROUP BY station`, cut)
	if err != nil {
		return nil, fmt.Errorf("prune: delete readings: %w", err)
	}
	return out, nil
}
