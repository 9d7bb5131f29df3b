package checks

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	gwconfig "github.com/sensorgate/sensorgate/gateway/config"
)

// loadRepoCompose loads the compose files of variant (ComposeFiles) from the repository.
func loadRepoCompose(t *testing.T, variant string, env ...string) (*types.Project, string) {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range ComposeFiles[variant] {
		paths = append(paths, filepath.Join(root, f))
	}
	p, err := LoadCompose(context.Background(), env, paths...)
	if err != nil {
		t.Fatal(err)
	}
	return p, root
}

// forEachCompose runs check on the compose file alone and with its local override: the
// stack must be the same on both roads.
func forEachCompose(t *testing.T, check func(t *testing.T, variant string)) {
	for variant := range ComposeFiles {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			check(t, variant)
		})
	}
}

func composeEnv(s types.ServiceConfig) map[string]string {
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	return env
}

// TestComposeBinaries: every binary is a compose service whose environment sets every
// variable it reads, that its own configuration loader accepts, listening on its port on
// every interface, with a healthcheck on a probe path of that port.
func TestComposeBinaries(t *testing.T) {
	t.Parallel()
	forEachCompose(t, testComposeBinaries)
}

func testComposeBinaries(t *testing.T, variant string) {
	p, _ := loadRepoCompose(t, variant)
	for _, b := range Binaries() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			s, ok := p.Services[b.Name]
			if !ok {
				t.Fatalf("docker-compose.yml has no service %q", b.Name)
			}
			env := composeEnv(s)
			if m := missingEnv(b, env); len(m) > 0 {
				t.Errorf("%s: environment does not set %v (set them, or list them in optional with a reason)", b.Name, m)
			}
			port, err := loadConfig(b, env)
			if err != nil {
				t.Fatalf("%s: the binary would refuse this environment: %v", b.Name, err)
			}
			if port != b.Port {
				t.Errorf("%s listens on %d, want %d", b.Name, port, b.Port)
			}
			if s.HealthCheck == nil || len(s.HealthCheck.Test) < 3 || s.HealthCheck.Test[0] != "CMD" || s.HealthCheck.Test[1] != "/probe" {
				t.Fatalf("%s: want healthcheck [CMD /probe URL], got %v", b.Name, s.HealthCheck)
			}
			u, err := url.Parse(s.HealthCheck.Test[2])
			if err != nil || u.Port() != strconv.Itoa(port) || !slices.Contains([]string{"/healthz", "/readyz"}, u.Path) {
				t.Errorf("%s: healthcheck URL %q must be /healthz or /readyz on port %d", b.Name, s.HealthCheck.Test[2], port)
			}
			// Hardening: read-only root, no capabilities, non-root user.
			if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") || s.User == "" || strings.HasPrefix(s.User, "0") || s.User == "root" {
				t.Errorf("%s: want read_only, cap_drop [ALL] and a non-root user; got read_only=%v cap_drop=%v user=%q", b.Name, s.ReadOnly, s.CapDrop, s.User)
			}
			if s.Build == nil || s.Build.Args["BINARY"] == nil || *s.Build.Args["BINARY"] != b.Name || s.Build.Args["PORT"] == nil || *s.Build.Args["PORT"] != strconv.Itoa(b.Port) {
				t.Errorf("%s: build args must be BINARY=%s PORT=%d, got %v", b.Name, b.Name, b.Port, s.Build)
			}
			wantPublished := b.Gateway
			if got := len(s.Ports) > 0; got != wantPublished {
				t.Errorf("%s: published ports %v; only the gateway publishes one", b.Name, s.Ports)
			}
		})
	}
}

// TestComposeWiring: the gateway reaches each service by its compose name and listen
// port, the databases and Redis by theirs, with the same internal token, and starts only
// after the migration and its dependencies are healthy.
func TestComposeWiring(t *testing.T) {
	t.Parallel()
	forEachCompose(t, testComposeWiring)
}

