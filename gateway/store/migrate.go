package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/sensorgate/sensorgate/pkg/migrate"
)

//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrationFiles embed.FS

// Catalog migrations are recorded in their own goose version table and serialised by their
// own advisory lock ("sgcatalg" in ASCII), apart from the readings stores'.
const (
	migrationTable   = "catalog_goose_version"
	migrationLockKey = int64(0x736763617461_6c67)
)

// Migrate applies the catalog migrations the database has not seen yet (pkg/migrate: goose,
// docs/catalog-store.md "Migrations"). On PostgreSQL a session advisory lock makes replicas
// that start together take turns: the later ones find nothing left to do. A database
// migrated by the runner goose replaced keeps its recorded versions (schema_migrations).
func (s *Store) Migrate(ctx context.Context) error {
	dir, dialect := "migrations/sqlite", migrate.SQLite
	if s.d.postgres {
		dir, dialect = "migrations/postgres", migrate.Postgres
	}
	files, err := fs.Sub(migrationFiles, dir)
	if err != nil {
		return fmt.Errorf("store: embedded migrations: %w", err)
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if _, err := migrate.Up(ctx, sqlDB, migrate.Config{Dialect: dialect, Files: files, Table: migrationTable,
		LockID: migrationLockKey, Logger: s.log}); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}
