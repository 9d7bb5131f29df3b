package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations
var migrations embed.FS

// Insert methods of the PostgreSQL bulk path (see docs/services.md for their speed).
const (
	InsertCopy   = "copy"   // look up stored keys, COPY the rest straight in (staged on a race)
	InsertStaged = "staged" // COPY into a temporary table, then INSERT .. SELECT .. ON CONFLICT DO NOTHING
	InsertUnnest = "unnest" // one INSERT .. SELECT FROM unnest(arrays) ON CONFLICT DO NOTHING
	InsertValues = "values" // multi-row INSERT .. VALUES (..), (..) ON CONFLICT DO NOTHING
)

// Options configure Open.
type Options struct {
	// DatabaseURL selects PostgreSQL (postgres:// or postgresql://); empty selects SQLite.
	DatabaseURL string
	// SQLitePath is the SQLite database file (its folder is created).
	SQLitePath string
	// ServiceID enters reading ids (UUIDv5 of the sensor, which is of the service).
	ServiceID string
	// InsertMethod is the PostgreSQL bulk path; default InsertCopy.
	InsertMethod string
	// MaxConns bounds the PostgreSQL pool (default 8).
	MaxConns int
	Logger   *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// Committed, when set, receives the readings each ingest batch stored for the first
	// time, right after the batch's transaction committed (never for a rolled-back batch,
	// never twice for one reading: a replay stores nothing new). The live streams publish
	// them (docs/live.md); it runs on the ingest goroutine, so it must not block long.
	Committed func(ctx context.Context, readings []Committed)
}

// Open connects to the configured database, applies pending migrations and returns the
// store.
func Open(ctx context.Context, o Options) (Store, error) {
	if o.ServiceID == "" {
		return nil, errors.New("store: ServiceID is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c, err := newCodec()
	if err != nil {
		return nil, err
	}
	s := &sqlStore{serviceID: o.ServiceID, log: o.Logger, codec: c, now: o.Now, dicts: map[string]uint32{}, committed: o.Committed}
	switch {
	case o.DatabaseURL == "":
		if o.SQLitePath == "" {
			c.close()
			return nil, errors.New("store: neither a database URL nor an SQLite path is configured")
		}
		err = openSQLite(ctx, s, o)
	case strings.HasPrefix(o.DatabaseURL, "postgres://"), strings.HasPrefix(o.DatabaseURL, "postgresql://"):
		err = openPostgres(ctx, s, o)
	default:
		err = fmt.Errorf("store: database URL must start with postgres:// or postgresql:// (or be empty for SQLite), got scheme %q", scheme(o.DatabaseURL))
	}
	if err != nil {
		c.close()
		return nil, err
	}
	if err := s.loadDicts(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.loadRollupParams(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.rebuildRollups(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func scheme(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		return u[:i]
	}
	return "(none)"
}

// migrate applies the embedded migrations of dir not yet recorded in schema_migrations,
// each in its own transaction. lock, when set, runs first in each transaction so that
// replicas starting together apply a migration once.
func migrate(ctx context.Context, db *sql.DB, dir, lock string) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	entries, err := fs.ReadDir(migrations, "migrations/"+dir)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		name := e.Name()
		v, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migrate: file %s does not start with a version number", name)
		}
		body, err := fs.ReadFile(migrations, "migrations/"+dir+"/"+name)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if err := applyMigration(ctx, db, v, name, string(body), lock); err != nil {
			return err
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, v int, name, body, lock string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	defer func() { _ = tx.Rollback() }()
	if lock != "" {
		if _, err := tx.ExecContext(ctx, lock); err != nil {
			return fmt.Errorf("migrate %s: lock: %w", name, err)
		}
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = `+strconv.Itoa(v)).Scan(&n); err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES (`+strconv.Itoa(v)+`, '`+name+`')`); err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate %s: commit: %w", name, err)
	}
	return nil
}

func isNoRows(err error) bool {
	return errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows)
}

// rebindDollar turns ? placeholders into $1, $2, ... (no ? appears in our literals).
func rebindDollar(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
