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
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/gateway/ratelimit"
	"github.com/sensorgate/sensorgate/pkg/gctune"
	"github.com/sensorgate/sensorgate/pkg/obs"
	"github.com/sensorgate/sensorgate/pkg/settings"
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

	// Account holds the account dashboard's settings (ACCOUNT_*, docs/accounts.md).
	Account Account
	// Alerts holds the alert settings (ALERT_*, docs/alerts.md).
	Alerts Alerts
}

// Account is the configuration of the account dashboard (package account).
type Account struct {
	// Origin is the dashboard's public origin, the passkeys' relying party
	// (ACCOUNT_ORIGIN); empty turns the dashboard off.
	Origin string
	// OpenSignUp lets anyone create an account with a passkey (ACCOUNT_SIGNUP=open).
	OpenSignUp bool
	// OIDCIssuer, OIDCClientID and OIDCClientSecret add sign-in with an OpenID Connect
	// provider (OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET).
	OIDCIssuer, OIDCClientID, OIDCClientSecret string
}

// Alerts is the configuration of alert rules and their webhooks (package alerts).
type Alerts struct {
	// WebhookAllow are the address ranges a webhook may reach although they are loopback,
	// private, link-local or metadata (ALERT_WEBHOOK_ALLOW); a development gateway adds
	// loopback.
	WebhookAllow []netip.Prefix
	// Quotas are the most rules a key of each plan may hold (ALERT_RULE_QUOTAS).
	Quotas map[string]int
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
	// FlushInterval is the least time between two writes to a stream's client
	// (STREAM_FLUSH_INTERVAL; 0 writes every batch at once).
	FlushInterval time.Duration
}

// Proxy is the configuration of the path to the backing services (packages contract and readings).
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
	// HTTP2 speaks HTTP/2 without TLS to the services (UPSTREAM_HTTP2).
	HTTP2 bool
	// Transport carries the HTTP/1.1 calls to the services (UPSTREAM_TRANSPORT):
	// contract.TransportSync or contract.TransportNet.
	Transport string
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

// setting is one row of the gateway's table (pkg/settings, the one mechanism of every
// binary).
type setting = settings.Setting[Config]

