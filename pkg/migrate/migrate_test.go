package migrate_test

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/sensorgate/sensorgate/pkg/migrate"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// files are three migrations; each CREATE TABLE also creates a row type in pg_type, where
// two replicas creating the same table at once collide without a lock.
var files = fstest.MapFS{
	"0001_a.sql": {Data: []byte("-- +goose Up\nCREATE TABLE a (id integer PRIMARY KEY);\n")},
	"0002_b.sql": {Data: []byte("-- +goose Up\nCREATE TABLE b (id integer PRIMARY KEY);\nINSERT INTO a VALUES (1);\n")},
	"0005_c.sql": {Data: []byte("-- +goose Up\nCREATE TABLE c (id integer PRIMARY KEY);\n")},
}

func config() migrate.Config {
	return migrate.Config{Dialect: migrate.Postgres, Files: files, Table: "test_goose_version", LockID: 42}
}

// wantOnce checks that goose's table records 0, 1, 2 and 5 once each.
func wantOnce(t *testing.T, db *sql.DB) {
	t.Helper()
	testenv.AssertMigratedOnce(t, db, "test_goose_version", files)
}

// Eight migrators on one empty database at once (run under -race in make test): all
// succeed, the three migrations are applied once in all, and each is recorded once.
func TestUpConcurrentOnEmptyPostgres(t *testing.T) {
	t.Parallel()
	db := testenv.PostgresDB(t)
	start := make(chan struct{})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		applied []int64
	)
	for range 8 {
		wg.Go(func() {
			<-start
			vs, err := migrate.Up(context.Background(), db, config())
			if err != nil {
				t.Errorf("concurrent Up: %v", err)
			}
			mu.Lock()
			applied = append(applied, vs...)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	slices.Sort(applied)
	if !slices.Equal(applied, []int64{1, 2, 5}) {
		t.Fatalf("applied in all = %v, want [1 2 5] once each", applied)
	}
	wantOnce(t, db)
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM a`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows of a = %d, %v; want 1 (0002 ran once)", n, err)
	}
}

// A database of the replaced runner (schema_migrations holding 1 and 2, their tables
// there) gets only 0005: 1 and 2 are adopted, once, however often Up runs.
func TestUpAdoptsLegacyVersions(t *testing.T) {
	t.Parallel()
	db := testenv.PostgresDB(t)
	testenv.ApplyAsLegacyRunner(t, db, files, 2, "")
	for i := range 2 {
		vs, err := migrate.Up(context.Background(), db, config())
		if err != nil {
			t.Fatalf("Up #%d: %v", i, err)
		}
		want := []int64{5}
		if i > 0 {
			want = nil
		}
		if !slices.Equal(vs, want) {
			t.Fatalf("Up #%d applied %v, want %v", i, vs, want)
		}
	}
	wantOnce(t, db)
}

func TestUpRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]migrate.Config{
		"no table":        {Dialect: migrate.Postgres, Files: files},
		"unknown dialect": {Dialect: "mysql", Files: files, Table: "t"},
	} {
		if _, err := migrate.Up(context.Background(), nil, c); err == nil {
			t.Errorf("%s: Up succeeded", name)
		}
	}
}
