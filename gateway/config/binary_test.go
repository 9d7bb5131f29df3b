package config_test

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/gateway/config"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// TestBinary runs the built gateway: -h lists every setting of the table (flag beside
// variable) and exits 0 without showing a secret; -print-env prints exactly EnvVars();
// bad values fail the start, each named with its flag; a flag beats its variable.
func TestBinary(t *testing.T) {
	t.Parallel()
	bin := testenv.Build(t, t.TempDir(), "gateway", "github.com/sensorgate/sensorgate/gateway/cmd/gateway")
	run := func(env map[string]string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("gateway %v: %v", args, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}

	secrets := map[string]string{"DATABASE_URL": "postgres://u:pw-secret-1@h/db", "INTERNAL_TOKEN": "tok-secret-2",
		"REDIS_URL": "redis://:pw-secret-3@r:6379/0", "DEV_API_KEY": "sg_dev_secret-4-0123456789"}
	for _, args := range [][]string{{"-h"}, {"serve", "--help"}, {"keys", "create", "-h"}} {
		help, code := run(secrets, args...)
		if code != 0 {
			t.Fatalf("gateway %v exits %d:\n%s", args, code, help)
		}
		for _, v := range config.Vars() {
			want := v.Env
			if v.Flag != "" && (args[0] != "keys" || v.Flag != "env") { // keys create has its own -env
				want = "-" + v.Flag + ", " + v.Env
			}
			if !strings.Contains(help, want) {
				t.Errorf("gateway %v does not list %q:\n%s", args, want, help)
			}
		}
		if strings.Contains(help, "secret-") || strings.Contains(help, config.DefaultDevAPIKey) {
			t.Errorf("gateway %v shows a secret:\n%s", args, help)
		}
	}

	out, code := run(nil, "-print-env")
	if got := strings.Fields(out); code != 0 || !slices.Equal(got, config.EnvVars()) {
		t.Errorf("-print-env exits %d, prints %v, want %v", code, got, config.EnvVars())
	}

	bad := map[string]string{"SENSORGATE_ENV": "staging", "KEY_CACHE_TTL": "2h", "SERVICE_URLS": "ocean=ftp://x",
		"DATABASE_URL": "mysql://u:pw-secret-5@h/db", "STREAM_BUFFER": "0", "LOG_LEVEL": "loud"}
	out, code = run(bad, "-log-level", "warn")
	if code != 1 {
		t.Fatalf("bad values: exit %d:\n%s", code, out)
	}
	for name := range bad {
		if name == "LOG_LEVEL" {
			if strings.Contains(out, name) {
				t.Errorf("-log-level warn did not win over LOG_LEVEL=loud:\n%s", out)
			}
			continue
		}
		if v := varByName(name); !strings.Contains(out, name+" (flag -"+v.Flag+"): ") {
			t.Errorf("the start error does not name %s and -%s:\n%s", name, v.Flag, out)
		}
	}
	if strings.Contains(out, "pw-secret") {
		t.Errorf("the start error shows a secret:\n%s", out)
	}
}

func varByName(name string) (v struct{ Flag string }) {
	for _, x := range config.Vars() {
		if x.Env == name {
			v.Flag = x.Flag
		}
	}
	return v
}
