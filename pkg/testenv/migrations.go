package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// The helpers below serve the migration tests of pkg/migrate, the gateway's catalog store
// and the services' readings store, which all check the same things of pkg/migrate's goose
// tables (docs/catalog-store.md, "Migrations"): each migration recorded once, the versions
// of the runner goose replaced adopted.

// PostgresDB is Postgres opened: a *sql.DB on an empty database of the test, closed (and
// the database dropped) when the test ends.
func PostgresDB(tb testing.TB) *sql.DB {
	tb.Helper()
	return OpenPostgres(tb, Postgres(tb))
}

// OpenPostgres opens url through a pgx pool, as the stores do, and closes it when the test
// ends. Closing the *sql.DB earlier (before a store opens the database, say) is allowed.
func OpenPostgres(tb testing.TB, url string) *sql.DB {
	tb.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		tb.Fatalf("testenv: open %s: %v", url, err)
	}
	db := stdlib.OpenDBFromPool(pool)
	tb.Cleanup(func() { _ = db.Close(); pool.Close() })
	return db
}

// OpenSQLite opens the SQLite file at path with the driver "sqlite", which the test's
// package registers (modernc.org/sqlite), and closes it when the test ends; closing it
// earlier is allowed.
func OpenSQLite(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		tb.Fatalf("testenv: open %s: %v", path, err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// MigrationVersion is the version of a migration file named NNNN_name.sql.
func MigrationVersion(tb testing.TB, name string) int64 {
	tb.Helper()
	v, err := strconv.ParseInt(strings.SplitN(path.Base(name), "_", 2)[0], 10, 64)
	if err != nil {
		tb.Fatalf("testenv: migration file %s: %v", name, err)
	}
	return v
}

// migrationFiles are the *.sql files at the root of files, in version order (their names
// start with the zero-padded version).
func migrationFiles(tb testing.TB, files fs.FS) []string {
	tb.Helper()
	names, err := fs.Glob(files, "*.sql")
	if err != nil || len(names) == 0 {
		tb.Fatalf("testenv: migration files: %v %v", names, err)
	}
	return names
}

// AppliedVersions reads goose's version table: how many rows each applied version has.
func AppliedVersions(tb testing.TB, db *sql.DB, table string) map[int64]int {
	tb.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT version_id FROM `+table+` WHERE is_applied`)
	if err != nil {
		tb.Fatalf("testenv: read %s: %v", table, err)
	}
	defer rows.Close()
	got := map[int64]int{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			tb.Fatal(err)
		}
		got[v]++
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return got
}

// AssertMigratedOnce fails the test unless goose's version table holds version 0 and each
// migration of files (the *.sql files at its root, as migrate.Config.Files) exactly once.
func AssertMigratedOnce(tb testing.TB, db *sql.DB, table string, files fs.FS) {
	tb.Helper()
	want := map[int64]int{0: 1}
	for _, name := range migrationFiles(tb, files) {
		want[MigrationVersion(tb, name)] = 1
	}
	if got := AppliedVersions(tb, db, table); fmt.Sprint(got) != fmt.Sprint(want) {
		tb.Fatalf("%s rows per version = %v, want %v (each migration recorded once)", table, got, want)
	}
}

// LegacyColumns are the columns of the version table (schema_migrations) of the readings
// stores' runner that goose replaced; the catalog's runner also had an applied_at column.
const LegacyColumns = "version integer PRIMARY KEY, name text NOT NULL"

// ApplyAsLegacyRunner applies the migrations of files numbered up to last the way the
// runner goose replaced did, as a database created by an older binary has them: a table
// schema_migrations with the given columns (LegacyColumns when empty; any further column
// needs a default), and each file in one transaction with its row there.
func ApplyAsLegacyRunner(tb testing.TB, db *sql.DB, files fs.FS, last int64, columns string) {
	tb.Helper()
	if columns == "" {
		columns = LegacyColumns
	}
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (`+columns+`)`); err != nil {
		tb.Fatalf("testenv: create schema_migrations: %v", err)
	}
	for _, name := range migrationFiles(tb, files) {
		v := MigrationVersion(tb, name)
		if v > last {
			break
		}
		body, err := fs.ReadFile(files, name)
		if err != nil {
			tb.Fatal(err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			_ = tx.Rollback()
			tb.Fatalf("old runner, %s: %v", name, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')`, v, name)); err != nil {
			_ = tx.Rollback()
			tb.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			tb.Fatal(err)
		}
	}
}
