// Package migrate is the one schema migration runner of sensorgate: the gateway's catalog
// and every service's readings store apply their embedded SQL migrations through it. It is
// glue around github.com/pressly/goose/v3 (docs/catalog-store.md, "Migrations"):
//
//   - a goose.Provider over the caller's embedded migration files, one version table per
//     schema (so a catalog and a readings store never share one by accident);
//   - on PostgreSQL goose's session locker (pg_try_advisory_lock), so replicas that start
//     together on an empty database take turns and each migration runs once;
//   - adoption of the versions recorded by the runners this one replaced (a table
//     schema_migrations with a version column): they are copied into goose's version table
//     in the transaction that creates it, so an existing database upgrades in place and no
//     applied migration runs again.
package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
)

// Dialect names the database a migration set is written for.
type Dialect string

// The dialects sensorgate runs on.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// LegacyTable is the version table of the runners goose replaced; its versions are adopted.
const LegacyTable = "schema_migrations"

// Config says what to migrate.
type Config struct {
	Dialect Dialect
	// Files holds the NNNN_name.sql files (each starting with "-- +goose Up") at its root.
	Files fs.FS
	// Table is goose's version table for this schema (e.g. catalog_goose_version).
	Table string
	// LockID is the PostgreSQL advisory lock that serialises replicas; distinct per schema.
	LockID int64
	// Logger receives one line per applied or adopted migration (default: discard).
	Logger *slog.Logger
}

// sqliteMu serialises migrations of SQLite files within the process: SQLite has no session
// lock for goose, and two goroutines of one process (tests, a gateway and its migrate
// command) must not both apply the same pending file. Migrations are rare; one mutex for all
// files is enough.
var sqliteMu sync.Mutex

// Up applies every pending migration of c.Files to db and returns the versions it applied
// (none when the schema is up to date).
func Up(ctx context.Context, db *sql.DB, c Config) ([]int64, error) {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Table == "" {
		return nil, errors.New("migrate: Config.Table is required")
	}
	var gd database.Dialect
	switch c.Dialect {
	case Postgres:
		gd = database.DialectPostgres
	case SQLite:
		gd = database.DialectSQLite3
	default:
		return nil, fmt.Errorf("migrate: unknown dialect %q", c.Dialect)
	}
	inner, err := database.NewStore(gd, c.Table)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	ext, ok := inner.(database.StoreExtender)
	if !ok {
		return nil, errors.New("migrate: goose store without TableExists")
	}
	opts := []goose.ProviderOption{
		goose.WithStore(&adoptingStore{StoreExtender: ext, dialect: c.Dialect, log: c.Logger}),
		goose.WithDisableGlobalRegistry(true),
	}
	if c.Dialect == Postgres {
		// Probe every second (goose's default is every 5 s) for up to 10 minutes: a replica
		// waits for another's migration instead of failing at start.
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(c.LockID), lock.WithLockTimeout(1, 600), lock.WithUnlockTimeout(1, 30))
		if err != nil {
			return nil, fmt.Errorf("migrate: session locker: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	} else {
		sqliteMu.Lock()
		defer sqliteMu.Unlock()
	}
	p, err := goose.NewProvider(goose.DialectCustom, db, c.Files, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	results, err := p.Up(ctx)
	var applied []int64
	for _, r := range results {
		if r.Error == nil {
			applied = append(applied, r.Source.Version)
			c.Logger.InfoContext(ctx, "migration applied", "table", c.Table, "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
		}
	}
	if err != nil {
		return applied, fmt.Errorf("migrate %s: %w", c.Table, err)
	}
	return applied, nil
}

// adoptingStore is goose's own store for the dialect, except that the insert of version 0,
// which goose does right after creating its version table and in the same transaction,
// also copies the versions of LegacyTable. Doing it there makes adoption happen exactly once
// even when replicas race: only the transaction that created the table commits.
type adoptingStore struct {
	database.StoreExtender
	dialect Dialect
	log     *slog.Logger
}

func (s *adoptingStore) Insert(ctx context.Context, db database.DBTxConn, req database.InsertRequest) error {
	if err := s.StoreExtender.Insert(ctx, db, req); err != nil {
		return err
	}
	if req.Version != 0 {
		return nil
	}
	versions, err := legacyVersions(ctx, db, s.dialect)
	if err != nil {
		return fmt.Errorf("adopt %s: %w", LegacyTable, err)
	}
	for _, v := range versions {
		if err := s.StoreExtender.Insert(ctx, db, database.InsertRequest{Version: v}); err != nil {
			return fmt.Errorf("adopt %s version %d: %w", LegacyTable, v, err)
		}
	}
	if len(versions) > 0 {
		s.log.InfoContext(ctx, "migration versions adopted", "from", LegacyTable, "into", s.Tablename(), "versions", versions)
	}
	return nil
}

// legacyVersions lists the versions LegacyTable records, ascending; none when it is absent.
// The existence check keeps a PostgreSQL transaction clean (a failed SELECT would abort it).
func legacyVersions(ctx context.Context, db database.DBTxConn, d Dialect) ([]int64, error) {
	q := `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '` + LegacyTable + `'`
	if d == Postgres {
		q = `SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = '` + LegacyTable + `' AND schemaname = current_schema()`
	}
	var n int
	if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT version FROM `+LegacyTable+` WHERE version > 0 ORDER BY version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
