package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/observation"
)

// applyUpTo applies the migrations of dir numbered up to last the way the runner goose
// replaced did (a table schema_migrations, each file in one transaction with its row), as
// a database created by an older binary has them.
func applyUpTo(t *testing.T, db *sql.DB, dir string, last int) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(migrations, "migrations/"+dir+"/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		v, err := strconv.Atoi(strings.SplitN(filepath.Base(name), "_", 2)[0])
		if err != nil {
			t.Fatalf("migration file %s: %v", name, err)
		}
		if v > last {
			break
		}
		body, err := fs.ReadFile(migrations, name)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			t.Fatalf("old runner, %s: %v", name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES (`+strconv.Itoa(v)+`, '`+filepath.Base(name)+`')`); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// A database written before blocks (migrations 0001-0002, every reading's values inline)
// migrates at Open: its readings stay readable as they are, and new readings of the same
// station go into blocks beside them.
func TestMigrateInlineReadingsToBlocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	oldTS := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	oldMeas := `[{"parameter":"wind_speed_ms","value":3,"unit":"m/s","unit_original":"m/s","value_original":3}]`
	oldRaw := `{"line":"old"}`
	cases := map[string]func(t *testing.T) Options{
		"sqlite": func(t *testing.T) Options {
			path := filepath.Join(t.TempDir(), "old.db")
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			applyUpTo(t, db, "sqlite", 2)
			mustExec(t, db, `INSERT INTO dicts (id, name, content) VALUES (1, 'raw:old.v1', x'7b7d')`)
			mustExec(t, db, `INSERT INTO stations (skey, external_id, external_upper, provider, feed, name, updated_ms, last_reading_ms, reading_count)
				VALUES (1, 'OLD1', 'OLD1', 'ndbc', 'ndbc', 'Old', 0, ?, 1)`, oldTS.UnixMilli())
			mustExec(t, db, `INSERT INTO readings (station, ts, fetched_ms, measurements, raw_format, raw) VALUES (1, ?, ?, ?, 1, ?)`,
				oldTS.UnixMilli(), oldTS.UnixMilli(), []byte(oldMeas), []byte(oldRaw))
			return Options{SQLitePath: path}
		},
		"postgres": func(t *testing.T) Options {
			url := testenv.Postgres(t)
			pool, err := pgxpool.New(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			db := stdlib.OpenDBFromPool(pool)
			defer db.Close()
			applyUpTo(t, db, "postgres", 2)
			m := monthStart(oldTS.UnixMilli())
			mustExec(t, db, fmt.Sprintf(`CREATE TABLE readings_p202601 PARTITION OF readings FOR VALUES FROM (%d) TO (%d)`, m.UnixMilli(), m.AddDate(0, 1, 0).UnixMilli()))
			mustExec(t, db, `INSERT INTO dicts (name, content) VALUES ('raw:old.v1', '\x7b7d')`) // id 1
			mustExec(t, db, `INSERT INTO stations (skey, external_id, external_upper, provider, feed, name, updated_ms, last_reading_ms, reading_count)
				VALUES (1, 'OLD1', 'OLD1', 'ndbc', 'ndbc', 'Old', 0, $1, 1)`, oldTS.UnixMilli())
			mustExec(t, db, `INSERT INTO readings (station, ts, fetched_ms, measurements, raw_format, raw) VALUES (1, $1, $1, $2, 1, $3)`,
				oldTS.UnixMilli(), []byte(oldMeas), []byte(oldRaw))
			return Options{DatabaseURL: url}
		},
	}
	for name, prepare := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := prepare(t)
			o.ServiceID = "ocean"
			s, err := Open(ctx, o)
			if err != nil {
				t.Fatalf("open (migrating): %v", err)
			}
			defer s.Close()
			latest, err := s.LatestReading(ctx, "OLD1")
			if err != nil || string(latest.Measurements) != oldMeas || string(latest.Raw) != oldRaw || latest.RawFormat != "old.v1" {
				t.Fatalf("old reading after migration = %+v (%s, %s), %v", latest, latest.Measurements, latest.Raw, err)
			}
			// New readings of the station, after the old one: a block.
			b := Batch{Provider: "ndbc"}
			for i := 1; i <= 40; i++ {
				ws, _ := canon.Normalize(canon.WindSpeedMS, float64(i), "m/s")
				b.Observations = append(b.Observations, observation.Observation{StationID: "OLD1", Time: oldTS.Add(time.Duration(i) * time.Hour),
					Measurements: []canon.Measurement{ws}, Raw: json.RawMessage(fmt.Sprintf(`{"line":"new %d"}`, i)), RawFormat: "old.v1"})
			}
			res, err := s.Ingest(ctx, b)
			if err != nil || res.Inserted != 40 {
				t.Fatalf("ingest after migration: %+v, %v", res, err)
			}
			rs, total, err := s.Readings(ctx, "OLD1", contract.ReadingsQuery{Limit: 100, Page: 1, Ascending: true, Format: contract.FormatRaw})
			if err != nil || total != 41 || len(rs) != 41 {
				t.Fatalf("readings: %d of %d, %v", len(rs), total, err)
			}
			if string(rs[0].Raw) != oldRaw || string(rs[0].Measurements) != oldMeas {
				t.Fatalf("old reading in a page: %s %s", rs[0].Measurements, rs[0].Raw)
			}
			for i, r := range rs[1:] {
				want := fmt.Sprintf(`{"line":"new %d"}`, i+1)
				if string(r.Raw) != want || r.RawFormat != "old.v1" || !json.Valid(r.Measurements) {
					t.Fatalf("new reading %d: raw %s (%s), measurements %s; want raw %s", i+1, r.Raw, r.RawFormat, r.Measurements, want)
				}
			}
		})
	}
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// openSQL opens the test database the way the test needs to look into it.
func openSQL(t *testing.T, o Options) *sql.DB {
	t.Helper()
	if o.DatabaseURL == "" {
		db, err := sql.Open("sqlite", o.SQLitePath)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	pool, err := pgxpool.New(context.Background(), o.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close(); pool.Close() })
	return db
}

// appliedVersions reads goose's version table: how many rows each version has.
func appliedVersions(t *testing.T, db *sql.DB) map[int64]int {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT version_id FROM `+migrationTable+` WHERE is_applied`)
	if err != nil {
		t.Fatalf("read %s: %v", migrationTable, err)
	}
	defer rows.Close()
	got := map[int64]int{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got[v]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// wantVersions is every embedded migration of dir once, and goose's version 0.
func wantVersions(t *testing.T, dir string) map[int64]int {
	t.Helper()
	names, err := fs.Glob(migrations, "migrations/"+dir+"/*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("migrations of %s: %v %v", dir, names, err)
	}
	want := map[int64]int{0: 1}
	for _, n := range names {
		v, err := strconv.Atoi(strings.SplitN(filepath.Base(n), "_", 2)[0])
		if err != nil {
			t.Fatal(err)
		}
		want[int64(v)] = 1
	}
	return want
}

func assertVersions(t *testing.T, db *sql.DB, dir string) {
	t.Helper()
	got, want := appliedVersions(t, db), wantVersions(t, dir)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s rows per version = %v, want %v (each migration recorded once)", migrationTable, got, want)
	}
}

func testDatabases(t *testing.T) map[string]func(t *testing.T) (Options, string) {
	return map[string]func(t *testing.T) (Options, string){
		"sqlite": func(t *testing.T) (Options, string) {
			return Options{SQLitePath: filepath.Join(t.TempDir(), "r.db")}, "sqlite"
		},
		"postgres": func(t *testing.T) (Options, string) { return Options{DatabaseURL: testenv.Postgres(t)}, "postgres" },
	}
}

// A fresh database gets every migration once; opening it again applies nothing.
func TestMigrateFreshDatabase(t *testing.T) {
	t.Parallel()
	for name, prepare := range testDatabases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o, dir := prepare(t)
			o.ServiceID = "ocean"
			for range 2 {
				s, err := Open(context.Background(), o)
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				_ = s.Close()
			}
			assertVersions(t, openSQL(t, o), dir)
		})
	}
}

