package app

import (
	"encoding/json"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandLine checks the mistakes a user can make on the command line: each is an
// error that says what is wrong, before anything touches a database.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	base := env{"SQLITE_PATH": filepath.Join(t.TempDir(), "gw.db")}
	cases := []struct {
		name string
		env  env
		args []string
		want []string
	}{
		{"unknown command", base, []string{"frobnicate"}, []string{`unknown command "frobnicate"`, "keys create"}},
		{"keys without subcommand", base, []string{"keys"}, []string{"create, list or revoke"}},
		{"unknown keys subcommand", base, []string{"keys", "rotate"}, []string{`"rotate"`}},
		{"catalog without import", base, []string{"catalog"}, []string{"import FILE"}},
		{"catalog import without file", base, []string{"catalog", "import"}, []string{"one catalog file"}},
		{"revoke without id", base, []string{"keys", "revoke"}, []string{"one key id or prefix"}},
		{"serve with an argument", base, []string{"serve", "now"}, []string{`unexpected argument "now"`}},
		{"unknown flag", base, []string{"serve", "-colour"}, []string{"-colour"}},
		{"every configuration mistake at once", base.with("SENSORGATE_ENV", "prod", "KEY_CACHE_TTL", "forever", "SERVICE_URLS", "ocean"), []string{"serve"},
			[]string{"SENSORGATE_ENV (flag -env)", "KEY_CACHE_TTL (flag -key-cache-ttl)", "SERVICE_URLS (flag -service-urls)"}},
		{"production without token, Redis and plans", base.with("SENSORGATE_ENV", "production"), []string{"serve"},
			[]string{"refuses to start", "INTERNAL_TOKEN", "REDIS_URL", "RATE_LIMIT_PLANS"}},
		{"production without Redis", base.with("SENSORGATE_ENV", "production", "INTERNAL_TOKEN", "t", "RATE_LIMIT_PLANS", "default=5/h"), []string{"serve"},
			[]string{"REDIS_URL"}},
		{"missing catalog file", base, []string{"catalog", "import", filepath.Join(t.TempDir(), "none.json")}, []string{"none.json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := admin(t, c.env, c.args...)
			if err == nil {
				t.Fatalf("gateway %v succeeded:\n%s", c.args, out)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error()+out, w) {
					t.Errorf("gateway %v: %q does not say %q", c.args, err.Error()+out, w)
				}
			}
		})
	}
	out, err := admin(t, base, "help")
	if err != nil || !strings.Contains(out, "keys revoke ID|PREFIX") {
		t.Errorf("help: %v\n%s", err, out)
	}
	out, err = admin(t, base, "serve", "-h")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out, "GATEWAY_ADDR") {
		t.Errorf("serve -h: %v\n%s", err, out)
	}
}

// TestVersion: `gateway version` and GET /version say what the binary was built from (the
// build information Go embeds; a test binary has no commit, so "unknown" is expected here).
func TestVersion(t *testing.T) {
	t.Parallel()
	out, err := admin(t, env{}, "version")
	if err != nil || !strings.HasPrefix(out, "gateway ") || !strings.Contains(out, " commit ") || !strings.Contains(out, "go1.") {
		t.Fatalf("gateway version: %v %q", err, out)
	}
	e := env{"SQLITE_PATH": filepath.Join(t.TempDir(), "gateway.db")}.with("SENSORGATE_ENV", "development", "SYNC_INTERVAL", "0",
		"LOG_LEVEL", "error", "SERVICE_URLS", "ocean=http://127.0.0.1:1")
	g := startGateway(t, e)
	r := g.get(t, "/version", "")
	var b struct {
		Version, Commit, GoVersion string `json:",omitempty"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &b) != nil || b.Version == "" || b.Commit == "" {
		t.Fatalf("/version: %d %s", r.status, r.body)
	}
	if !strings.Contains(out, b.Version) || !strings.Contains(out, b.Commit) {
		t.Errorf("/version %s and `gateway version` %q disagree", r.body, out)
	}
}
