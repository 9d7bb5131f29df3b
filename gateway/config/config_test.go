package config

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/settings"
)

func load(t *testing.T, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	l := Register(fs, func(k string) string { return env[k] })
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return l.Load()
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Only this file's settings: other packages add their own sections to Config.
	type mine struct {
		Addr, DatabaseURL, SQLitePath, Env, DevAPIKey, InternalToken, RedisURL, LogFormat string
		Services                                                                          []Service
		KeyCacheTTL, SyncInterval, ShutdownTimeout                                        time.Duration
		LogLevel                                                                          slog.Level
		RateLimit                                                                         RateLimit
	}
	got := mine{c.Addr, c.DatabaseURL, c.SQLitePath, c.Env, c.DevAPIKey, c.InternalToken, c.RedisURL, c.LogFormat,
		c.Services, c.KeyCacheTTL, c.SyncInterval, c.ShutdownTimeout, c.LogLevel, c.RateLimit}
	want := mine{
		Addr: DefaultAddr, SQLitePath: DefaultSQLitePath, Env: EnvDevelopment, DevAPIKey: DefaultDevAPIKey, LogFormat: "text",
		Services: []Service{
			{ID: "ocean", URL: "http://127.0.0.1:8081"}, {ID: "weather", URL: "http://127.0.0.1:8082"},
			{ID: "airquality", URL: "http://127.0.0.1:8083"},
		},
		KeyCacheTTL: 5 * time.Second, SyncInterval: 30 * time.Second, ShutdownTimeout: 15 * time.Second,
		LogLevel: slog.LevelInfo, RateLimit: RateLimit{Plans: got.RateLimit.Plans},
	}
	if !reflect.DeepEqual(got, want) || len(got.RateLimit.Plans) != 0 {
		t.Errorf("defaults\n got %+v\nwant %+v", got, want)
	}
}

func TestEnvironmentAndFlags(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"GATEWAY_ADDR": "0.0.0.0:9000", "DATABASE_URL": "postgres://u@db:5432/sg", "SENSORGATE_ENV": "production",
		"SERVICE_URLS": "ocean=http://ocean:8081/, tides=https://tides.internal", "INTERNAL_TOKEN": "s3cret",
		"REDIS_URL": "redis://redis:6379/1", "KEY_CACHE_TTL": "2s", "SYNC_INTERVAL": "0", "LOG_LEVEL": "debug",
		"SHUTDOWN_TIMEOUT": "40s", "RATE_LIMIT_PLANS": "free=100/h,pro=10000/h:500", "RATE_LIMIT_FAIL_CLOSED": "true",
		"DEV_API_KEY": "x", // not checked in production
	}
	c, err := load(t, env, "-addr", "127.0.0.1:9001", "-log-format", "text")
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:9001" || c.LogFormat != "text" {
		t.Errorf("flags must override the environment: %+v", c)
	}
	if c.Env != EnvProduction || c.DatabaseURL != env["DATABASE_URL"] || c.InternalToken != "s3cret" ||
		c.RedisURL != env["REDIS_URL"] || c.KeyCacheTTL != 2*time.Second || c.SyncInterval != 0 ||
		c.LogLevel != slog.LevelDebug || c.ShutdownTimeout != 40*time.Second || !c.RateLimit.FailClosed ||
		c.RateLimit.Plans["pro"].Burst != 500 || c.RateLimit.Plans["free"].Rate != 100 {
		t.Errorf("environment not applied: %+v", c)
	}
	if !slices.Equal(c.Services, []Service{{"ocean", "http://ocean:8081"}, {"tides", "https://tides.internal"}}) {
		t.Errorf("services %+v", c.Services)
	}
	// Production logs JSON unless told otherwise.
	c, _ = load(t, map[string]string{"SENSORGATE_ENV": "production"})
	if c.LogFormat != "json" {
		t.Errorf("production log format %q", c.LogFormat)
	}
}

func TestEveryMistakeIsNamed(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"SENSORGATE_ENV": "staging", "GATEWAY_ADDR": "8080", "DATABASE_URL": "mysql://x", "SERVICE_URLS": "ocean=ftp://x",
		"REDIS_URL": "http://redis", "KEY_CACHE_TTL": "2h", "SYNC_INTERVAL": "10ms", "LOG_FORMAT": "xml",
		"LOG_LEVEL": "loud", "SHUTDOWN_TIMEOUT": "soon", "RATE_LIMIT_PLANS": "pro=fast", "RATE_LIMIT_FAIL_CLOSED": "maybe",
	}
	_, err := load(t, env)
	var ce *settings.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *settings.Error, got %v", err)
	}
	for name := range env {
		v := varByName(name)
		if !strings.Contains(err.Error(), name+" (flag -"+v.Flag+")") {
			t.Errorf("the error does not name %s and its flag:\n%v", name, err)
		}
	}
	if len(ce.Problems) != len(env) {
		t.Errorf("%d problems for %d mistakes:\n%v", len(ce.Problems), len(env), err)
	}
}

