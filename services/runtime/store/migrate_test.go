package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/observation"
)

// applyUpTo applies the migrations of dir numbered up to last, as a database created by
// an older binary has them.
func applyUpTo(t *testing.T, db *sql.DB, dir string, last int) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= last; v++ {
		names, err := fs.Glob(migrations, fmt.Sprintf("migrations/%s/%04d_*.sql", dir, v))
		if err != nil || len(names) != 1 {
			t.Fatalf("migration %d of %s: %v %v", v, dir, names, err)
		}
		body, err := fs.ReadFile(migrations, names[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := applyMigration(ctx, db, v, filepath.Base(names[0]), string(body), ""); err != nil {
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
