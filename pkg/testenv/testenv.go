// Package testenv gives tests a real PostgreSQL database and a real Redis of their own.
//
// The servers come from TEST_DATABASE_URL (an admin connection string) and TEST_REDIS_URL,
// defaulting to the local ones; scripts/test.sh exports them after it has found or started
// throwaway servers. A test that cannot reach a server fails with a message saying how to
// provide one, rather than skipping silently.
package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/redis/go-redis/v9"
)

// DefaultPostgres and DefaultRedis are used when the environment names no server.
const (
	DefaultPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	DefaultRedis    = "redis://127.0.0.1:6379/0"
)

// AdminPostgresURL is the connection string of the server tests create databases on.
func AdminPostgresURL() string {
	if s := os.Getenv("TEST_DATABASE_URL"); s != "" {
		return s
	}
	return DefaultPostgres
}

// RedisURL is the Redis tests use.
func RedisURL() string {
	if s := os.Getenv("TEST_REDIS_URL"); s != "" {
		return s
	}
	return DefaultRedis
}

// Postgres creates an empty database for the test, returns its connection string, and
// drops it when the test ends.
func Postgres(tb testing.TB) string {
	tb.Helper()
	admin := AdminPostgresURL()
	db, err := sql.Open("pgx", admin)
	if err != nil {
		tb.Fatalf("testenv: open %s: %v", admin, err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		tb.Fatalf("testenv: PostgreSQL at %s is not reachable (%v); run the tests with `make test`, which starts one, or set TEST_DATABASE_URL", admin, err)
	}
	name := "sgtest_" + randomHex(6)
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("testenv: create database: %v", err)
	}
	tb.Cleanup(func() {
		db, err := sql.Open("pgx", admin)
		if err != nil {
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatalf("testenv: parse %s: %v", admin, err)
	}
	u.Path = "/" + name
	return u.String()
}

// Redis returns a client on the test Redis and a key prefix unique to this test, so tests
// can share one server without seeing each other's keys.
func Redis(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	opt, err := redis.ParseURL(RedisURL())
	if err != nil {
		tb.Fatalf("testenv: parse TEST_REDIS_URL: %v", err)
	}
	c := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Fatalf("testenv: Redis at %s is not reachable (%v); run the tests with `make test`, which starts one, or set TEST_REDIS_URL", RedisURL(), err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c, fmt.Sprintf("sgtest:%s:", randomHex(6))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
