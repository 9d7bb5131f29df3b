package checks

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	gwconfig "github.com/sensorgate/sensorgate/gateway/config"
	svcconfig "github.com/sensorgate/sensorgate/services/runtime/config"
)

// optional lists the variables a binary reads that a deployment may leave unset, each with
// the reason its default is right there. Every other variable of Binaries().Env must be
// set in docker-compose.yml and in every Kubernetes overlay: a variable added to a binary
// fails these tests until it is deployed or listed here.
var optional = map[string]string{
	// Tracing is off unless an OTLP endpoint is named; operators add it for their collector.
	"OTEL_SDK_DISABLED":                  "tracing is opt-in",
	"OTEL_TRACES_EXPORTER":               "tracing is opt-in",
	"OTEL_EXPORTER_OTLP_ENDPOINT":        "tracing is opt-in",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "tracing is opt-in",
	"OTEL_EXPORTER_OTLP_PROTOCOL":        "tracing is opt-in",
	"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "tracing is opt-in",
	// Files mode replays recorded payloads from a folder; the deployments simulate.
	"SOURCE_DIR": "only read in SOURCE_MODE=files",
	// The development key exists only outside production; a production gateway refuses it,
	// so the prod overlay does not set it at all.
	"DEV_API_KEY": "development only; absent from the prod overlay",
	// Kubernetes' preStop pause takes endpoints out before SIGTERM; compose has no balancer.
	"SHUTDOWN_DELAY": "0 is right behind a preStop pause or without a load balancer",
	// The User-Agent default names the service and the project, as providers ask.
	"USER_AGENT": "default identifies the service; only sent in live mode",
	// The binaries set their GC defaults when these are unset (pkg/gctune); the prod overlay
	// sets MEMORY_LIMIT from the container's limit (prod_test.go checks it).
	"GOGC":         "the binaries' GC default applies when unset",
	"GOMEMLIMIT":   "derived from MEMORY_LIMIT, else 256MiB, when unset",
	"MEMORY_LIMIT": "set by the prod overlay from the memory limit; 256MiB soft limit without it",
	// The account dashboard (docs/accounts.md) needs the public origin only its operator
	// knows; without it a production gateway serves no /account (404 saying so).
	"ACCOUNT_ORIGIN": "the dashboard's public origin; /account is off without it in production",
	"ACCOUNT_SIGNUP": "default follows SENSORGATE_ENV: open in development, closed in production",
	// Alerts (docs/alerts.md): webhooks to private addresses stay refused unless an operator
	// names the ranges, and every plan gets the default rule quota.
	"ALERT_WEBHOOK_ALLOW": "private and metadata targets stay refused; the operator names exceptions",
	"ALERT_RULE_QUOTAS":   "every plan gets the default quota of rules",
	// Sign-in with an organisation's OpenID provider is opt-in.
	"OIDC_ISSUER":        "OpenID Connect sign-in is opt-in",
	"OIDC_CLIENT_ID":     "OpenID Connect sign-in is opt-in",
	"OIDC_CLIENT_SECRET": "OpenID Connect sign-in is opt-in",
}

// optionalProvider reports whether name is a per-provider live-mode variable
// (<PROVIDER>_BASE_URL, _STATIONS, _API_KEY, _POLL_INTERVAL): only read in SOURCE_MODE=live,
// with each provider's public endpoint and station list as defaults.
func optionalProvider(b Binary, name string) bool {
	for _, slug := range b.Def.ProviderSlugs() {
		p := svcconfig.ProviderPrefix(slug)
		for _, s := range []string{svcconfig.SuffixBaseURL, svcconfig.SuffixStations, svcconfig.SuffixAPIKey, svcconfig.SuffixInterval} {
			if name == p+s {
				return true
			}
		}
	}
	return false
}

// missingEnv lists the variables b reads that env does not set (not empty) and that are
// not optional.
func missingEnv(b Binary, env map[string]string) []string {
	var out []string
	for _, name := range b.Env {
		if env[name] != "" {
			continue
		}
		if _, ok := optional[name]; ok || (!b.Gateway && optionalProvider(b, name)) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// loadConfig validates env with the binary's own configuration loader, so a value the
// binary would refuse at start (a bad duration, a loopback address, ...) fails here.
func loadConfig(b Binary, env map[string]string) (listenPort int, err error) {
	getenv := func(k string) string { return env[k] }
	var addr string
	if b.Gateway {
		l := gwconfig.Register(newFlagSet(), getenv)
		c, err := l.Load()
		if err != nil {
			return 0, err
		}
		addr = c.Addr
	} else {
		c, err := svcconfig.Load(b.Name, b.Port, b.Def.ProviderSlugs(), nil, getenv, io.Discard)
		if err != nil {
			return 0, err
		}
		addr = c.Addr
		if c.PublicPort != b.Port {
			return 0, fmt.Errorf("SERVICE_PORT_PUBLIC is %d, want %d", c.PublicPort, b.Port)
		}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return 0, fmt.Errorf("listens on %s: unreachable from outside the container", addr)
	}
	return strconv.Atoi(port)
}

func TestMissingEnvCatchesNewVariables(t *testing.T) {
	t.Parallel()
	gw := Binaries()[0]
	env := map[string]string{}
	for _, n := range gw.Env {
		env[n] = "x"
	}
	if m := missingEnv(gw, env); len(m) != 0 {
		t.Fatalf("all set, yet missing %v", m)
	}
	gw.Env = append(gw.Env, "NEW_SETTING")
	delete(env, "REDIS_URL")
	if got := strings.Join(missingEnv(gw, env), ","); got != "REDIS_URL,NEW_SETTING" {
		t.Fatalf("missing = %s, want REDIS_URL,NEW_SETTING", got)
	}
}

func TestLoadConfigRefusesLoopbackAndBadValues(t *testing.T) {
	t.Parallel()
	bins := Binaries()
	tests := []struct {
		name    string
		b       Binary
		env     map[string]string
		wantErr string
	}{
		{"gateway default address", bins[0], map[string]string{}, "unreachable from outside"},
		{"gateway bad duration", bins[0], map[string]string{"GATEWAY_ADDR": "0.0.0.0:8080", "KEY_CACHE_TTL": "5 s"}, "KEY_CACHE_TTL"},
		{"service default address", bins[1], map[string]string{}, "unreachable from outside"},
		{"service bad mode", bins[1], map[string]string{"SERVICE_ADDR": "0.0.0.0:8081", "SOURCE_MODE": "replay"}, "SOURCE_MODE"},
		{"service wrong public port", bins[1], map[string]string{"SERVICE_ADDR": "0.0.0.0:9000"}, "SERVICE_PORT_PUBLIC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadConfig(tt.b, tt.env)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("loadConfig = %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
}

func parseSeconds(s string) (float64, error) {
	d, err := time.ParseDuration(s)
	return d.Seconds(), err
}