// Settings is the one table of the gateway's configuration. Order matters: SENSORGATE_ENV
// comes before the settings whose default depends on it.
func Settings() []setting {
	return append([]setting{
		{Env: "SENSORGATE_ENV", Flag: "env", Default: EnvDevelopment, Usage: "environment of the gateway: development or production (a key of the other environment is refused)", Set: func(c *Config, v string) error {
			if v != EnvDevelopment && v != EnvProduction {
				return fmt.Errorf("want development or production, got %q", v)
			}
			c.Env = v
			return nil
		}},
		{Env: "GATEWAY_ADDR", Flag: "addr", Default: DefaultAddr, Usage: "host:port the HTTP server listens on", Set: func(c *Config, v string) error {
			if _, port, err := net.SplitHostPort(v); err != nil {
				return fmt.Errorf("want host:port, e.g. %s, got %q", DefaultAddr, v)
			} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
				return fmt.Errorf("port %q is not a number from 0 to 65535", port)
			}
			c.Addr = v
			return nil
		}},
		{Env: "DATABASE_URL", Flag: "database-url", Default: "", Usage: "PostgreSQL URL of the catalog (postgres://...); empty uses the SQLite file SQLITE_PATH", Secret: true, Set: func(c *Config, v string) error {
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
		{Env: "SQLITE_PATH", Flag: "sqlite-path", Default: DefaultSQLitePath, Usage: "SQLite file of the catalog when DATABASE_URL is empty (created when absent)", Set: func(c *Config, v string) error {
			if v == "" && c.DatabaseURL == "" {
				return errors.New("must not be empty when DATABASE_URL is empty")
			}
			c.SQLitePath = v
			return nil
		}},
		{Env: "DEV_API_KEY", Flag: "dev-api-key", Default: DefaultDevAPIKey, Usage: "development API key created at start in the development environment (never valid in production)", Secret: true, Set: func(c *Config, v string) error {
			if c.Env == EnvDevelopment && len(v) < 16 {
				return fmt.Errorf("want at least 16 characters, got %d", len(v))
			}
			c.DevAPIKey = v
			return nil
		}},
		{Env: "SERVICE_URLS", Flag: "service-urls", Default: DefaultServiceURLs, Usage: "backing services as id=url pairs, comma-separated", Set: func(c *Config, v string) error {
			s, err := ParseServices(v)
			if err != nil {
				return err
			}
			c.Services = s
			return nil
		}},
		{Env: "INTERNAL_TOKEN", Flag: "internal-token", Default: "", Usage: "shared secret sent to the backing services in X-Internal-Token (empty: none)", Secret: true, Set: func(c *Config, v string) error {
			if strings.ContainsAny(v, "\r\n") {
				return errors.New("must not contain line breaks")
			}
			c.InternalToken = v
			return nil
		}},
		{Env: "REDIS_URL", Flag: "redis-url", Default: "", Usage: "Redis URL of the shared rate-limit counters (redis://host:6379/0); empty counts in process", Secret: true, Set: func(c *Config, v string) error {
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
		{Env: "KEY_CACHE_TTL", Flag: "key-cache-ttl", Default: DefaultKeyCacheTTL.String(), Usage: "how long a replica trusts a cached key lookup, so a revocation takes effect everywhere within it (0 disables the cache, at most 1m)", Set: setDuration(0, MaxKeyCacheTTL, func(c *Config) *time.Duration { return &c.KeyCacheTTL })},
		{Env: "SYNC_INTERVAL", Flag: "sync-interval", Default: DefaultSyncInterval.String(), Usage: "how often the catalog is synced from the backing services (0 turns the sync off: the catalog then comes from catalog import only)", Set: func(c *Config, v string) error {
			d, err := settings.Duration(v, 0, settings.Unbounded)
			if err != nil {
				return err
			}
			if d != 0 && d < time.Second {
				return fmt.Errorf("want 0 (off) or at least 1s, got %s", v)
			}
			c.SyncInterval = d
			return nil
		}},
		{Env: "LOG_FORMAT", Flag: "log-format", Default: "", Usage: "log format: json or text (default text in development, json in production)", Set: func(c *Config, v string) error {
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
		{Env: "LOG_LEVEL", Flag: "log-level", Default: "info", Usage: "minimum log level: debug, info, warn or error", Set: func(c *Config, v string) error {
			var l slog.Level
			if err := l.UnmarshalText([]byte(v)); err != nil {
				return fmt.Errorf("want debug, info, warn or error, got %q", v)
			}
			c.LogLevel = l
			return nil
		}},
		{Env: "RATE_LIMIT_PLANS", Flag: "rate-limit-plans", Default: "", Usage: "budgets of production plans as name=rate/unit[:burst] pairs, e.g. free=1000/h,pro=10000/h (a \"default\" plan covers unlisted plans; development keys: 1000/h)", Set: func(c *Config, v string) error {
			p, err := ratelimit.ParsePlans(v)
			if err != nil {
				return err
			}
			c.RateLimit.Plans = p
			return nil
		}},
		{Env: "RATE_LIMIT_FAIL_CLOSED", Flag: "rate-limit-fail-closed", Default: "false", Usage: "while Redis is down, refuse requests (503) instead of counting per replica", Set: func(c *Config, v string) error {
			b, err := settings.Bool(v)
			c.RateLimit.FailClosed = b
			return err
		}},
		{Env: "UPSTREAM_TIMEOUT", Flag: "upstream-timeout", Default: "10s", Usage: "deadline of one readings call to a backing service, retries included (then 504 upstream_timeout)", Set: setDuration(100*time.Millisecond, 5*time.Minute, func(c *Config) *time.Duration { return &c.Proxy.Timeout })},
		{Env: "UPSTREAM_HEALTH_TIMEOUT", Flag: "upstream-health-timeout", Default: "2s", Usage: "deadline of a service health call and of each background probe (a service that misses it is down)", Set: setDuration(100*time.Millisecond, time.Minute, func(c *Config) *time.Duration { return &c.Proxy.HealthTimeout })},
		{Env: "READINGS_CACHE_TTL", Flag: "readings-cache-ttl", Default: "3s", Usage: "freshness bound of cached readings answers (0 to 1m; 0 keeps only the coalescing of identical concurrent requests)", Set: setDuration(0, time.Minute, func(c *Config) *time.Duration { return &c.Proxy.CacheTTL })},
		{Env: "PROBE_INTERVAL", Flag: "probe-interval", Default: "15s", Usage: "how often every backing service's health is probed for the service list status", Set: setDuration(time.Second, settings.Unbounded, func(c *Config) *time.Duration { return &c.Proxy.ProbeInterval })},
		{Env: "UPSTREAM_HTTP2", Flag: "upstream-http2", Default: "false", Usage: "speak HTTP/2 without TLS (prior knowledge) to the backing services instead of HTTP/1.1", Set: func(c *Config, v string) error {
			b, err := settings.Bool(v)
			c.Proxy.HTTP2 = b
			return err
		}},
		{Env: "UPSTREAM_TRANSPORT", Flag: "upstream-transport", Default: "sync", Usage: "what carries the HTTP/1.1 calls to the backing services: sync (the answer read on the calling goroutine over a pool of kept-alive connections, pkg/h1pool) or net (net/http's Transport)", Set: func(c *Config, v string) error {
			switch v {
			case "sync", "net":
				c.Proxy.Transport = v
				return nil
			}
			return fmt.Errorf("%q: want sync or net", v)
		}},
		{Env: "STREAM_MAX_PER_KEY", Flag: "stream-max-per-key", Default: "5", Usage: "streams one API key may hold open at once on a replica (429 beyond)", Set: setInt(1, 10000, func(c *Config) *int { return &c.Stream.MaxPerKey })},
		{Env: "STREAM_BUFFER", Flag: "stream-buffer", Default: "1024", Usage: "events a stream may fall behind before it is disconnected as a slow consumer", Set: setInt(1, 1<<20, func(c *Config) *int { return &c.Stream.Buffer })},
		{Env: "STREAM_HEARTBEAT", Flag: "stream-heartbeat", Default: "15s", Usage: "interval of the keep-alive comment of every stream (1s to 15s)", Set: setDuration(time.Second, 15*time.Second, func(c *Config) *time.Duration { return &c.Stream.Heartbeat })},
		{Env: "STREAM_FLUSH_INTERVAL", Flag: "stream-flush-interval", Default: "0s", Usage: "least time between two writes to a stream's client, so that a burst of readings is gathered into few writes (0 to 1s; 0 writes each batch at once)", Set: setDuration(0, time.Second, func(c *Config) *time.Duration { return &c.Stream.FlushInterval })},
		{Env: "ALERT_WEBHOOK_ALLOW", Flag: "alert-webhook-allow", Default: "", Usage: "comma-separated address ranges (CIDR) alert webhooks may reach although loopback, private, link-local or metadata, e.g. 10.1.0.0/16 (development adds loopback)", Set: func(c *Config, v string) error {
			c.Alerts.WebhookAllow = nil
			for _, item := range strings.Split(v, ",") {
				if item = strings.TrimSpace(item); item == "" {
					continue
				}
				p, err := netip.ParsePrefix(item)
				if err != nil {
					return fmt.Errorf("%q: want an address range such as 10.1.0.0/16 or fd00::/8", item)
				}
				c.Alerts.WebhookAllow = append(c.Alerts.WebhookAllow, p.Masked())
			}
			return nil
		}},
		{Env: "ALERT_RULE_QUOTAS", Flag: "alert-rule-quotas", Default: "default=100", Usage: "most alert rules a key of each plan may hold, as plan=count pairs, e.g. free=10,pro=1000 (\"default\" covers unlisted plans)", Set: func(c *Config, v string) error {
			q := map[string]int{}
			for _, item := range strings.Split(v, ",") {
				if item = strings.TrimSpace(item); item == "" {
					continue
				}
				name, num, ok := strings.Cut(item, "=")
				n, err := strconv.Atoi(strings.TrimSpace(num))
				if !ok || strings.TrimSpace(name) == "" || err != nil || n < 0 {
					return fmt.Errorf("%q: want plan=count, e.g. pro=1000", item)
				}
				q[strings.TrimSpace(name)] = n
			}
			c.Alerts.Quotas = q
			return nil
		}},
		{Env: "SHUTDOWN_DELAY", Flag: "shutdown-delay", Default: "0s", Usage: "after SIGTERM, how long to keep serving with /readyz at 503 before no longer accepting connections (set it to the load balancer's probe period)", Set: setDuration(0, time.Minute, func(c *Config) *time.Duration { return &c.ShutdownDelay })},
		{Env: "SHUTDOWN_TIMEOUT", Flag: "shutdown-timeout", Default: DefaultShutdownTimeout.String(), Usage: "grace period of shutdown: how long in-flight requests (REST, MCP, health, streams) get to finish once the gateway stops accepting", Set: func(c *Config, v string) error {
			d, err := settings.Duration(v, 0, settings.Unbounded)
			if err != nil {
				return err
			}
			if d <= 0 {
				return fmt.Errorf("want a positive duration, got %s", v)
			}
			c.ShutdownTimeout = d
			return nil
		}},
		// Account dashboard (docs/accounts.md). Both come after SENSORGATE_ENV and
		// GATEWAY_ADDR, which their defaults follow.
		{Env: "ACCOUNT_ORIGIN", Flag: "account-origin", Default: "", Usage: "public origin of the account dashboard and its passkeys, like https://gateway.example.org (development default: http://localhost:PORT of GATEWAY_ADDR; production: empty turns /account off)", Set: func(c *Config, v string) error {
			if v == "" {
				if c.Env == EnvDevelopment {
					_, port, _ := net.SplitHostPort(c.Addr)
					c.Account.Origin = "http://localhost:" + port
				}
				return nil
			}
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
				return errors.New("want an origin: scheme and host only, like https://gateway.example.org")
			}
			if u.Scheme == "http" && c.Env == EnvProduction {
				return errors.New("production needs https: session cookies are Secure")
			}
			c.Account.Origin = u.Scheme + "://" + u.Host
			return nil
		}},
		{Env: "ACCOUNT_SIGNUP", Flag: "account-signup", Default: "", Usage: "open: anyone may create an account with a passkey; closed: by invitation only (default: open in development, closed in production)", Set: func(c *Config, v string) error {
			switch v {
			case "":
				c.Account.OpenSignUp = c.Env == EnvDevelopment
			case "open":
				c.Account.OpenSignUp = true
			case "closed":
				c.Account.OpenSignUp = false
			default:
				return fmt.Errorf("want open or closed, got %q", v)
			}
			return nil
		}},
		{Env: "OIDC_ISSUER", Flag: "oidc-issuer", Default: "", Usage: "issuer URL of an OpenID Connect provider for dashboard sign-in (empty: passkeys only); register ACCOUNT_ORIGIN/account/auth/oidc/callback as its redirect URI", Set: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return errors.New("want the provider's issuer URL, like https://accounts.example.org")
			}
			if u.Scheme == "http" && c.Env == EnvProduction {
				return errors.New("production needs an https issuer")
			}
			c.Account.OIDCIssuer = v
			return nil
		}},
		{Env: "OIDC_CLIENT_ID", Flag: "oidc-client-id", Default: "", Usage: "client id of the gateway at the OpenID Connect provider (required with OIDC_ISSUER)", Set: func(c *Config, v string) error {
			if v == "" && c.Account.OIDCIssuer != "" {
				return errors.New("required when OIDC_ISSUER is set")
			}
			c.Account.OIDCClientID = v
			return nil
		}},
		{Env: "OIDC_CLIENT_SECRET", Flag: "oidc-client-secret", Default: "", Usage: "client secret of the gateway at the OpenID Connect provider", Secret: true, Set: func(c *Config, v string) error {
			c.Account.OIDCClientSecret = v
			return nil
		}},
	}, append(settings.Externals[Config](obs.TracingEnv...), settings.Externals[Config](gctune.Env...)...)...)
}

// setDuration is the Set of a duration between lo and hi that goes into the field at
// returns.
func setDuration(lo, hi time.Duration, at func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := settings.Duration(v, lo, hi)
		if err != nil {
			return err
		}
		*at(c) = d
		return nil
	}
}

// setInt is the Set of a whole number between lo and hi that goes into the field at returns.
func setInt(lo, hi int, at func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := settings.Int(v, lo, hi)
		if err != nil {
			return err
		}
		*at(c) = n
		return nil
	}
}

// EnvVars lists the names of every environment variable the gateway binary reads, for
// deployment checks that compare them with compose and Kubernetes manifests.
func EnvVars() []string { return settings.EnvNames(Settings()) }

// Loader collects the configuration from the environment and the flags of one command.
type Loader struct {
	*settings.Loader[Config]
}

// Register declares every setting as a flag on fs (pkg/settings.Register), with the
// environment variable (or the documented default) as the flag's default. Settings whose
// flag name is in omit are read from the environment only, leaving the flag name free for
// the command (keys create uses -env for the key's environment).
func Register(fs *flag.FlagSet, getenv func(string) string, omit ...string) *Loader {
	return &Loader{settings.Register(fs, Settings(), getenv, omit...)}
}

// Load parses every setting (after fs.Parse) and returns the configuration, or a
// *settings.Error listing every mistake, each naming the variable and its flag.
func (l *Loader) Load() (Config, error) {
	var c Config
	err := l.Loader.Load(&c)
	return c, err
}

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
