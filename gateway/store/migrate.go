package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrationFiles embed.FS

// migrationLockKey is the PostgreSQL advisory lock that serialises replicas migrating at
// once; the value is arbitrary but fixed ("sgcatalg" in ASCII).
const migrationLockKey int64 = 0x736763617461_6c67

// migration is one numbered SQL file: NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

func (d dialect) migrations() ([]migration, error) {
	dir := "migrations/sqlite"
	if d.postgres {
		dir = "migrations/postgres"
	}
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, fmt.Errorf("store: read embedded migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		num, rest, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("store: migration file %q is not named NNNN_name.sql", e.Name())
		}
		b, err := migrationFiles.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("store: read migration %q: %w", e.Name(), err)
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(rest, ".sql"), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("store: two migrations numbered %d", ms[i].version)
		}
	}
	return ms, nil
}

// Migrate applies the migrations the database has not seen yet, each in its own
// transaction, and records them in schema_migrations. On PostgreSQL a session advisory lock
// makes replicas that start together take turns: the second one finds nothing left to do.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := s.d.migrations()
	if err != nil {
		return err
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: migrate: get connection: %w", err)
	}
	defer conn.Close()
	if s.d.postgres {
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", migrationLockKey); err != nil {
			return fmt.Errorf("store: migrate: take advisory lock: %w", err)
		}
		defer func() {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_, _ = conn.ExecContext(uctx, "SELECT pg_advisory_unlock($1)", migrationLockKey)
		}()
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY,
		name text NOT NULL,
		applied_at timestamp NOT NULL)`); err != nil {
		return fmt.Errorf("store: migrate: create schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	rows, err := conn.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return fmt.Errorf("store: migrate: read schema_migrations: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("store: migrate: read schema_migrations: %w", err)
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: migrate: read schema_migrations: %w", err)
	}
	insert := "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)"
	if s.d.postgres {
		insert = "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)"
	}
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if err := applyMigration(ctx, conn, m, insert); err != nil {
			return err
		}
		s.log.InfoContext(ctx, "catalog migration applied", "version", m.version, "name", m.name)
	}
	return nil
}

func applyMigration(ctx context.Context, conn *sql.Conn, m migration, insert string) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migration %04d_%s: begin: %w", m.version, m.name, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("store: migration %04d_%s: %w", m.version, m.name, err)
	}
	if _, err := tx.ExecContext(ctx, insert, m.version, m.name, time.Now().UTC()); err != nil {
		return fmt.Errorf("store: migration %04d_%s: record: %w", m.version, m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migration %04d_%s: commit: %w", m.version, m.name, err)
	}
	return nil
}
