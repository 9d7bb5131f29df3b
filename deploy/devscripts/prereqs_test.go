package devscripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/deploy/checks"
)

// prereqsMachine is a made-up machine for scripts/prereqs.sh: a PATH of stubs holding only
// the tools it is given (plus the few the script itself runs), a uid, and an apt-get that
// records what it was asked to install.
type prereqsMachine struct {
	uid     string
	has     []string // commands present: redis-server, node, npm, jq, initdb (PostgreSQL)
	browser bool     // chromium at CHROMIUM_PATH
	pgLib   bool     // initdb under SENSORGATE_PG_LIB/<version>/bin, as Debian installs it
	python  string   // modules python3 can import; "" without python3
	env     []string // more of the environment: TEST_DATABASE_URL, TEST_REDIS_URL
}

func stub(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// run runs the script on the machine and returns its exit code, its output and the
// arguments apt-get was called with (one call a line).
func (m prereqsMachine) run(t *testing.T) (code int, out, apt string) {
	t.Helper()
	root, err := checks.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// What the script needs to run at all.
	for _, tool := range []string{"bash", "ls", "sort", "tail", "grep", "mkdir"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	aptLog := filepath.Join(dir, "apt.log")
	stub(t, filepath.Join(bin, "id"), "echo "+m.uid)
	stub(t, filepath.Join(bin, "apt-get"), `echo "$*" >> `+aptLog)
	for _, c := range m.has {
		stub(t, filepath.Join(bin, c), "exit 0")
	}
	python := filepath.Join(dir, "python3")
	if m.python != "" {
		// python3 -c 'import X' succeeds for the modules it has.
		stub(t, python, `for mod in `+m.python+`; do [ "$2" = "import $mod" ] && exit 0; done; exit 1`)
	}
	if m.pgLib {
		if err := os.MkdirAll(filepath.Join(dir, "pglib/15/bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		stub(t, filepath.Join(dir, "pglib/15/bin/initdb"), "exit 0")
	}
	chromium := filepath.Join(dir, "chromium")
	if m.browser {
		stub(t, chromium, "exit 0")
	}
	cmd := exec.Command(filepath.Join(root, "scripts/prereqs.sh"))
	cmd.Env = append([]string{"PATH=" + bin, "HOME=" + dir, "CHROMIUM_PATH=" + chromium, "PYTHON3=" + python, "SENSORGATE_PG_LIB=" + filepath.Join(dir, "pglib")}, m.env...)
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(aptLog)
	return code, string(b), string(a)
}

// TestPrereqs: the script's decisions. Not root and something missing: it stops at once,
// non-zero, naming the one command with exactly what is missing, and installs nothing. Root:
// apt-get installs exactly what is missing. Nothing missing: silent, nothing installed.
func TestPrereqs(t *testing.T) {
	t.Parallel()
	// The science formats' and the OGC tests' readers (netcdf-bin, gdal-bin and their
	// Python modules) are present on every machine but the fresh ones.
	readers := []string{"ncdump", "ogrinfo"}
	const modules = " netCDF4 xarray owslib.ogcapi.features"
	with := func(tools ...string) []string { return append(tools, readers...) }
	all := with("initdb", "redis-server", "node", "npm", "jq")
	cases := []struct {
		name     string
		m        prereqsMachine
		wantCode int
		wantCmd  string // in the output
		wantApt  string // apt-get's calls
	}{
		{name: "fresh machine, not root",
			m:        prereqsMachine{uid: "1000"},
			wantCode: 1, wantCmd: "sudo apt-get install -y postgresql redis-server nodejs npm chromium jq python3-pandas python3-matplotlib netcdf-bin python3-netcdf4 python3-xarray gdal-bin python3-owslib\n"},
		{name: "only redis missing, not root",
			m:        prereqsMachine{uid: "1000", has: with("initdb", "node", "npm", "jq"), browser: true, python: "pandas matplotlib" + modules},
			wantCode: 1, wantCmd: "sudo apt-get install -y redis-server\n"},
		{name: "browser and matplotlib missing, not root",
			m:        prereqsMachine{uid: "1000", has: all, python: "pandas" + modules},
			wantCode: 1, wantCmd: "sudo apt-get install -y chromium python3-matplotlib\n"},
		{name: "fresh machine, root",
			m:       prereqsMachine{uid: "0"},
			wantApt: "update -qq\ninstall -y -qq postgresql redis-server nodejs npm chromium jq python3-pandas python3-matplotlib netcdf-bin python3-netcdf4 python3-xarray gdal-bin python3-owslib\n"},
		{name: "node missing, root",
			m:       prereqsMachine{uid: "0", has: with("initdb", "redis-server", "npm", "jq"), browser: true, python: "pandas matplotlib" + modules},
			wantApt: "update -qq\ninstall -y -qq nodejs\n"},
		{name: "servers elsewhere, not root",
			m: prereqsMachine{uid: "1000", has: with("node", "npm", "jq"), browser: true, python: "pandas matplotlib" + modules,
				env: []string{"TEST_DATABASE_URL=postgres://db.example/x", "TEST_REDIS_URL=redis://cache.example:6379/0"}}},
		{name: "PostgreSQL from Debian's directory, not root",
			m:        prereqsMachine{uid: "1000", has: with("node", "npm", "jq"), browser: true, python: "pandas matplotlib" + modules, pgLib: true},
			wantCode: 1, wantCmd: "sudo apt-get install -y redis-server\n"},
		{name: "nothing missing, not root",
			m: prereqsMachine{uid: "1000", has: all, browser: true, python: "pandas matplotlib" + modules}},
		{name: "nothing missing, root",
			m: prereqsMachine{uid: "0", has: all, browser: true, python: "pandas matplotlib" + modules}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, out, apt := c.m.run(t)
			if code != c.wantCode {
				t.Errorf("exit code %d, want %d; output:\n%s", code, c.wantCode, out)
			}
			if c.wantCmd != "" && !strings.Contains(out, c.wantCmd) {
				t.Errorf("output does not name %q:\n%s", c.wantCmd, out)
			}
			if c.wantCode == 0 && c.wantApt == "" && out != "" {
				t.Errorf("nothing missing, but the script said:\n%s", out)
			}
			if apt != c.wantApt {
				t.Errorf("apt-get calls:\n%s\nwant:\n%s", apt, c.wantApt)
			}
		})
	}
}
