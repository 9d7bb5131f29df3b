// Package config is a backing service's configuration: one table of settings (pkg/settings,
// the mechanism every sensorgate binary uses) binding each environment variable to its flag,
// default and parser, with the per-provider <PROVIDER>_BASE_URL, _STATIONS, _API_KEY and
// _POLL_INTERVAL rows generated from the service's providers. Flags win over the
// environment; every mistake is reported at start, each naming its variable and flag.
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

	"github.com/sensorgate/sensorgate/pkg/gctune"
	"github.com/sensorgate/sensorgate/pkg/obs"
	"github.com/sensorgate/sensorgate/pkg/settings"
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
	// ShutdownDelay is how long the service keeps serving after SIGTERM with /readyz at
	// 503 before it stops accepting, so that load balancers see it leave (SHUTDOWN_DELAY).
	ShutdownDelay time.Duration
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

	listenPort string // the port of Addr, the default of PublicPort
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
	EnvShutdownDelay   = "SHUTDOWN_DELAY"
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

// ProviderFlagPrefix is the flag prefix of a provider slug: noaa-ndbc -> noaa-ndbc (flags
// -noaa-ndbc-base-url etc.).
func ProviderFlagPrefix(slug string) string {
	return strings.ToLower(strings.ReplaceAll(ProviderPrefix(slug), "_", "-"))
}

// EnvNames lists every environment variable a service binary with these providers reads.
func EnvNames(providerSlugs []string) []string {
	return settings.EnvNames(Settings("service", 0, providerSlugs))
}

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

type setting = settings.Setting[Config]

// Settings is the one table of service serviceID's configuration (default port
// defaultPort) with the rows of its providers. Order matters: SERVICE_ADDR comes before
// SERVICE_PORT_PUBLIC, SOURCE_MODE before READINGS_SQLITE_PATH and SOURCE_DIR, whose
// defaults or checks depend on them.
func Settings(serviceID string, defaultPort int, providerSlugs []string) []setting {
	t := []setting{
		{Env: EnvAddr, Flag: "addr", Default: fmt.Sprintf("127.0.0.1:%d", defaultPort), Usage: "listen address host:port", Set: func(c *Config, v string) error {
			_, port, err := net.SplitHostPort(v)
			if err != nil {
				return fmt.Errorf("want host:port, got %q", v)
			}
			c.Addr, c.listenPort = v, port
			return nil
		}},
		{Env: EnvPublicPort, Flag: "public-port", Usage: "port advertised in /v1/meta (default the port of SERVICE_ADDR)", Set: func(c *Config, v string) error {
			if v == "" {
				v = c.listenPort
			}
			if v == "" { // SERVICE_ADDR is wrong, and said so already
				return nil
			}
			p, err := strconv.Atoi(v)
			if err != nil || p < 1 || p > 65535 {
				return fmt.Errorf("want a port 1-65535, got %q", v)
			}
			c.PublicPort = p
			return nil
		}},
		{Env: EnvDatabaseURL, Flag: "readings-database-url", Usage: "PostgreSQL URL of the readings store (postgres://...); empty: SQLite", Secret: true, Set: func(c *Config, v string) error {
			if v != "" && !strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://") {
				return errors.New("want a postgres:// URL (or nothing for SQLite)")
			}
			c.ReadingsDatabaseURL = v
			return nil
		}},
		{Env: EnvSourceMode, Flag: "source-mode", Default: "simulate", Usage: "where readings come from: simulate, files or live", Set: func(c *Config, v string) error {
			m, err := settings.OneOf(v, "simulate", "files", "live")
			c.SourceMode = m
			return err
		}},
		{Env: EnvSQLitePath, Flag: "sqlite-path", Usage: "SQLite file when no database URL is set (default ./data/<service>.db in simulate mode, ./data/<service>-<mode>.db in files and live mode)", Set: func(c *Config, v string) error {
			if v == "" {
				v = DefaultSQLitePath(c.ServiceID, c.SourceMode)
			}
			c.SQLitePath = v
			return nil
		}},
		{Env: EnvSourceDir, Flag: "source-dir", Usage: "folder of recorded payloads for files mode", Set: func(c *Config, v string) error {
			if c.SourceMode == "files" && v == "" {
				return errors.New("files mode needs the folder of recorded payloads")
			}
			c.SourceDir = v
			return nil
		}},
		{Env: EnvSimStations, Flag: "sim-stations", Default: "24", Usage: "synthetic stations per provider", Set: func(c *Config, v string) (err error) {
			c.SimStations, err = settings.Int(v, 1, 100000)
			return err
		}},
		{Env: EnvSimDays, Flag: "sim-days", Default: "7", Usage: "days of synthetic history at start", Set: func(c *Config, v string) (err error) {
			c.SimDays, err = settings.Int(v, 0, 3660)
			return err
		}},
		{Env: EnvSimSeed, Flag: "sim-seed", Default: "1", Usage: "seed of the synthetic world (same seed, same data)", Set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("want an integer, got %q", v)
			}
			c.SimSeed = n
			return nil
		}},
		{Env: EnvInternalToken, Flag: "internal-token", Usage: "shared token callers must send in X-Internal-Token (empty: none)", Secret: true, Set: func(c *Config, v string) error {
			if strings.ContainsAny(v, "\r\n") {
				return errors.New("must not contain line breaks")
			}
			c.InternalToken = v
			return nil
		}},
		{Env: EnvLogFormat, Flag: "log-format", Default: "text", Usage: "log format: text or json", Set: func(c *Config, v string) (err error) {
			c.LogFormat, err = settings.OneOf(v, "text", "json")
			return err
		}},
		{Env: EnvLogLevel, Flag: "log-level", Default: "info", Usage: "minimum log level: debug, info, warn or error", Set: func(c *Config, v string) (err error) {
			c.LogLevel, err = settings.OneOf(v, "debug", "info", "warn", "error")
			return err
		}},
		{Env: EnvUserAgent, Flag: "user-agent", Default: "sensorgate-" + serviceID + "/1 (+https://github.com/sensorgate/sensorgate)", Usage: "User-Agent of live polls (NWS requires one)", Set: func(c *Config, v string) error {
			c.UserAgent = v
			return nil
		}},
		{Env: EnvShutdownTimeout, Flag: "shutdown-timeout", Default: "30s", Usage: "grace period for requests and the ingest batch in flight", Set: func(c *Config, v string) (err error) {
			c.ShutdownTimeout, err = settings.Duration(v, time.Millisecond, settings.Unbounded)
			return err
		}},
		{Env: EnvShutdownDelay, Flag: "shutdown-delay", Default: "0s", Usage: "after SIGTERM, how long to keep serving with /readyz at 503 before no longer accepting connections (the load balancer's probe period)", Set: func(c *Config, v string) (err error) {
			c.ShutdownDelay, err = settings.Duration(v, 0, time.Minute)
			return err
		}},
		{Env: EnvRetentionDays, Flag: "retention-days", Default: "0", Usage: "days of readings kept, by reading time (0: forever)", Set: func(c *Config, v string) (err error) {
			c.RetentionDays, err = settings.Int(v, 0, 36600)
			return err
		}},
		{Env: EnvRedisURL, Flag: "redis-url", Usage: "Redis holding the log of stored readings for live streams (redis://host:6379/0; empty: in process)", Secret: true, Set: func(c *Config, v string) error {
			if v != "" && !strings.HasPrefix(v, "redis://") && !strings.HasPrefix(v, "rediss://") {
				return errors.New("want a redis:// or rediss:// URL (or nothing for the in-process log)")
			}
			c.RedisURL = v
			return nil
		}},
		{Env: EnvLiveRedisPrefix, Flag: "live-redis-prefix", Default: "sensorgate:", Usage: "key prefix of the live log in Redis (<prefix>live:<service>)", Set: func(c *Config, v string) error {
			c.LiveRedisPrefix = v
			return nil
		}},
	}
	for _, slug := range providerSlugs {
		t = append(t, providerSettings(slug)...)
	}
	t = append(t, settings.Externals[Config](obs.TracingEnv...)...)
	return append(t, settings.Externals[Config](gctune.Env...)...)
}

