package config_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/airquality"
	"github.com/sensorgate/sensorgate/services/ocean"
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/runtime/config"
	"github.com/sensorgate/sensorgate/services/weather"
)

func definitions() []app.Definition {
	return []app.Definition{ocean.Definition(), weather.Definition(), airquality.Definition()}
}

// run runs a built binary with env as its whole environment (plus PATH and HOME) and
// returns what it printed and its exit code.
func run(t *testing.T, bin string, env map[string]string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = t.TempDir() // a binary that started anyway would write ./data here, not in the repo
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// TestBinaries runs each built service binary: -h lists every setting of its table (flag
// beside variable) and exits 0 without showing a secret; -print-env prints exactly the
// table's variables; bad values fail the start, each named with its flag, secrets
// unquoted; a flag beats its variable.
func TestBinaries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, def := range definitions() {
		bin := testenv.Build(t, dir, def.ID, "github.com/sensorgate/sensorgate/services/cmd/"+def.ID)
		slugs := def.ProviderSlugs()
		apiKey := config.ProviderPrefix(slugs[0]) + config.SuffixAPIKey
		t.Run(def.ID, func(t *testing.T) {
			t.Parallel()
			secrets := map[string]string{"READINGS_DATABASE_URL": "postgres://u:pw-secret-1@h/db", "INTERNAL_TOKEN": "tok-secret-2",
				"REDIS_URL": "redis://:pw-secret-3@r:6379/0", apiKey: "key-secret-4"}
			help, code := run(t, bin, secrets, "-h")
			if code != 0 {
				t.Fatalf("-h exits %d:\n%s", code, help)
			}
			for _, v := range config.Vars(def.ID, def.DefaultPort, slugs) {
				want := v.Env
				if v.Flag != "" {
					want = "-" + v.Flag + ", " + v.Env
				}
				if !strings.Contains(help, want) {
					t.Errorf("-h does not list %q:\n%s", want, help)
				}
			}
			for _, s := range secrets {
				if strings.Contains(help, s) || strings.Contains(help, "secret-") {
					t.Errorf("-h shows a secret (%s):\n%s", s, help)
				}
			}

			out, code := run(t, bin, nil, "--print-env")
			if got := strings.Fields(out); code != 0 || !slices.Equal(got, def.EnvNames()) {
				t.Errorf("--print-env exits %d, prints %v, want %v", code, got, def.EnvNames())
			}

			bad := map[string]string{"SOURCE_MODE": "psychic", "SIM_STATIONS": "0", "RETENTION_DAYS": "30d",
				"READINGS_DATABASE_URL": "mysql://u:pw-secret-5@h/db", "LOG_LEVEL": "loud",
				config.ProviderPrefix(slugs[0]) + config.SuffixInterval: "1ms"}
			out, code = run(t, bin, bad, "-log-level", "debug")
			if code != 1 {
				t.Fatalf("bad values: exit %d:\n%s", code, out)
			}
			for name := range bad {
				v := varOf(def, name)
				if name == "LOG_LEVEL" {
					if strings.Contains(out, "LOG_LEVEL") {
						t.Errorf("-log-level debug did not win over LOG_LEVEL=loud:\n%s", out)
					}
					continue
				}
				if !strings.Contains(out, name+" (flag -"+v.Flag+"): want") {
					t.Errorf("the start error does not name %s and -%s:\n%s", name, v.Flag, out)
				}
			}
			if strings.Contains(out, "pw-secret") {
				t.Errorf("the start error shows a secret:\n%s", out)
			}
		})
	}
}

func varOf(def app.Definition, name string) (v struct{ Flag string }) {
	for _, x := range config.Vars(def.ID, def.DefaultPort, def.ProviderSlugs()) {
		if x.Env == name {
			v.Flag = x.Flag
		}
	}
	return v
}

// TestDocumented keeps docs/services.md's configuration table in step with every service's
// table: each variable and its flag appear there (a provider's generated rows as
// <P>_BASE_URL / -<p>-base-url, with the provider's prefix listed).
func TestDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "services.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, def := range definitions() {
		slugs := def.ProviderSlugs()
		for _, v := range config.Vars(def.ID, def.DefaultPort, slugs) {
			env, flag := v.Env, v.Flag
			for _, slug := range slugs {
				if p := config.ProviderPrefix(slug); strings.HasPrefix(env, p+"_") && slices.Contains(
					[]string{config.SuffixBaseURL, config.SuffixStations, config.SuffixAPIKey, config.SuffixInterval}, env[len(p):]) {
					if !strings.Contains(doc, "`"+p+"`") {
						t.Errorf("docs/services.md does not list the provider prefix %s", p)
					}
					env = "<P>" + env[len(p):]
					flag = "<p>" + flag[len(config.ProviderFlagPrefix(slug)):]
				}
			}
			if !strings.Contains(doc, "`"+env+"`") {
				t.Errorf("docs/services.md does not document %s (%s)", env, def.ID)
			}
			if flag != "" && !strings.Contains(doc, "`-"+flag+"`") {
				t.Errorf("docs/services.md does not document -%s (%s)", flag, def.ID)
			}
		}
	}
}
