// Package config is the gateway's configuration: environment variables with documented
// defaults, each overridable by a command-line flag, parsed strictly and validated at start
// with one message per mistake.
//
// Every setting is declared once, in (*Config).settings, which binds its environment
// variable, its flag, its default and its parser. EnvVars, the flag registration, the
// validation and the documentation test all read that one table, so a setting cannot be
// added to one of them and forgotten in another.
package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/gateway/ratelimit"
)

// Environments of the gateway and of API keys.
const (
	EnvDevelopment = "development"
	EnvProduction  = "production"
)

// Documented defaults.
const (
	DefaultAddr = "127.0.0.1:8080"
	// DefaultDevAPIKey is the development key of `make run`. It is public, which is why it
	// only works when the gateway runs in the development environment.
	DefaultDevAPIKey       = "sg_dev_4f7b1d2c9a8e6b3f0d5c7a9e1b2d4f6a"
	DefaultSQLitePath      = "./data/gateway.db"
	DefaultServiceURLs     = "ocean=http://127.0.0.1:8081,weather=http://127.0.0.1:8082,airquality=http://127.0.0.1:8083"
	DefaultKeyCacheTTL     = 5 * time.Second
	DefaultSyncInterval    = 30 * time.Second
	DefaultShutdownTimeout = 15 * time.Second
	// MaxKeyCacheTTL bounds how long a revoked key may keep working on a replica.
	MaxKeyCacheTTL = time.Minute
)

// Service is one backing service the gateway talks to.
type Service struct {
	ID  string
	URL string // base URL, no trailing slash
}

// Config is everything the gateway binary reads from its environment.
type Config struct {
	Addr            string
	DatabaseURL     string // PostgreSQL; empty selects SQLite at SQLitePath
	SQLitePath      string
	Env             string // development | production
	DevAPIKey       string
	Services        []Service
	InternalToken   string
	RedisURL        string // empty: in-process rate limiting
	KeyCacheTTL     time.Duration
	SyncInterval    time.Duration
	LogFormat       string // json | text
	LogLevel        slog.Level
	ShutdownTimeout time.Duration
	// ShutdownDelay is how long the gateway keeps serving after SIGTERM with /readyz at 503
	// before it stops accepting, so that load balancers see it leave (SHUTDOWN_DELAY).
	ShutdownDelay time.Duration

	// RateLimit holds the RATE_LIMIT_* settings; the rate limit engineer adds its fields
	// and their entries in settings.
	RateLimit RateLimit

	// Proxy holds the readings/health proxy settings (UPSTREAM_*, READINGS_CACHE_TTL,
	// PROBE_INTERVAL).
	Proxy Proxy

	// Stream holds the Server-Sent Event stream settings (STREAM_*, docs/live.md).
	Stream Stream
}

// Stream is the configuration of the live streams (package stream).
type Stream struct {
	// MaxPerKey caps the streams one key holds open on a replica (STREAM_MAX_PER_KEY).
	MaxPerKey int
	// Buffer is how many events a stream may fall behind before it is disconnected as a
	// slow consumer (STREAM_BUFFER).
	Buffer int
	// Heartbeat is the interval of the keep-alive comment (STREAM_HEARTBEAT, at most 15s).
	Heartbeat time.Duration
}

// Proxy is the configuration of the path to the backing services (package proxy).
type Proxy struct {
	// Timeout is the deadline of one readings call to a service, retries included
	// (UPSTREAM_TIMEOUT); past it the client gets 504 upstream_timeout.
	Timeout time.Duration
	// HealthTimeout bounds a health call and each background probe (UPSTREAM_HEALTH_TIMEOUT).
	HealthTimeout time.Duration
	// CacheTTL is the freshness bound of cached readings answers (READINGS_CACHE_TTL; 0
	// keeps only the coalescing of identical concurrent requests).
	CacheTTL time.Duration
	// ProbeInterval is how often every service's health is probed (PROBE_INTERVAL).
	ProbeInterval time.Duration
}