func testComposeWiring(t *testing.T, variant string) {
	p, root := loadRepoCompose(t, variant)
	gw := composeEnv(p.Services["gateway"])

	svcs, err := gwconfig.ParseServices(gw["SERVICE_URLS"])
	if err != nil {
		t.Fatalf("gateway SERVICE_URLS: %v", err)
	}
	var ids []string
	for _, s := range svcs {
		ids = append(ids, s.ID)
		u, err := url.Parse(s.URL)
		if err != nil {
			t.Fatalf("SERVICE_URLS %s: %v", s.ID, err)
		}
		target, ok := p.Services[u.Hostname()]
		if !ok {
			t.Errorf("SERVICE_URLS %s=%s: no compose service %q", s.ID, s.URL, u.Hostname())
			continue
		}
		_, port, _ := net.SplitHostPort(composeEnv(target)["SERVICE_ADDR"])
		if u.Port() != port {
			t.Errorf("SERVICE_URLS %s=%s: %s listens on port %s", s.ID, s.URL, u.Hostname(), port)
		}
		if tok := composeEnv(target)["INTERNAL_TOKEN"]; tok != gw["INTERNAL_TOKEN"] {
			t.Errorf("%s: INTERNAL_TOKEN differs from the gateway's", u.Hostname())
		}
		if !sharesNetwork(p.Services["gateway"], target) {
			t.Errorf("gateway and %s share no network", u.Hostname())
		}
	}
	for _, b := range Binaries()[1:] {
		if !slices.Contains(ids, b.Name) {
			t.Errorf("SERVICE_URLS lacks service %s", b.Name)
		}
	}

	// Databases: the gateway's and migrate's catalog are the same; each service has its own
	// readings database, created by the init script on the postgres volume.
	initSQL, err := os.ReadFile(filepath.Join(root, "deploy/docker/postgres/initdb.sql"))
	if err != nil {
		t.Fatal(err)
	}
	created := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?i)CREATE DATABASE (\w+)`).FindAllStringSubmatch(string(initSQL), -1) {
		created[m[1]] = true
	}
	if db := p.Services["postgres"].Environment["POSTGRES_DB"]; db != nil {
		created[*db] = true
	}
	checkURL := func(who, raw, host string) string {
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() != host {
			t.Errorf("%s: URL %q must point at the compose service %s", who, raw, host)
			return ""
		}
		if _, ok := p.Services[host]; !ok {
			t.Errorf("%s: no compose service %s", who, host)
		}
		return strings.TrimPrefix(u.Path, "/")
	}
	catalog := checkURL("gateway DATABASE_URL", gw["DATABASE_URL"], "postgres")
	if m := checkURL("migrate DATABASE_URL", composeEnv(p.Services["migrate"])["DATABASE_URL"], "postgres"); m != catalog {
		t.Errorf("migrate migrates database %q, the gateway uses %q", m, catalog)
	}
	checkURL("gateway REDIS_URL", gw["REDIS_URL"], "redis")
	seen := map[string]string{catalog: "gateway"}
	for _, b := range Binaries()[1:] {
		db := checkURL(b.Name+" READINGS_DATABASE_URL", composeEnv(p.Services[b.Name])["READINGS_DATABASE_URL"], "postgres")
		if !created[db] {
			t.Errorf("%s: readings database %q is not created by initdb.sql or POSTGRES_DB", b.Name, db)
		}
		if other, dup := seen[db]; dup {
			t.Errorf("%s and %s share database %q", b.Name, other, db)
		}
		seen[db] = b.Name
	}

	// Start order: depends_on conditions that compose can meet.
	want := map[string]map[string]string{
		"migrate": {"postgres": types.ServiceConditionHealthy},
		"gateway": {"migrate": types.ServiceConditionCompletedSuccessfully, "redis": types.ServiceConditionHealthy,
			"ocean": types.ServiceConditionHealthy, "weather": types.ServiceConditionHealthy, "airquality": types.ServiceConditionHealthy},
		"ocean":      {"postgres": types.ServiceConditionHealthy},
		"weather":    {"postgres": types.ServiceConditionHealthy},
		"airquality": {"postgres": types.ServiceConditionHealthy},
	}
	for name, deps := range want {
		for dep, cond := range deps {
			if got := p.Services[name].DependsOn[dep].Condition; got != cond {
				t.Errorf("%s depends_on %s: condition %q, want %q", name, dep, got, cond)
			}
		}
	}
	for name, s := range p.Services {
		for dep, d := range s.DependsOn {
			if d.Condition == types.ServiceConditionHealthy && (p.Services[dep].HealthCheck == nil || p.Services[dep].HealthCheck.Disable) {
				t.Errorf("%s waits for %s to be healthy, but %s has no healthcheck", name, dep, dep)
			}
		}
	}
	if c := p.Services["migrate"].Command; len(c) != 1 || c[0] != "migrate" {
		t.Errorf("migrate command = %v, want [migrate]", c)
	}
	if p.Services["migrate"].Restart != "no" {
		t.Errorf("migrate restart = %q, want no (it runs once)", p.Services["migrate"].Restart)
	}
}

// TestComposeInfrastructure: PostgreSQL and Redis keep their data in named volumes, have
// healthchecks, and are not published; only one host port is published at all.
func TestComposeInfrastructure(t *testing.T) {
	t.Parallel()
	forEachCompose(t, testComposeInfrastructure)
}

func testComposeInfrastructure(t *testing.T, variant string) {
	p, _ := loadRepoCompose(t, variant)
	for name, dataDir := range map[string]string{"postgres": "/var/lib/postgresql/data", "redis": "/data"} {
		s, ok := p.Services[name]
		if !ok {
			t.Fatalf("no %s service", name)
		}
		if s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 {
			t.Errorf("%s has no healthcheck", name)
		}
		if len(s.Ports) > 0 {
			t.Errorf("%s publishes %v", name, s.Ports)
		}
		found := false
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeVolume && v.Target == dataDir {
				if _, ok := p.Volumes[v.Source]; !ok {
					t.Errorf("%s: volume %q is not declared", name, v.Source)
				}
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no named volume at %s", name, dataDir)
		}
	}
	// The gateway's port is public; Prometheus's is published on loopback only.
	var published []string
	for name, s := range p.Services {
		for _, port := range s.Ports {
			if name == "prometheus" && port.HostIP == "127.0.0.1" {
				continue
			}
			published = append(published, name+":"+port.Published)
		}
	}
	if len(published) != 1 || !strings.HasPrefix(published[0], "gateway:") {
		t.Errorf("published ports %v, want only the gateway's (and Prometheus on 127.0.0.1)", published)
	}
	// Every long-running container has a health check (up --wait waits on them); the
	// one-shot migration is waited on by service_completed_successfully instead.
	for name, s := range p.Services {
		if s.Restart == "no" {
			continue
		}
		if s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 || s.HealthCheck.Disable {
			t.Errorf("%s has no health check", name)
		}
	}
	if gp := p.Services["gateway"].Ports; len(gp) == 1 && gp[0].Target != uint32(Binaries()[0].Port) {
		t.Errorf("gateway publishes container port %d, it listens on %d", gp[0].Target, Binaries()[0].Port)
	}
}

// TestComposeInterpolation: passwords come from the environment when set.
func TestComposeInterpolation(t *testing.T) {
	t.Parallel()
	forEachCompose(t, testComposeInterpolation)
}

func testComposeInterpolation(t *testing.T, variant string) {
	p, _ := loadRepoCompose(t, variant, "POSTGRES_PASSWORD=s3cret-from-env", "INTERNAL_TOKEN=tok-from-env", "GATEWAY_PORT=9999")
	if got := *p.Services["postgres"].Environment["POSTGRES_PASSWORD"]; got != "s3cret-from-env" {
		t.Errorf("POSTGRES_PASSWORD = %q", got)
	}
	for _, name := range []string{"gateway", "ocean", "weather", "airquality"} {
		env := composeEnv(p.Services[name])
		if env["INTERNAL_TOKEN"] != "tok-from-env" {
			t.Errorf("%s INTERNAL_TOKEN = %q", name, env["INTERNAL_TOKEN"])
		}
		for _, k := range []string{"DATABASE_URL", "READINGS_DATABASE_URL"} {
			if v := env[k]; v != "" && !strings.Contains(v, ":s3cret-from-env@") {
				t.Errorf("%s %s does not use POSTGRES_PASSWORD: %q", name, k, v)
			}
		}
	}
	if got := p.Services["gateway"].Ports[0].Published; got != "9999" {
		t.Errorf("GATEWAY_PORT=9999 published %q", got)
	}
}

func sharesNetwork(a, b types.ServiceConfig) bool {
	for n := range a.Networks {
		if _, ok := b.Networks[n]; ok {
			return true
		}
	}
	return false
}