// providerSettings are the generated live-mode rows of one provider: <PROVIDER>_BASE_URL,
// _STATIONS, _API_KEY and _POLL_INTERVAL, with flags -<provider>-base-url etc. Empty values
// keep the provider's own public endpoint, station list and cadence (services/adapters).
func providerSettings(slug string) []setting {
	p, f := ProviderPrefix(slug), ProviderFlagPrefix(slug)
	update := func(c *Config, fn func(pc *ProviderConfig)) {
		pc := c.Providers[slug]
		fn(&pc)
		c.Providers[slug] = pc
	}
	return []setting{
		{Env: p + SuffixBaseURL, Flag: f + "-base-url", Usage: slug + ": live API root (empty: the provider's public endpoint)", Set: func(c *Config, v string) error {
			if v != "" && !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
				return fmt.Errorf("want an http(s) URL, got %q", v)
			}
			update(c, func(pc *ProviderConfig) { pc.BaseURL = v })
			return nil
		}},
		{Env: p + SuffixStations, Flag: f + "-stations", Usage: slug + ": comma-separated station ids polled live (empty: a few real stations)", Set: func(c *Config, v string) error {
			var ids []string
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					ids = append(ids, s)
				}
			}
			update(c, func(pc *ProviderConfig) { pc.Stations = ids })
			return nil
		}},
		{Env: p + SuffixAPIKey, Flag: f + "-api-key", Usage: slug + ": API key, for providers that need one", Secret: true, Set: func(c *Config, v string) error {
			update(c, func(pc *ProviderConfig) { pc.APIKey = v })
			return nil
		}},
		{Env: p + SuffixInterval, Flag: f + "-poll-interval", Usage: slug + ": live poll interval, at least 1s (empty: the provider's cadence)", Set: func(c *Config, v string) error {
			if v == "" {
				update(c, func(*ProviderConfig) {})
				return nil
			}
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Second {
				return fmt.Errorf("want a duration of at least 1s such as 10m, got %q", v)
			}
			update(c, func(pc *ProviderConfig) { pc.Interval = d })
			return nil
		}},
	}
}

// Load reads the configuration of service serviceID (default port defaultPort) from getenv
// and args (flags win). Every mistake is reported, joined in one *settings.Error. -h
// prints the help to out and returns an error matching flag.ErrHelp.
func Load(serviceID string, defaultPort int, providerSlugs []string, args []string, getenv func(string) string, out io.Writer) (Config, error) {
	c := Config{ServiceID: serviceID, Providers: map[string]ProviderConfig{}}
	fs := flag.NewFlagSet(serviceID, flag.ContinueOnError)
	fs.SetOutput(out)
	l := settings.Register(fs, Settings(serviceID, defaultPort, providerSlugs), getenv)
	l.SetHeader("usage: " + serviceID + " [flags]\n\nThe " + serviceID + " backing service (docs/services.md).")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("flags: %w", err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	c.PrintEnv = l.PrintEnvRequested()
	if c.PrintEnv {
		return c, nil
	}
	err := l.Load(&c)
	return c, err
}