// RateLimit is the rate limiter's configuration (RATE_LIMIT_*). Development keys always
// get docs/spec.md's 1000 requests an hour; production keys get their plan's budget.
type RateLimit struct {
	// Plans maps production plan names to budgets (RATE_LIMIT_PLANS); a key whose plan is
	// not listed gets the "default" plan, else the development budget.
	Plans ratelimit.Plans
	// FailClosed refuses requests (503) while Redis is down instead of counting per
	// replica (RATE_LIMIT_FAIL_CLOSED).
	FailClosed bool
}

// setting binds one environment variable to its flag, default and parser.
type setting struct {
	env   string
	flag  string
	def   string // the documented default; "" when it depends on other settings
	usage string
	// secret values are never shown in -help output.
	secret bool
	// set parses the value (already defaulted) into the Config. It is called in table
	// order, so a setting may depend on one declared before it.
	set func(c *Config, v string) error
}

// settings is the one table of the gateway's configuration. Order matters: SENSORGATE_ENV
// comes before the settings whose default depends on it.
func settings() []setting {
	return []setting{
		{env: "SENSORGATE_ENV", flag: "env", def: EnvDevelopment, usage: "environment of the gateway: development or production (a key of the other environment is refused)", set: func(c *Config, v string) error {
			if v != EnvDevelopment && v != EnvProduction {
				return fmt.Errorf("want development or production, got %q", v)
			}
			c.Env = v
			return nil
		}},
		{env: "GATEWAY_ADDR", flag: "addr", def: DefaultAddr, usage: "host:port the HTTP server listens on", set: func(c *Config, v string) error {
			if _, port, err := net.SplitHostPort(v); err != nil {
				return fmt.Errorf("want host:port, e.g. %s, got %q", DefaultAddr, v)
			} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
				return fmt.Errorf("port %q is not a number from 0 to 65535", port)
			}
			c.Addr = v
			return nil
		}},
		{env: "DATABASE_URL", flag: "database-url", def: "", usage: "PostgreSQL URL of the catalog (postgres://...); empty uses the SQLite file SQLITE_PATH", secret: true, set: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
				return errors.New("want a PostgreSQL URL postgres://user@host:port/dbname (or empty for SQLite)")
			}
			c.DatabaseURL = v
			return nil
		}},
		{env: "SQLITE_PATH", flag: "sqlite-path", def: DefaultSQLitePath, usage: "SQLite file of the catalog when DATABASE_URL is empty (created when absent)", set: func(c *Config, v string) error {
			if v == "" && c.DatabaseURL == "" {
				return errors.New("must not be empty when DATABASE_URL is empty")
			}
			c.SQLitePath = v
			return nil
		}},
		{env: "DEV_API_KEY", flag: "dev-api-key", def: DefaultDevAPIKey, usage: "development API key created at start in the development environment (never valid in production)", secret: true, set: func(c *Config, v string) error {
			if c.Env == EnvDevelopment && len(v) < 16 {
				return fmt.Errorf("want at least 16 characters, got %d", len(v))
			}
			c.DevAPIKey = v
			return nil
		}},
		{env: "SERVICE_URLS", flag: "service-urls", def: DefaultServiceURLs, usage: "backing services as id=url pairs, comma-separated", set: func(c *Config, v string) error {
			s, err := ParseServices(v)
			if err != nil {
				return err
			}
			c.Services = s
			return nil
		}},
		{env: "INTERNAL_TOKEN", flag: "internal-token", def: "", usage: "shared secret sent to the backing services in X-Internal-Token (empty: none)", secret: true, set: func(c *Config, v string) error {
			if strings.ContainsAny(v, "\r\n") {
				return errors.New("must not contain line breaks")
			}
			c.InternalToken = v
			return nil
		}},
		{env: "REDIS_URL", flag: "redis-url", def: "", usage: "Redis URL of the shared rate-limit counters (redis://host:6379/0); empty counts in process", secret: true, set: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") || (u.Scheme != "unix" && u.Host == "") {
				return errors.New("want a Redis URL redis://host:port/db (or empty)")
			}
			c.RedisURL = v
			return nil
		}},
		{env: "KEY_CACHE_TTL", flag: "key-cache-ttl", def: DefaultKeyCacheTTL.String(), usage: "how long a replica trusts a cached key lookup, so a revocation takes effect everywhere within it (0 disables the cache, at most 1m)", set: func(c *Config, v string) error {
			d, err := parseDuration(v)
			if err != nil {
				return err
			}
			if d < 0 || d > MaxKeyCacheTTL {
				return fmt.Errorf("want a duration from 0s to %s, got %s", MaxKeyCacheTTL, v)
			}
			c.KeyCacheTTL = d
			return nil
		}},
		{env: "SYNC_INTERVAL", flag: "sync-interval", def: DefaultSyncInterval.String(), usage: "how often the catalog is synced from the backing services (0 turns the sync off: the catalog then comes from catalog import only)", set: func(c *Config, v string) error {
			d, err := parseDuration(v)
			if err != nil {
				return err
			}
			if d != 0 && d < time.Second {
				return fmt.Errorf("want 0 (off) or at least 1s, got %s", v)
			}
			c.SyncInterval = d
			return nil
		}},
		{env: "LOG_FORMAT", flag: "log-format", def: "", usage: "log format: json or text (default text in development, json in production)", set: func(c *Config, v string) error {
			switch v {
			case "":
				c.LogFormat = "text"
				if c.Env == EnvProduction {
					c.LogFormat = "json"
				}
			case "json", "text":
				c.LogFormat = v
			default:
				return fmt.Errorf("want json or text, got %q", v)
			}
			return nil
		}},
		{env: "LOG_LEVEL", flag: "log-level", def: "info", usage: "minimum log level: debug, info, warn or error", set: func(c *Config, v string) error {
			var l slog.Level
			if err := l.UnmarshalText([]byte(v)); err != nil {
				return fmt.Errorf("want debug, info, warn or error, got %q", v)
			}
			c.LogLevel = l
			return nil
		}},
		{env: "RATE_LIMIT_PLANS", flag: "rate-limit-plans", def: "", usage: "budgets of production plans as name=rate/unit[:burst] pairs, e.g. free=1000/h,pro=10000/h (a \"default\" plan covers unlisted plans; development keys: 1000/h)", set: func(c *Config, v string) error {
			p, err := ratelimit.ParsePlans(v)
			if err != nil {
				return err
			}
			c.RateLimit.Plans = p
			return nil
		}},
		{env: "RATE_LIMIT_FAIL_CLOSED", flag: "rate-limit-fail-closed", def: "false", usage: "while Redis is down, refuse requests (503) instead of counting per replica", set: func(c *Config, v string) error {
			return setBool(&c.RateLimit.FailClosed, v)
		}},
		{env: "UPSTREAM_TIMEOUT", flag: "upstream-timeout", def: "10s", usage: "deadline of one readings call to a backing service, retries included (then 504 upstream_timeout)", set: func(c *Config, v string) error {
			d, err := parseDuration(v)
			if err != nil {
				return err
			}
			if d < 100*time.Millisecond || d > 5*time.Minute {
				return fmt.Errorf("want a duration from 100ms to 5m, got %s", v)
			}
			c.Proxy.Timeout = d
			return nil
		}},
		{env: "UPSTREAM_HEALTH_TIMEOUT", flag: "upstream-health-timeout", def: "2s", usage: "deadline of a service health call and of each background probe (a service that misses it is down)", set: func(c *Config, v string) error {
			d, err := parseDuration(v)
			if err != nil {
				return err
			}
			if d < 100*time.Millisecond || d > time.Minute {
				return fmt.Errorf("want a duration from 100ms to 1m, got %s", v)
			}
			c.Proxy.HealthTimeout = d
			return nil
		}},
		{env: "READINGS_CACHE_TTL", flag: "readings-cache-ttl", def: "3s", usage: "freshness bound of cached readings answers (0 to 1m; 0 keeps only the coalescing of identical concurrent requests)", set: func(c *Config, v string) error {
			d, err := parseDuration(v)
			if err != nil {
				return err
			}
			if d < 0 || d > time.Minute {
				return fmt.Errorf("want a duration from 0s to 1m, got %s", v)
			}
			c.Proxy.CacheTTL = d
			return nil
		}},
		{env: "PROBE_INTERVAL", flag: "probe-interval", def: "15s", usage: "how often every backing service's health is probed for the service list status", set: func(c *Config, v string) error {
			d, err := parseDuration(v)
			if err != nil {
				return err
			}
			if d < time.Second {
				return fmt.Errorf("want at least 1s, got %s", v)
			}
			c.Proxy.ProbeInterval = d
			return nil
		}},
		{env: "STREAM_MAX_PER_KEY", flag: "stream-max-per-key", def: "5", usage: "streams one API key may hold open at once on a replica (429 beyond)", set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 10000 {
				return fmt.Errorf("want an integer from 1 to 10000, got %q", v)
			}
			c.Stream.MaxPerKey = n
			return nil
		}},
		{env: "STREAM_BUFFER", flag: "stream-buffer", def: "1024", usage: "events a stream may fall behind before it is disconnected as a slow consumer", set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1<<20 {
				return fmt.Errorf("want an integer from 1 to 1048576, got %q", v)
			}
			c.Stream.Buffer = n
			return nil
		}},
		{env: "STREAM_HEARTBEAT", flag: "stream-heartbeat", def: "15s", usage: "interval of the keep-alive comment of every stream (1s to 15s)", set: func(c *Config, v string) error {
			d, err := parseDuration(v)
			if err != nil {
				return err
			}
			if d < time.Second || d > 15*time.Second {
				return fmt.Errorf("want a duration from 1s to 15s, got %s", v)
			}
			c.Stream.Heartbeat = d
			return nil
		}},
		{env: "SHUTDOWN_DELAY", flag: "shutdown-delay", def: "0s", usage: "after SIGTERM, how long to keep serving with /readyz at 503 before no longer accepting connections (set it to the load balancer's probe period)", set: func(c *Config, v string) error {
			d, err := parseDuration(v)
			if err != nil {
				return err
			}
			if d < 0 || d > time.Minute {
				return fmt.Errorf("want a duration from 0s to 1m, got %s", v)
			}
			c.ShutdownDelay = d
			return nil
		}},
		{env: "SHUTDOWN_TIMEOUT", flag: "shutdown-timeout", def: DefaultShutdownTimeout.String(), usage: "grace period of shutdown: how long in-flight requests (REST, MCP, health, streams) get to finish once the gateway stops accepting", set: func(c *Config, v string) error {
			d, err := parseDuration(v)
			if err != nil {
				return err
			}
			if d <= 0 {
				return fmt.Errorf("want a positive duration, got %s", v)
			}
			c.ShutdownTimeout = d
			return nil
		}},
	}
}

