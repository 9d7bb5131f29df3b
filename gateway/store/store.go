// Package store keeps the gateway's catalog (sensors, providers, projects, services, users
// and API keys) in PostgreSQL for production or in an embedded SQLite file for the laptop
// mode, behind GORM, and implements catalog.Store.
//
// Both dialects run the same queries except where the databases differ (arrays, LIKE and
// trigram search, least/min); dialect holds those differences in one place.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/ttlcache"
)

// Config says which database to use. DatabaseURL (a PostgreSQL URL) wins over SQLitePath.
type Config struct {
	// DatabaseURL is a PostgreSQL connection string (postgres://...).
	DatabaseURL string
	// SQLitePath is the embedded database file, created when absent.
	SQLitePath string
	// MaxOpenConns bounds PostgreSQL connections (default 20). SQLite always uses one
	// connection: it serialises writers anyway, and one connection never sees SQLITE_BUSY.
	MaxOpenConns int
	// SkipMigrations leaves the schema alone at Open, for deployments that run Migrate
	// as a separate job.
	SkipMigrations bool
	// CountCacheSize bounds the per-replica cache of exact list totals (default 4096).
	CountCacheSize int
	// IDCacheSize bounds the sensor ids the per-replica cache keeps in the ordered match
	// lists of selective filters (default 2,000,000, about 32 MB).
	IDCacheSize int
	// Logger receives migration and slow-path messages (default slog.Default()).
	Logger *slog.Logger
}

// Store implements catalog.Store on GORM.
type Store struct {
	db     *gorm.DB
	d      dialect
	log    *slog.Logger
	counts *countCache
	// area holds AreaSensors' pages per catalog generation.
	area *ttlcache.Cache[string, catalog.SensorPage]
	// areaGen is the newest generation area has seen; a newer one clears it.
	areaGen atomic.Int64
	// Plan thresholds of ListSensors (filterFirstMax, deferredJoinOffset); fields so
	// that tests can force every plan on a small catalog.
	filterFirstMax     int
	deferredJoinOffset int
}

var _ catalog.Store = (*Store)(nil)

// Open connects to the configured database and, unless cfg.SkipMigrations, brings its
// schema up to date.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.CountCacheSize <= 0 {
		cfg.CountCacheSize = 4096
	}
	if cfg.IDCacheSize <= 0 {
		cfg.IDCacheSize = 2_000_000
	}
	db, d, err := connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, d: d, log: cfg.Logger, counts: newCountCache(cfg.CountCacheSize, cfg.IDCacheSize), area: newAreaCache(),
		filterFirstMax: filterFirstMax, deferredJoinOffset: deferredJoinOffset}
	if !cfg.SkipMigrations {
		if err := s.Migrate(ctx); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Migrate brings the schema of the configured database up to date and closes the
// connection: the body of a one-shot migration job.
func Migrate(ctx context.Context, cfg Config) error {
	cfg.SkipMigrations = true
	s, err := Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Migrate(ctx)
}

func connect(ctx context.Context, cfg Config) (*gorm.DB, dialect, error) {
	gcfg := &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true}
	var (
		db  *gorm.DB
		d   dialect
		err error
	)
	switch {
	case cfg.DatabaseURL != "":
		dsn, derr := postgresDSN(cfg.DatabaseURL)
		if derr != nil {
			return nil, d, derr
		}
		d = dialect{postgres: true}
		db, err = gorm.Open(postgres.New(postgres.Config{DSN: dsn}), gcfg)
		if err != nil {
			return nil, d, fmt.Errorf("store: open PostgreSQL: %w", err)
		}
	case cfg.SQLitePath != "":
		if dir := filepath.Dir(cfg.SQLitePath); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, d, fmt.Errorf("store: create directory of SQLite file %q: %w", cfg.SQLitePath, err)
			}
		}
		dsn := "file:" + cfg.SQLitePath + "?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)"
		db, err = gorm.Open(sqlite.Open(dsn), gcfg)
		if err != nil {
			return nil, d, fmt.Errorf("store: open SQLite file %q: %w", cfg.SQLitePath, err)
		}
	default:
		return nil, d, errors.New("store: neither DatabaseURL nor SQLitePath is set")
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, d, fmt.Errorf("store: %w", err)
	}
	if d.postgres {
		n := cfg.MaxOpenConns
		if n <= 0 {
			n = 20
		}
		sqlDB.SetMaxOpenConns(n)
		sqlDB.SetMaxIdleConns(n)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	} else {
		sqlDB.SetMaxOpenConns(1)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(pctx); err != nil {
		_ = sqlDB.Close()
		return nil, d, fmt.Errorf("store: database not reachable: %w", err)
	}
	return db, d, nil
}

// postgresDSN asks for custom plans on every execution: the list queries' best plan
// depends on the values (a rare search term wants the trigram index, a common one the
// name order), which a cached generic plan cannot know.
func postgresDSN(raw string) (string, error) {
	if !strings.HasPrefix(raw, "postgres://") && !strings.HasPrefix(raw, "postgresql://") {
		return raw, nil // key=value form: taken as given
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("store: DatabaseURL is not a valid URL: %w", err)
	}
	q := u.Query()
	if q.Get("plan_cache_mode") == "" {
		q.Set("plan_cache_mode", "force_custom_plan")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// Close releases the connections.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return sqlDB.Close()
}

// Postgres reports whether the store runs on PostgreSQL.
func (s *Store) Postgres() bool { return s.d.postgres }

// DB exposes the GORM handle for tools that load data in bulk (the benchmark).
func (s *Store) DB() *gorm.DB { return s.db }

// dialect holds the SQL that differs between PostgreSQL and SQLite.
type dialect struct{ postgres bool }

// arrayParam is the placeholder of a string-array parameter written by arrayValue.
func (d dialect) arrayParam() string {
	if d.postgres {
		return "CAST(CAST(? AS text) AS text[])"
	}
	return "?"
}

// arrayValue encodes a string list for arrayParam: a PostgreSQL array literal or a JSON
// array for SQLite.
func (d dialect) arrayValue(v []string) string {
	if d.postgres {
		return pgArrayLiteral(v)
	}
	return jsonArray(v)
}

// arraySelect reads an array column as a JSON array in both dialects.
func (d dialect) arraySelect(col string) string {
	if d.postgres {
		return "array_to_json(" + col + ")::text"
	}
	return col
}

// dateSelect reads a date column as YYYY-MM-DD text.
func (d dialect) dateSelect(col string) string {
	if d.postgres {
		return "to_char(" + col + ", 'YYYY-MM-DD')"
	}
	return col
}

func (d dialect) least() string {
	if d.postgres {
		return "least"
	}
	return "min"
}

func pgArrayLiteral(v []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, r := range s {
			if r == '"' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}
