package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/glebarez/go-sqlite" // database/sql driver "sqlite" (pure Go)

	migrator "github.com/sensorgate/sensorgate/pkg/migrate"
)

// openSQLite wires s to an embedded SQLite file in WAL mode: readers never wait for the
// writer, and the one writer (ingest) is serialized by the store.
func openSQLite(ctx context.Context, s *sqlStore, o Options) error {
	if dir := filepath.Dir(o.SQLitePath); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("store: create folder of SQLite file %s: %w", o.SQLitePath, err)
		}
	}
	dsn := o.SQLitePath + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("store: open SQLite %s: %w", o.SQLitePath, err)
	}
	db.SetMaxOpenConns(4)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return fmt.Errorf("store: open SQLite %s: %w", o.SQLitePath, err)
	}
	if err := migrate(ctx, db, migrator.SQLite, "sqlite", o.Logger); err != nil {
		_ = db.Close()
		return err
	}
	s.db = db
	s.d = dialect{
		name:     "sqlite",
		greatest: "MAX",
		rebind:   func(q string) string { return q },
		prepare:  func(context.Context, []row) error { return nil },
		pruned:   func(int64) {},
		query: func(ctx context.Context, q string, args ...any) (rowsIter, error) {
			rows, err := db.QueryContext(ctx, q, args...)
			if err != nil {
				return nil, err
			}
			return sqlRows{rows}, nil
		},
		queryRow: func(ctx context.Context, q string, args ...any) scanner { return db.QueryRowContext(ctx, q, args...) },
		inTx: func(ctx context.Context, fn func(txn) error) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return fmt.Errorf("ingest: begin: %w", err)
			}
			if err := fn(sqlTx{tx}); err != nil {
				_ = tx.Rollback()
				return err
			}
			if err := tx.Commit(); err != nil {
				return fmt.Errorf("ingest: commit: %w", err)
			}
			return nil
		},
		size: func(ctx context.Context) (int64, error) {
			var pages, size int64
			if err := db.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
				return 0, fmt.Errorf("sqlite size: %w", err)
			}
			if err := db.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&size); err != nil {
				return 0, fmt.Errorf("sqlite size: %w", err)
			}
			return pages * size, nil
		},
		close: db.Close,
	}
	return nil
}

type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t sqlTx) query(ctx context.Context, q string, args ...any) (rowsIter, error) {
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

// addCounts updates the stations' counters one statement each (in-process, no round
// trips to save).
func (t sqlTx) addCounts(ctx context.Context, counts []stationCount) error {
	for _, c := range counts {
		if _, err := t.tx.ExecContext(ctx, `UPDATE stations SET last_reading_ms = MAX(COALESCE(last_reading_ms, ?), ?),
			reading_count = reading_count + ? WHERE skey = ?`, c.last, c.last, c.readings, c.key); err != nil {
			return err
		}
	}
	return nil
}

func (t sqlTx) queryRow(ctx context.Context, q string, args ...any) scanner {
	return t.tx.QueryRowContext(ctx, q, args...)
}

// unstored returns the rows whose (station, ts) is not stored yet. The transaction holds
// SQLite's write lock from its start, so nothing is stored in between.
func (t sqlTx) unstored(ctx context.Context, rows []row) ([]row, error) {
	spans := stationSpans(rows)
	type key struct {
		station int32
		ts      int64
	}
	stored := map[key]struct{}{}
	for st, sp := range spans {
		q, err := t.tx.QueryContext(ctx, `SELECT ts FROM readings WHERE station = ? AND ts >= ? AND ts <= ?`, st, sp.lo, sp.hi)
		if err != nil {
			return nil, fmt.Errorf("ingest: stored keys: %w", err)
		}
		for q.Next() {
			var ts int64
			if err := q.Scan(&ts); err != nil {
				_ = q.Close()
				return nil, fmt.Errorf("ingest: stored keys: %w", err)
			}
			stored[key{st, ts}] = struct{}{}
		}
		if err := q.Close(); err != nil {
			return nil, fmt.Errorf("ingest: stored keys: %w", err)
		}
		if err := q.Err(); err != nil {
			return nil, fmt.Errorf("ingest: stored keys: %w", err)
		}
	}
	if len(stored) == 0 {
		return rows, nil
	}
	out := make([]row, 0, len(rows))
	for _, r := range rows {
		if _, ok := stored[key{r.station, r.ts}]; !ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// blockIDs numbers blocks after the highest stored id (the transaction holds the write
// lock).
func (t sqlTx) blockIDs(ctx context.Context, blocks []block) error {
	if len(blocks) == 0 {
		return nil
	}
	var next int64
	if err := t.tx.QueryRowContext(ctx, `SELECT COALESCE(max(id), 0) + 1 FROM blocks`).Scan(&next); err != nil {
		return fmt.Errorf("ingest: block ids: %w", err)
	}
	for i := range blocks {
		blocks[i].id = next + int64(i)
	}
	return nil
}

// insertBlocks writes blocks.
func (t sqlTx) insertBlocks(ctx context.Context, blocks []block) error {
	const chunk = 500
	for start := 0; start < len(blocks); start += chunk {
		part := blocks[start:min(start+chunk, len(blocks))]
		var b strings.Builder
		b.WriteString(`INSERT INTO blocks (id, station, ts, ts_last, measurements, raw_format, raw) VALUES `)
		args := make([]any, 0, len(part)*7)
		for i := range part {
			bl := &part[i]
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("(?,?,?,?,?,?,?)")
			args = append(args, bl.id, bl.station, bl.ts, bl.tsLast, bl.measurements, nullInt32(bl.rawFormat), bl.raw)
		}
		if _, err := t.tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("ingest: insert blocks: %w", err)
		}
	}
	return nil
}

func (t sqlTx) insertReadings(ctx context.Context, rows []row) (map[int32]int64, error) {
	const chunk = 500
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
			b.WriteString("(?,?,?,?,?,?,?,?)")
			var lat, lon any
			if r.lat != nil && r.lon != nil {
				lat, lon = *r.lat, *r.lon
			}
			args = append(args, r.station, r.ts, r.fetched, lat, lon, r.measurements, nullInt32(r.rawFormat), r.raw)
		}
		b.WriteString(` ON CONFLICT DO NOTHING RETURNING station`)
		res, err := t.tx.QueryContext(ctx, b.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("ingest: insert readings: %w", err)
		}
		for res.Next() {
			var k int32
			if err := res.Scan(&k); err != nil {
				res.Close()
				return nil, fmt.Errorf("ingest: insert readings: %w", err)
			}
			total[k]++
		}
		if err := res.Close(); err != nil {
			return nil, fmt.Errorf("ingest: insert readings: %w", err)
		}
		if err := res.Err(); err != nil {
			return nil, fmt.Errorf("ingest: insert readings: %w", err)
		}
	}
	return total, nil
}

// dropMonthsBefore drops nothing: SQLite has no partitions, deleteReadingsBefore does it.
func (t sqlTx) dropMonthsBefore(context.Context, int64) (map[int32]int64, error) {
	return map[int32]int64{}, nil
}

func (t sqlTx) deleteReadingsBefore(ctx context.Context, cut int64) (map[int32]int64, error) {
	rows, err := t.tx.QueryContext(ctx, `DELETE FROM readings WHERE ts < ? RETURNING station`, cut)
	if err != nil {
		return nil, fmt.Errorf("prune: delete readings: %w", err)
	}
	defer rows.Close()
	out := map[int32]int64{}
	for rows.Next() {
		var k int32
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("prune: delete readings: %w", err)
		}
		out[k]++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("prune: delete readings: %w", err)
	}
	return out, nil
}