// setBool parses a true/false setting into dst.
func setBool(dst *bool, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("want true or false, got %q", v)
	}
	*dst = b
	return nil
}

func parseDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("want a Go duration such as 5s, 500ms or 1m, got %q", v)
	}
	return d, nil
}

// Var describes one environment variable the gateway reads.
type Var struct {
	Name    string
	Flag    string
	Default string
	Usage   string
}

// Vars lists every environment variable the gateway binary reads, in table order.
func Vars() []Var {
	ss := settings()
	out := make([]Var, len(ss))
	for i, s := range ss {
		out[i] = Var{Name: s.env, Flag: s.flag, Default: s.def, Usage: s.usage}
	}
	return out
}

// EnvVars lists the names of every environment variable the gateway binary reads, for
// deployment checks that compare them with compose and Kubernetes manifests.
func EnvVars() []string {
	vs := Vars()
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}

// Loader collects the configuration from the environment and the flags of one command.
type Loader struct {
	getenv func(string) string
	values map[string]*string // by env name: the flag's value, defaulted from the environment
	order  []setting
}

// Register declares every setting as a flag on fs, with the environment variable (or the
// documented default) as the flag's default, and returns the Loader that Load reads them
// through after fs.Parse. Settings whose flag name is in omit are read from the
// environment only, leaving the flag name free for the command (keys create uses -env for
// the key's environment).
func Register(fs *flag.FlagSet, getenv func(string) string, omit ...string) *Loader {
	l := &Loader{getenv: getenv, values: map[string]*string{}, order: settings()}
	for _, s := range l.order {
		v := &flagValue{secret: s.secret, public: s.def}
		v.s = s.def
		if e, ok := lookup(getenv, s.env); ok {
			v.s = e
		}
		l.values[s.env] = &v.s
		if !slices.Contains(omit, s.flag) {
			fs.Var(v, s.flag, s.usage+" (env "+s.env+")")
		}
	}
	return l
}

