package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/observation"
)

// migrationFiles are the embedded migrations of dir (postgres or sqlite), as migrate runs them.
func migrationFiles(t *testing.T, dir string) fs.FS {
	t.Helper()
	files, err := fs.Sub(migrations, "migrations/"+dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// applyUpTo applies the migrations of dir numbered up to last the way the runner goose
// replaced did, as a database created by an older binary has them.
func applyUpTo(t *testing.T, db *sql.DB, dir string, last int64) {
	t.Helper()
	testenv.ApplyAsLegacyRunner(t, db, migrationFiles(t, dir), last, "")
}

// eachDialect runs fn in parallel on an empty database of each dialect: o opens it as
// the store of the ocean service, dir names its migrations.
func eachDialect(t *testing.T, fn func(t *testing.T, o Options, dir string)) {
	t.Helper()
	for dir, empty := range map[string]func(t *testing.T) Options{
		"sqlite":   func(t *testing.T) Options { return Options{SQLitePath: filepath.Join(t.TempDir(), "r.db")} },
		"postgres": func(t *testing.T) Options { return Options{DatabaseURL: testenv.Postgres(t)} },
	} {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			o := empty(t)
			o.ServiceID = "ocean"
			fn(t, o, dir)
		})
	}
}

// eachOldDatabase runs check, per dialect, on the store Open makes (migrating it) of a
// database the replaced runner migrated up to last, with a readings partition for the month
// of ts on PostgreSQL, into which fill wrote the old rows (ph(i) is the dialect's i-th
// placeholder).
func eachOldDatabase(t *testing.T, last int64, ts time.Time, fill func(t *testing.T, db *sql.DB, ph func(int) string), check func(t *testing.T, s Store)) {
	t.Helper()
	eachDialect(t, func(t *testing.T, o Options, dir string) {
		db := openSQL(t, o)
		applyUpTo(t, db, dir, last)
		ph := func(int) string { return "?" }
		if dir == "postgres" {
			m := monthStart(ts.UnixMilli())
			mustExec(t, db, fmt.Sprintf(`CREATE TABLE readings_p%s PARTITION OF readings FOR VALUES FROM (%d) TO (%d)`,
				m.Format("200601"), m.UnixMilli(), m.AddDate(0, 1, 0).UnixMilli()))
			ph = func(i int) string { return fmt.Sprintf("$%d", i) }
		}
		fill(t, db, ph)
		_ = db.Close() // the store is the database's only client from here on
		s, err := Open(context.Background(), o)
		if err != nil {
			t.Fatalf("open (migrating): %v", err)
		}
		defer s.Close()
		check(t, s)
	})
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
	fill := func(t *testing.T, db *sql.DB, ph func(int) string) {
		mustExec(t, db, `INSERT INTO dicts (name, content) VALUES ('raw:old.v1', `+ph(1)+`)`, []byte(`{}`)) // id 1
		mustExec(t, db, `INSERT INTO stations (skey, external_id, external_upper, provider, feed, name, updated_ms, last_reading_ms, reading_count)
			VALUES (1, 'OLD1', 'OLD1', 'ndbc', 'ndbc', 'Old', 0, `+ph(1)+`, 1)`, oldTS.UnixMilli())
		mustExec(t, db, `INSERT INTO readings (station, ts, fetched_ms, measurements, raw_format, raw) VALUES (1, `+ph(1)+`, `+ph(2)+`, `+ph(3)+`, 1, `+ph(4)+`)`,
			oldTS.UnixMilli(), oldTS.UnixMilli(), []byte(oldMeas), []byte(oldRaw))
	}
	eachOldDatabase(t, 2, oldTS, fill, func(t *testing.T, s Store) {
		latest, err := s.LatestReading(ctx, "OLD1")
		// A reading stored before quality flags is served as not evaluated.
		wantMeas := strings.Replace(oldMeas, `"value_original":3}`, `"value_original":3,"qc":{"flag":2,"failed":[]}}`, 1)
		if err != nil || string(latest.Measurements) != wantMeas || string(latest.Raw) != oldRaw || latest.RawFormat != "old.v1" {
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
		if string(rs[0].Raw) != oldRaw || string(rs[0].Measurements) != wantMeas {
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
		return testenv.OpenSQLite(t, o.SQLitePath)
	}
	return testenv.OpenPostgres(t, o.DatabaseURL)
}

// assertVersions checks goose's version table: every embedded migration of dir once.
func assertVersions(t *testing.T, db *sql.DB, dir string) {
	t.Helper()
	testenv.AssertMigratedOnce(t, db, migrationTable, migrationFiles(t, dir))
}

// openTwice opens the store of o twice: the first Open migrates, the second finds nothing
// left to do.
func openTwice(t *testing.T, o Options) {
	t.Helper()
	for range 2 {
		s, err := Open(context.Background(), o)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		_ = s.Close()
	}
}

// A fresh database gets every migration once; opening it again applies nothing.
func TestMigrateFreshDatabase(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, o Options, dir string) {
		openTwice(t, o)
		assertVersions(t, openSQL(t, o), dir)
	})
}

// A database the replaced runner migrated completely (schema_migrations rows) upgrades in
// place: its versions are adopted into goose's table once and no migration runs again (one
// would fail: CREATE TABLE stations exists). A station written before survives.
func TestMigrateAdoptsOldRunnerVersions(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, o Options, dir string) {
		db := openSQL(t, o)
		applyUpTo(t, db, dir, 1<<30)
		mustExec(t, db, `INSERT INTO stations (skey, external_id, external_key, provider, feed, name, updated_ms, last_reading_ms, reading_count)
				VALUES (1, 'OLD1', 'OLD1', 'ndbc', 'ndbc', 'Old', 0, 0, 0)`)
		openTwice(t, o)
		assertVersions(t, db, dir)
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM stations WHERE external_id = 'OLD1'`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("station of the old database: %d, %v", n, err)
		}
	})
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
