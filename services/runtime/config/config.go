// Package config reads a backing service's configuration from the environment, with
// command-line flags as overrides, and validates it at start with one clear message per
// mistake.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// ProviderConfig is the live-mode configuration of one provider.
type ProviderConfig struct {
	BaseURL  string
	Stations []string
	APIKey   string
	Interval time.Duration
}

// Config of one service process.
type Config struct {
	ServiceID string
	// Addr is the listen address (SERVICE_ADDR).
	Addr string
	// PublicPort is the port advertised in /v1/meta (SERVICE_PORT_PUBLIC; default the
	// port of Addr).
	PublicPort int
	// ReadingsDatabaseURL selects PostgreSQL; empty selects SQLite at SQLitePath.
	ReadingsDatabaseURL string
	SQLitePath          string
	SourceMode          string // simulate | files | live
	SourceDir           string
	SimStations         int
	SimDays             int
	SimSeed             int64
	InternalToken       string
	LogFormat           string // text | json
	LogLevel            string // debug | info | warn | error
	UserAgent           string
	ShutdownTimeout     time.Duration
	// RetentionDays keeps readings this many days (by reading time); 0 keeps them
	// forever. Older readings are removed hourly.
	RetentionDays int
	// RedisURL, when set, holds the log of stored readings that live streams follow (a
	// Redis Stream shared by the service's replicas, docs/live.md); empty keeps it in
	// process.
	RedisURL string
	// LiveRedisPrefix namespaces the log's key in a shared Redis (<prefix>live:<service>).
	LiveRedisPrefix string
	// Providers holds live settings by provider slug.
	Providers map[string]ProviderConfig
	// PrintEnv asks the binary to print the environment variables it reads and exit.
	PrintEnv bool
}

// Environment variable names shared by every service.
const (
	EnvAddr            = "SERVICE_ADDR"
	EnvPublicPort      = "SERVICE_PORT_PUBLIC"
	EnvDatabaseURL     = "READINGS_DATABASE_URL"
	EnvSQLitePath      = "READINGS_SQLITE_PATH"
	EnvSourceMode      = "SOURCE_MODE"
	EnvSourceDir       = "SOURCE_DIR"
	EnvSimStations     = "SIM_STATIONS"
	EnvSimDays         = "SIM_DAYS"
	EnvSimSeed         = "SIM_SEED"
	EnvInternalToken   = "INTERNAL_TOKEN"
	EnvLogFormat       = "LOG_FORMAT"
	EnvLogLevel        = "LOG_LEVEL"
	EnvUserAgent       = "USER_AGENT"
	EnvShutdownTimeout = "SHUTDOWN_TIMEOUT"
	EnvRetentionDays   = "RETENTION_DAYS"
	EnvRedisURL        = "REDIS_URL"
	EnvLiveRedisPrefix = "LIVE_REDIS_PREFIX"
)

// Per-provider variable suffixes: <PROVIDER>_BASE_URL etc., where <PROVIDER> is the slug
// in upper case with dashes as underscores (noaa-ndbc -> NOAA_NDBC).
const (
	SuffixBaseURL  = "_BASE_URL"
	SuffixStations = "_STATIONS"
	SuffixAPIKey   = "_API_KEY"
	SuffixInterval = "_POLL_INTERVAL"
)

// ProviderPrefix is the environment prefix of a provider slug.
func ProviderPrefix(slug string) string {
	return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(slug))
}

// EnvNames lists every environment variable a service binary with these providers reads.
func EnvNames(providerSlugs []string) []string {
	out := []string{EnvAddr, EnvPublicPort, EnvDatabaseURL, EnvSQLitePath, EnvSourceMode, EnvSourceDir, EnvSimStations,
		EnvSimDays, EnvSimSeed, EnvInternalToken, EnvLogFormat, EnvLogLevel, EnvUserAgent, EnvShutdownTimeout, EnvRetentionDays, EnvRedisURL, EnvLiveRedisPrefix}
	for _, s := range providerSlugs {
		p := ProviderPrefix(s)
		out = append(out, p+SuffixBaseURL, p+SuffixStations, p+SuffixAPIKey, p+SuffixInterval)
	}
	return append(out, TracingEnv...)
}

