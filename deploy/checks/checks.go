// Package checks loads sensorgate's deployment files the way their tools do (compose-go
// for docker-compose.yml, kustomize for deploy/k8s) and holds what the tests compare them
// with: the binaries, their ports and the environment variables each one reads. The tests
// need no container engine and no cluster; they catch the mistakes that would otherwise
// surface only at `docker compose up` or `kubectl apply` time.
package checks

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	gwconfig "github.com/sensorgate/sensorgate/gateway/config"
	"github.com/sensorgate/sensorgate/services/airquality"
	"github.com/sensorgate/sensorgate/services/ocean"
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/weather"
)

// Binary is one sensorgate binary as the deployment files must run it.
type Binary struct {
	Name string // compose service, Deployment and Service name; the service id
	Port int    // the port it serves on (default port of the binary)
	// Gateway is true for the gateway, false for a backing service.
	Gateway bool
	// Env lists every environment variable the binary reads.
	Env []string
	// Def is the service definition (backing services only).
	Def app.Definition
}

// Binaries lists the four binaries: the gateway and the backing services, with their
// environment variables taken from the binaries' own listing functions, so a variable added
// to a binary shows up here without a change to this package.
func Binaries() []Binary {
	_, gwPort, _ := net.SplitHostPort(gwconfig.DefaultAddr)
	port, _ := strconv.Atoi(gwPort)
	out := []Binary{{Name: "gateway", Port: port, Gateway: true, Env: gwconfig.EnvVars()}}
	for _, d := range []app.Definition{ocean.Definition(), weather.Definition(), airquality.Definition()} {
		out = append(out, Binary{Name: d.ID, Port: d.DefaultPort, Env: d.EnvNames(), Def: d})
	}
	return out
}

// RepoRoot finds the repository root (the folder holding go.work) from the working
// directory up.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.work above the working directory")
		}
		dir = parent
	}
}

// ComposeFiles are the compose file alone (official infrastructure images, any Docker host)
// and with its override for hosts without a registry (images made with debootstrap), as
// `docker compose -f ... -f ...` takes them, relative to the repository root.
var ComposeFiles = map[string][]string{
	"official": {"docker-compose.yml"},
	"local":    {"docker-compose.yml", "docker-compose.local.yml"},
}

// LoadCompose loads compose files (later ones override earlier ones) with the compose-spec
// loader exactly as `docker compose config` does (schema validation, interpolation,
// normalization, consistency checks), with env as the only environment, so the files' own
// defaults are what is checked.
func LoadCompose(ctx context.Context, env []string, paths ...string) (*types.Project, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("load compose: no file given")
	}
	path := strings.Join(paths, " + ")
	opts, err := cli.NewProjectOptions(paths,
		cli.WithWorkingDirectory(filepath.Dir(paths[0])),
		cli.WithEnv(env),
		cli.WithInterpolation(true),
		cli.WithNormalization(true),
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		return nil, fmt.Errorf("compose options for %s: %w", path, err)
	}
	p, err := opts.LoadProject(ctx)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return p, nil
}

// BuildKustomization runs `kustomize build dir` in process.
func BuildKustomization(dir string) (resmap.ResMap, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return m, nil
}