func varByName(name string) settings.Var {
	for _, v := range Vars() {
		if v.Env == name {
			return v
		}
	}
	return settings.Var{}
}

func TestParseServices(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "ocean", "Ocean=http://x", "ocean=http://a,ocean=http://b", "ocean=http://x?q=1", "ocean=/relative", " , "} {
		if _, err := ParseServices(bad); err == nil {
			t.Errorf("ParseServices(%q) accepted", bad)
		}
	}
}

func TestDevKeyMustBeLongInDevelopment(t *testing.T) {
	t.Parallel()
	if _, err := load(t, map[string]string{"DEV_API_KEY": "short"}); err == nil || !strings.Contains(err.Error(), "DEV_API_KEY") {
		t.Errorf("short development key: %v", err)
	}
}

func TestHelpHidesSecrets(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	Register(fs, func(k string) string {
		return map[string]string{"INTERNAL_TOKEN": "tok-123", "DATABASE_URL": "postgres://u:pw-456@h/db", "DEV_API_KEY": "sg_dev_789789789789789789"}[k]
	})
	if err := fs.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, s := range []string{"tok-123", "pw-456", "789789789", DefaultDevAPIKey} {
		if strings.Contains(out.String(), s) {
			t.Errorf("-help shows a secret %q:\n%s", s, out.String())
		}
	}
	for _, v := range Vars() {
		if !strings.Contains(out.String(), v.Env) {
			t.Errorf("-help does not name %s:\n%s", v.Env, out.String())
		}
		if v.Flag != "" && !strings.Contains(out.String(), "-"+v.Flag+", "+v.Env) {
			t.Errorf("-help does not put -%s beside %s", v.Flag, v.Env)
		}
	}
}

func TestOmittedFlagStillReadsEnvironment(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	l := Register(fs, func(k string) string { return map[string]string{"SENSORGATE_ENV": "production"}[k] }, "env")
	own := fs.String("env", "", "the command's own -env")
	if err := fs.Parse([]string{"-env", "development"}); err != nil {
		t.Fatal(err)
	}
	c, err := l.Load()
	if err != nil || c.Env != EnvProduction || *own != "development" {
		t.Errorf("env %q, own flag %q, err %v", c.Env, *own, err)
	}
}

func TestEnvVars(t *testing.T) {
	t.Parallel()
	want := []string{"SENSORGATE_ENV", "GATEWAY_ADDR", "DATABASE_URL", "SQLITE_PATH", "DEV_API_KEY", "SERVICE_URLS",
		"INTERNAL_TOKEN", "REDIS_URL", "KEY_CACHE_TTL", "SYNC_INTERVAL", "LOG_FORMAT", "LOG_LEVEL", "SHUTDOWN_TIMEOUT",
		"RATE_LIMIT_PLANS", "RATE_LIMIT_FAIL_CLOSED"}
	got := EnvVars()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("EnvVars lacks %s", w)
		}
	}
	seen := map[string]bool{}
	for _, v := range Vars() {
		if seen[v.Env] || (v.Flag != "" && seen["-"+v.Flag]) {
			t.Errorf("%s or -%s declared twice", v.Env, v.Flag)
		}
		seen[v.Env] = true
		if v.Flag != "" {
			seen["-"+v.Flag] = true
		}
		if v.Flag == "" && !v.External {
			t.Errorf("%s has a parser but no flag", v.Env)
		}
	}
}

// TestDocumented keeps docs/gateway.md's configuration table in step with the code.
func TestDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "gateway.md"))
	if err != nil {
		t.Fatalf("docs/gateway.md: %v", err)
	}
	for _, v := range Vars() {
		if !strings.Contains(string(b), "`"+v.Env+"`") {
			t.Errorf("docs/gateway.md does not document %s", v.Env)
		}
	}
}

func TestProductionMissing(t *testing.T) {
	t.Parallel()
	c, err := load(t, map[string]string{"SENSORGATE_ENV": "production"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckProduction()
	if err == nil {
		t.Fatal("production without token, Redis and plans: no error")
	}
	for _, want := range []string{"INTERNAL_TOKEN", "REDIS_URL", "RATE_LIMIT_PLANS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the message lacks %s:\n%v", want, err)
		}
	}
	c, _ = load(t, map[string]string{"SENSORGATE_ENV": "production", "INTERNAL_TOKEN": "s3cret",
		"REDIS_URL": "redis://r:6379/0", "RATE_LIMIT_PLANS": "default=10/h"})
	if err := c.CheckProduction(); err != nil {
		t.Errorf("complete production configuration: %v", err)
	}
	c, _ = load(t, map[string]string{})
	if c.CheckProduction() != nil || len(c.DevelopmentDefaults()) == 0 {
		t.Errorf("development: %v, defaults %v", c.CheckProduction(), c.DevelopmentDefaults())
	}
}
