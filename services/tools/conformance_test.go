package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// ConformanceVersion pins the official MCP conformance suite. 0.1.13 is the newest release
// that runs on Node 20 (0.1.14 and later need Node 22 for fs.globSync).
const ConformanceVersion = "0.1.13"

// conformanceScenarios are the suite's server scenarios that apply to a backing service,
// run against the ocean service; the others run the per-service ones (scenarioPerService),
// since lifecycle, ping, logging and Host checks are the shared mcpserver scaffold.
// The others test fixture tools, resources, prompts and features the suite expects a
// dedicated "everything" server to have (tools-call-* call tools named test_*,
// json-schema-2020-12 looks for json_schema_2020_12_tool, resources-*, prompts-*,
// completion-complete, elicitation-*, server-sse-* need server-initiated streams that a
// stateless JSON endpoint does not offer).
var conformanceScenarios = []string{
	"server-initialize",
	"ping",
	"tools-list",
	"logging-set-level",
	"dns-rebinding-protection",
}

// scenarioPerService are the scenarios whose answer depends on the service's own tools.
var scenarioPerService = []string{"server-initialize", "tools-list"}

// TestConformance builds each service binary, starts it on a free loopback port (simulate
// mode, SQLite) and runs the official conformance suite's applicable server scenarios
// against its /mcp. It skips, saying why, when npx is missing or the npm registry cannot
// be reached.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("conformance suite skipped in -short mode (it downloads @modelcontextprotocol/conformance with npx)")
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not installed: install Node.js 20+ to run the MCP conformance suite")
	}
	pkg := "@modelcontextprotocol/conformance@" + ConformanceVersion
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if out, err := npxCommand(ctx, npx, pkg, "list", "--server").CombinedOutput(); err != nil || !strings.Contains(string(out), "server-initialize") {
		t.Skipf("cannot run %s via npx (offline or registry unavailable?): %v\n%s", pkg, err, tail(string(out), 1500))
	}

	bin := t.TempDir()
	for _, id := range []string{"ocean", "weather", "airquality"} {
		build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, id), "github.com/sensorgate/sensorgate/services/cmd/"+id)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", id, err, out)
		}
	}
	for _, id := range []string{"ocean", "weather", "airquality"} {
		t.Run(id, func(t *testing.T) {
			url := startBinary(t, filepath.Join(bin, id), id) + contract.PathMCP
			scenarios := conformanceScenarios
			if id != "ocean" {
				scenarios = scenarioPerService
			}
			for _, sc := range scenarios {
				t.Run(sc, func(t *testing.T) {
					outDir := t.TempDir()
					sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					out, err := npxCommand(sctx, npx, pkg, "server", "--url", url, "--scenario", sc, "-o", outDir).CombinedOutput()
					checks := readChecks(t, outDir)
					if len(checks) == 0 {
						t.Fatalf("scenario %s wrote no checks (exit %v):\n%s", sc, err, tail(string(out), 3000))
					}
					passed := 0
					for _, c := range checks {
						switch c.Status {
						case "SUCCESS":
							passed++
						case "FAILURE":
							t.Errorf("%s / %s: %s: %s %s", sc, c.ID, c.Description, c.ErrorMessage, c.Details)
						case "WARNING":
							t.Logf("%s / %s warning: %s", sc, c.ID, c.ErrorMessage)
						}
					}
					if passed == 0 {
						t.Errorf("scenario %s passed no check:\n%s", sc, tail(string(out), 3000))
					}
					if err != nil && !t.Failed() {
						t.Errorf("conformance exited with %v:\n%s", err, tail(string(out), 3000))
					}
				})
			}
		})
	}
}

func npxCommand(ctx context.Context, npx, pkg string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, npx, append([]string{"-y", pkg}, args...)...)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false", "npm_config_fund=false", "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// check is one entry of the suite's checks.json.
type check struct {
	ID           string          `json:"id"`
	Description  string          `json:"description"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

func readChecks(t *testing.T, dir string) []check {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if err != nil {
		t.Fatal(err)
	}
	var all []check
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cs []check
		if err := json.Unmarshal(b, &cs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all = append(all, cs...)
	}
	return all
}

// startBinary runs a service binary as a separate process on a free loopback port and
// waits for /readyz; the process is interrupted (graceful shutdown) when the test ends, and
// must stop within 20 s of it.
func startBinary(t *testing.T, path, id string) string {
	t.Helper()
	addr := testenv.FreeAddr(t)
	p := testenv.StartProcess(t, testenv.Command{Name: id, Path: path, Stop: os.Interrupt, StopWithin: 20 * time.Second, MustStop: true,
		Env: []string{"SERVICE_ADDR=" + addr, "READINGS_SQLITE_PATH=" + filepath.Join(t.TempDir(), id+".db"),
			"READINGS_DATABASE_URL=", "SOURCE_MODE=simulate", "SIM_STATIONS=3", "SIM_DAYS=1", "LOG_LEVEL=warn", "INTERNAL_TOKEN="}})
	base := "http://" + addr
	p.WaitReady(t, base+contract.PathReadyz, 90*time.Second)
	return base
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("...%s", s[len(s)-n:])
}