// lookup reports an environment variable as set when it is not empty: an empty variable
// in a compose file or a manifest means "not configured", so the default applies.
func lookup(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	return v, v != ""
}

// Load parses every setting and returns the configuration, or one error listing every
// mistake, each naming the variable and its flag.
func (l *Loader) Load() (Config, error) {
	var c Config
	var errs []error
	for _, s := range l.order {
		v := strings.TrimSpace(*l.values[s.env])
		if err := s.set(&c, v); err != nil {
			errs = append(errs, fmt.Errorf("%s (flag -%s): %w", s.env, s.flag, err))
		}
	}
	if len(errs) > 0 {
		return c, &Error{Problems: errs}
	}
	return c, nil
}

// Error lists every configuration mistake found at once.
type Error struct{ Problems []error }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("invalid configuration:")
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap gives errors.Is/As access to each problem.
func (e *Error) Unwrap() []error { return e.Problems }

var serviceIDPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// ParseServices parses SERVICE_URLS: "id=url" pairs separated by commas. Ids are
// lower-case, unique; URLs are absolute http(s) URLs without query or fragment.
func ParseServices(s string) ([]Service, error) {
	var out []Service
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, raw, ok := strings.Cut(item, "=")
		id, raw = strings.TrimSpace(id), strings.TrimSpace(raw)
		if !ok {
			return nil, fmt.Errorf("item %q: want id=url, e.g. ocean=http://127.0.0.1:8081", item)
		}
		if !serviceIDPattern.MatchString(id) {
			return nil, fmt.Errorf("service id %q: want lower-case letters, digits, _ or -, starting with a letter", id)
		}
		if seen[id] {
			return nil, fmt.Errorf("service id %q is given twice", id)
		}
		seen[id] = true
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("service %q: URL %q is not an absolute http(s) URL without query", id, raw)
		}
		out = append(out, Service{ID: id, URL: strings.TrimRight(u.String(), "/")})
	}
	if len(out) == 0 {
		return nil, errors.New("no service given; want id=url pairs, e.g. " + DefaultServiceURLs)
	}
	return out, nil
}

// ServiceURL returns the base URL of a configured service.
func (c Config) ServiceURL(id string) (string, bool) {
	for _, s := range c.Services {
		if s.ID == id {
			return s.URL, true
		}
	}
	return "", false
}

// flagValue is a string flag whose default comes from the environment; a secret one
// prints as "(hidden)" in -help, unless it is the documented default, so that a help
// screen never leaks a token.
type flagValue struct {
	s      string
	secret bool
	public string // the documented default, safe to show
}

func (f *flagValue) String() string {
	if f == nil {
		return ""
	}
	if f.secret && f.s != "" && f.s != f.public {
		return "(hidden)"
	}
	return f.s
}

func (f *flagValue) Set(v string) error { f.s = v; return nil }