// A database the replaced runner migrated completely (schema_migrations rows) upgrades in
// place: its versions are adopted into goose's table once and no migration runs again (one
// would fail: CREATE TABLE stations exists). A station written before survives.
func TestMigrateAdoptsOldRunnerVersions(t *testing.T) {
	t.Parallel()
	for name, prepare := range testDatabases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o, dir := prepare(t)
			o.ServiceID = "ocean"
			db := openSQL(t, o)
			applyUpTo(t, db, dir, 1<<30)
			mustExec(t, db, `INSERT INTO stations (skey, external_id, external_key, provider, feed, name, updated_ms, last_reading_ms, reading_count)
				VALUES (1, 'OLD1', 'OLD1', 'ndbc', 'ndbc', 'Old', 0, 0, 0)`)
			for range 2 {
				s, err := Open(context.Background(), o)
				if err != nil {
					t.Fatalf("open a database of the old runner: %v", err)
				}
				_ = s.Close()
			}
			assertVersions(t, db, dir)
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM stations WHERE external_id = 'OLD1'`).Scan(&n); err != nil || n != 1 {
				t.Fatalf("station of the old database: %d, %v", n, err)
			}
		})
	}
}

// Eight replicas opening one empty PostgreSQL database at the same moment all succeed, and
// the schema is applied once (the failure docs/deploy.md used to note: a duplicate key in
// pg_type when two created the same table).
func TestOpenConcurrentOnEmptyPostgres(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	ctx := context.Background()
	start := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			<-start
			s, err := Open(ctx, Options{DatabaseURL: url, ServiceID: "ocean", MaxConns: 2})
			if err == nil {
				err = s.Close()
			}
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent open: %v", err)
		}
	}
	assertVersions(t, openSQL(t, Options{DatabaseURL: url}), "postgres")
}
