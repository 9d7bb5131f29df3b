package checks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
)

// infraImages are the infrastructure services and the official image each pulls, pinned by
// version (major.minor.patch) so that a stack comes up the same next year.
var infraImages = map[string]*regexp.Regexp{
	"postgres":   regexp.MustCompile(`^postgres:\d+\.\d+(\.\d+)?-bookworm$`),
	"redis":      regexp.MustCompile(`^redis:\d+\.\d+\.\d+-bookworm$`),
	"prometheus": regexp.MustCompile(`^prom/prometheus:v\d+\.\d+\.\d+$`),
}

// TestComposeImages: docker-compose.yml alone pulls the official PostgreSQL, Redis and
// Prometheus images pinned by version and builds only the project's own images, so
// `docker compose up` works on any Docker host that can pull; its local override builds all
// of them without a registry, from directories that hold a Dockerfile.
func TestComposeImages(t *testing.T) {
	t.Parallel()
	official, root := loadRepoCompose(t, "official")
	local, _ := loadRepoCompose(t, "local")
	for name, s := range official.Services {
		if want, infra := infraImages[name]; infra {
			if !want.MatchString(s.Image) || s.Build != nil {
				t.Errorf("%s: image %q build %v; want the official image pinned by version (%s) and no build", name, s.Image, s.Build, want)
			}
			l := local.Services[name]
			if l.Build == nil || !strings.HasPrefix(l.Image, "sensorgate/") {
				t.Errorf("local %s: image %q build %v; want a sensorgate/ image built here", name, l.Image, l.Build)
			} else if _, err := os.Stat(filepath.Join(l.Build.Context, "Dockerfile")); err != nil {
				t.Errorf("local %s: build context %s: %v", name, l.Build.Context, err)
			}
			continue
		}
		if s.Build == nil || !strings.HasPrefix(s.Image, "sensorgate/") {
			t.Errorf("%s: image %q build %v; the project's own images are built (sensorgate/...)", name, s.Image, s.Build)
		} else if _, err := os.Stat(filepath.Join(root, "deploy/docker/Dockerfile")); err != nil {
			t.Error(err)
		}
	}
	for name := range infraImages {
		if _, ok := official.Services[name]; !ok {
			t.Errorf("docker-compose.yml has no %s service", name)
		}
	}
}

// TestComposeLocalOverride: the override changes how the infrastructure images are made and
// the one health check that depends on the image's tools, nothing else: both roads run the
// same stack.
func TestComposeLocalOverride(t *testing.T) {
	t.Parallel()
	official, _ := loadRepoCompose(t, "official")
	local, _ := loadRepoCompose(t, "local")
	strip := func(p *types.Project) *types.Project {
		for name := range infraImages {
			s := p.Services[name]
			s.Image, s.Build = "", nil
			if name == "prometheus" {
				s.HealthCheck.Test = nil
			}
			p.Services[name] = s
		}
		return p
	}
	a, err := strip(official).MarshalYAML()
	if err != nil {
		t.Fatal(err)
	}
	b, err := strip(local).MarshalYAML()
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("the local override changes more than the infrastructure images:\n--- docker-compose.yml\n%s\n--- with docker-compose.local.yml\n%s", a, b)
	}
}

// composeCLI finds a Compose v2 CLI: $COMPOSE (make compose-test sets it), the docker
// plugin, or the binary `make compose-cli` built into the cache.
func composeCLI() []string {
	if c := strings.Fields(os.Getenv("COMPOSE")); len(c) > 0 {
		return c
	}
	if out, err := exec.Command("docker", "compose", "version", "--short").Output(); err == nil && !strings.HasPrefix(strings.TrimSpace(string(out)), "1.") {
		return []string{"docker", "compose"}
	}
	cache := os.Getenv("SENSORGATE_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache/sensorgate")
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "bin/docker-compose-v2*")); len(m) > 0 {
		return m[len(m)-1:]
	}
	return nil
}

// TestComposeConfigCLI: `docker compose config` itself accepts the file alone and with its
// override (the loader tests above use its library; this is the CLI). It needs a Compose v2
// CLI, no engine.
func TestComposeConfigCLI(t *testing.T) {
	t.Parallel()
	cli := composeCLI()
	if cli == nil {
		t.Skip("no Compose v2 CLI: `make compose-cli` builds one (make compose-test runs this check too)")
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for variant, files := range ComposeFiles {
		args := append([]string{}, cli[1:]...)
		for _, f := range files {
			args = append(args, "-f", filepath.Join(root, f))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, cli[0], append(args, "config", "--images")...)
		cmd.Dir, cmd.Env = root, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("%s: compose config: %v\n%s", variant, err, out)
			continue
		}
		images := strings.Fields(string(out))
		for name, want := range infraImages {
			if official := slices.ContainsFunc(images, want.MatchString); (variant == "official") != official {
				t.Errorf("%s: compose config --images lists %v; official %s image: %v", variant, images, name, official)
			}
		}
	}
}