// TracingEnv are the OpenTelemetry variables the tracing setup (pkg/obs) reads; the
// OpenTelemetry SDK itself may read further standard OTEL_* variables.
var TracingEnv = []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"}

// DefaultSQLitePath is the embedded store of a service in a source mode. Each mode has its
// own file, so that the recorded stations of files mode never sit beside the simulated
// ones (answering 404 on latest while listed active) when the same checkout runs the other
// mode next: ./data/<service>.db for simulate (the default mode, the file it always had),
// ./data/<service>-files.db and ./data/<service>-live.db for the others.
func DefaultSQLitePath(serviceID, mode string) string {
	if mode == "" || mode == "simulate" {
		return "./data/" + serviceID + ".db"
	}
	return "./data/" + serviceID + "-" + mode + ".db"
}

// Load reads the configuration of service serviceID (default port defaultPort) from getenv
// and args (flags win). Every mistake is reported, joined in one error.
func Load(serviceID string, defaultPort int, providerSlugs []string, args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	env := func(k, def string) string {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
		return def
	}
	c := Config{ServiceID: serviceID, Providers: map[string]ProviderConfig{}}
	fs := flag.NewFlagSet(serviceID, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Addr, "addr", env(EnvAddr, fmt.Sprintf("127.0.0.1:%d", defaultPort)), "listen address ("+EnvAddr+")")
	publicPort := fs.String("public-port", env(EnvPublicPort, ""), "port advertised in /v1/meta ("+EnvPublicPort+"; default the listen port)")
	fs.StringVar(&c.ReadingsDatabaseURL, "readings-database-url", env(EnvDatabaseURL, ""), "PostgreSQL URL of the readings store ("+EnvDatabaseURL+"; empty: SQLite)")
	fs.StringVar(&c.SQLitePath, "sqlite-path", env(EnvSQLitePath, ""), "SQLite file when no database URL is set ("+EnvSQLitePath+"; default ./data/<service>.db in simulate mode, ./data/<service>-<mode>.db in files and live mode)")
	fs.StringVar(&c.SourceMode, "source-mode", env(EnvSourceMode, "simulate"), "simulate, files or live ("+EnvSourceMode+")")
	fs.StringVar(&c.SourceDir, "source-dir", env(EnvSourceDir, ""), "folder of recorded payloads for files mode ("+EnvSourceDir+")")
	simStations := fs.String("sim-stations", env(EnvSimStations, "24"), "synthetic stations per provider ("+EnvSimStations+")")
	simDays := fs.String("sim-days", env(EnvSimDays, "7"), "days of synthetic history at start ("+EnvSimDays+")")
	simSeed := fs.String("sim-seed", env(EnvSimSeed, "1"), "seed of the synthetic world ("+EnvSimSeed+")")
	fs.StringVar(&c.InternalToken, "internal-token", env(EnvInternalToken, ""), "shared token callers must send in X-Internal-Token ("+EnvInternalToken+"; empty: none)")
	fs.StringVar(&c.LogFormat, "log-format", env(EnvLogFormat, "text"), "text or json ("+EnvLogFormat+")")
	fs.StringVar(&c.LogLevel, "log-level", env(EnvLogLevel, "info"), "debug, info, warn or error ("+EnvLogLevel+")")
	fs.StringVar(&c.UserAgent, "user-agent", env(EnvUserAgent, "sensorgate-"+serviceID+"/1 (+https://github.com/sensorgate/sensorgate)"), "User-Agent of live polls ("+EnvUserAgent+")")
	shutdown := fs.String("shutdown-timeout", env(EnvShutdownTimeout, "30s"), "grace period for requests and the ingest batch in flight ("+EnvShutdownTimeout+")")
	retention := fs.String("retention-days", env(EnvRetentionDays, "0"), "days of readings kept, by reading time ("+EnvRetentionDays+"; 0: forever)")
	fs.StringVar(&c.RedisURL, "redis-url", env(EnvRedisURL, ""), "Redis holding the log of stored readings for live streams ("+EnvRedisURL+"; empty: in process)")
	fs.StringVar(&c.LiveRedisPrefix, "live-redis-prefix", env(EnvLiveRedisPrefix, "sensorgate:"), "key prefix of the live log in Redis ("+EnvLiveRedisPrefix+")")
	fs.BoolVar(&c.PrintEnv, "print-env", false, "print the environment variables this binary reads and exit")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("flags: %w", err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if c.SQLitePath == "" {
		c.SQLitePath = DefaultSQLitePath(serviceID, c.SourceMode)
	}

	var errs []error
	bad := func(name, format string, a ...any) { errs = append(errs, fmt.Errorf(name+": "+format, a...)) }
	_, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		bad(EnvAddr, "want host:port, got %q", c.Addr)
	}
	if *publicPort == "" {
		*publicPort = port
	}
	if p, err := strconv.Atoi(*publicPort); err != nil || p < 1 || p > 65535 {
		if port != "" || *publicPort != "" {
			bad(EnvPublicPort, "want a port 1-65535, got %q", *publicPort)
		}
	} else {
		c.PublicPort = p
	}
	if u := c.ReadingsDatabaseURL; u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		bad(EnvDatabaseURL, "want a postgres:// URL (or nothing for SQLite)")
	}
	switch c.SourceMode {
	case "simulate", "files", "live":
	default:
		bad(EnvSourceMode, "want simulate, files or live, got %q", c.SourceMode)
	}
	if u := c.RedisURL; u != "" && !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") {
		bad(EnvRedisURL, "want a redis:// or rediss:// URL (or nothing for the in-process log)")
	}
	if c.SourceMode == "files" && c.SourceDir == "" {
		bad(EnvSourceDir, "files mode needs the folder of recorded payloads")
	}
	if n, err := strconv.Atoi(*simStations); err != nil || n < 1 || n > 100000 {
		bad(EnvSimStations, "want 1-100000, got %q", *simStations)
	} else {
		c.SimStations = n
	}
	if n, err := strconv.Atoi(*simDays); err != nil || n < 0 || n > 3660 {
		bad(EnvSimDays, "want 0-3660, got %q", *simDays)
	} else {
		c.SimDays = n
	}
	if n, err := strconv.ParseInt(*simSeed, 10, 64); err != nil {
		bad(EnvSimSeed, "want an integer, got %q", *simSeed)
	} else {
		c.SimSeed = n
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		bad(EnvLogFormat, "want text or json, got %q", c.LogFormat)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad(EnvLogLevel, "want debug, info, warn or error, got %q", c.LogLevel)
	}
	if d, err := time.ParseDuration(*shutdown); err != nil || d <= 0 {
		bad(EnvShutdownTimeout, "want a positive duration such as 30s, got %q", *shutdown)
	} else {
		c.ShutdownTimeout = d
	}
	if n, err := strconv.Atoi(*retention); err != nil || n < 0 || n > 36600 {
		bad(EnvRetentionDays, "want 0 (keep forever) to 36600 days, got %q", *retention)
	} else {
		c.RetentionDays = n
	}
	for _, slug := range providerSlugs {
		p := ProviderPrefix(slug)
		pc := ProviderConfig{BaseURL: env(p+SuffixBaseURL, ""), APIKey: env(p+SuffixAPIKey, "")}
		if pc.BaseURL != "" && !strings.HasPrefix(pc.BaseURL, "http://") && !strings.HasPrefix(pc.BaseURL, "https://") {
			bad(p+SuffixBaseURL, "want an http(s) URL, got %q", pc.BaseURL)
		}
		for _, s := range strings.Split(env(p+SuffixStations, ""), ",") {
			if s = strings.TrimSpace(s); s != "" {
				pc.Stations = append(pc.Stations, s)
			}
		}
		if v := env(p+SuffixInterval, ""); v != "" {
			if d, err := time.ParseDuration(v); err != nil || d < time.Second {
				bad(p+SuffixInterval, "want a duration of at least 1s such as 10m, got %q", v)
			} else {
				pc.Interval = d
			}
		}
		c.Providers[slug] = pc
	}
	return c, errors.Join(errs...)
}
