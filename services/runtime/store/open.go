package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	migrator "github.com/sensorgate/sensorgate/pkg/migrate"
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
	// SkipQualityTests stores readings without running the QARTOD tests (their values
	// are served as not evaluated, flag 2, beside any provider mark): the ingest
	// benchmark's baseline.
	SkipQualityTests bool
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
	s := &sqlStore{serviceID: o.ServiceID, log: o.Logger, codec: c, now: o.Now, dicts: map[string]uint32{}, committed: o.Committed,
		qcOff: o.SkipQualityTests, tracks: trackCache{}}
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

// Readings migrations are recorded in their own goose version table and serialised by their
// own advisory lock, apart from the gateway catalog's.
const (
	migrationTable   = "readings_goose_version"
	migrationLockKey = int64(7261530001)
)

// migrate applies the embedded migrations of dir (postgres or sqlite) not yet applied
// (pkg/migrate: goose, docs/services.md "Storage"). On PostgreSQL a session advisory lock
// makes replicas that start together on an empty database take turns, so each migration
// runs once; versions recorded by the runner goose replaced (schema_migrations) are adopted.
func migrate(ctx context.Context, db *sql.DB, dialect migrator.Dialect, dir string, log *slog.Logger) error {
	files, err := fs.Sub(migrations, "migrations/"+dir)
	if err != nil {
		return fmt.Errorf("store: embedded migrations: %w", err)
	}
	if _, err := migrator.Up(ctx, db, migrator.Config{Dialect: dialect, Files: files, Table: migrationTable, LockID: migrationLockKey, Logger: log}); err != nil {
		return fmt.Errorf("store: %w", err)
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
