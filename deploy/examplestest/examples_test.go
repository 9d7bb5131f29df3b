package examplestest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/deploy/checks"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// devKey is the development key the examples use by default (`make run`'s).
const devKey = "sg_dev_4f7b1d2c9a8e6b3f0d5c7a9e1b2d4f6a"

var bins = testenv.StackBinaries()

func TestMain(m *testing.M) { bins.Main(m) }

// startStack starts the three services on SQLite with simulated providers (ocean with 8
// days of history for the week's chart, weather with enough stations that new readings
// reach a stream every minute) and a development gateway, and returns the gateway's URL
// once its catalog holds buoys.
func startStack(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sims := map[string][]string{
		"ocean":      {"SIM_STATIONS=4", "SIM_DAYS=8"},
		"weather":    {"SIM_STATIONS=300", "SIM_DAYS=0"},
		"airquality": {"SIM_STATIONS=2", "SIM_DAYS=1"},
	}
	var urls []string
	var procs []*testenv.Process
	for _, id := range []string{"ocean", "weather", "airquality"} {
		addr := testenv.FreeAddr(t)
		env := append([]string{"SERVICE_ADDR=" + addr, "READINGS_SQLITE_PATH=" + filepath.Join(dir, id+".db"),
			"SOURCE_MODE=simulate", "SIM_SEED=1", "LOG_LEVEL=warn"}, sims[id]...)
		procs = append(procs, testenv.StartProcess(t, testenv.Command{Path: bins.Path(t, id), Env: env, Stop: os.Interrupt}))
		urls = append(urls, id+"=http://"+addr)
	}
	for i, p := range procs {
		p.WaitReady(t, strings.SplitN(urls[i], "=", 2)[1]+"/readyz", 120*time.Second)
	}
	addr := testenv.FreeAddr(t)
	gw := testenv.StartProcess(t, testenv.Command{Path: bins.Path(t, "gateway"), Args: []string{"serve"}, Stop: os.Interrupt,
		Env: []string{"GATEWAY_ADDR=" + addr, "SENSORGATE_ENV=development", "DEV_API_KEY=" + devKey,
			"SQLITE_PATH=" + filepath.Join(dir, "gateway.db"), "SERVICE_URLS=" + strings.Join(urls, ","),
			"SYNC_INTERVAL=1s", "LOG_LEVEL=warn"}})
	url := "http://" + addr
	gw.WaitReady(t, url+"/healthz", 60*time.Second)
	testenv.WaitFor(t, "a catalog with buoys", url+"/api/v1/sensors?sensor_type=buoy&limit=1", http.Header{"X-Api-Key": {devKey}},
		60*time.Second, func(status int, body []byte) bool {
			var page struct{ Sensors []json.RawMessage }
			return status == http.StatusOK && json.Unmarshal(body, &page) == nil && len(page.Sensors) > 0
		})
	return url
}

// run runs an example with the stack's address in its environment and returns its output;
// a non-zero exit fails the test with the output.
func run(t *testing.T, dir string, timeout time.Duration, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v (timeout %s)\n%s", name, strings.Join(args, " "), err, timeout, out.String())
	}
	return out.String()
}

func need(t *testing.T, tool, install string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		t.Fatalf("%s is missing: %s (make test's scripts/prereqs.sh installs it)", tool, install)
	}
	return p
}

// TestExamples runs every example against one stack, side by side.
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a stack")
	}
	root, err := checks.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	url := startStack(t)
	env := []string{"SENSORGATE_URL=" + url, "SENSORGATE_KEY=" + devKey}

	t.Run("python", func(t *testing.T) {
		t.Parallel()
		// Debian's interpreter: python3-pandas and python3-matplotlib install for it.
		python := "/usr/bin/python3"
		if _, err := os.Stat(python); err != nil {
			python = need(t, "python3", "apt-get install python3-pandas python3-matplotlib")
		}
		png := filepath.Join(t.TempDir(), "week.png")
		out := run(t, root, 2*time.Minute, env, python, "examples/python/daily_chart.py", "--out", png)
		if !regexp.MustCompile(`\d+ readings of water_temperature_c \(celsius\)`).MatchString(out) {
			t.Errorf("no reading count in the output:\n%s", out)
		}
		if days := regexp.MustCompile(`(?m)^20\d\d-\d\d-\d\d\s+\d`).FindAllString(out, -1); len(days) < 7 {
			t.Errorf("want a week of daily rows, got %d:\n%s", len(days), out)
		}
		b, err := os.ReadFile(png)
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 5000 {
			t.Errorf("no chart at %s (%d bytes, %v)\n%s", png, len(b), err, out)
		}
	})

	t.Run("javascript stream with resume", func(t *testing.T) {
		t.Parallel()
		node := need(t, "node", "apt-get install nodejs")
		out := run(t, root, 4*time.Minute, env, node, "examples/js/follow-stream.mjs", "--events", "3", "--resumes", "1")
		ids := regexp.MustCompile(`(?m)^event (\S+) \S+ 20\d\d-`).FindAllStringSubmatch(out, -1)
		resumed := regexp.MustCompile(`(?m)^resuming after (\S+)$`).FindStringSubmatch(out)
		if len(ids) != 6 || resumed == nil {
			t.Fatalf("want 3 events, a resume and 3 more, got:\n%s", out)
		}
		if resumed[1] != ids[2][1] {
			t.Errorf("resumed after %s, the last event before it was %s", resumed[1], ids[2][1])
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id[1]] {
				t.Errorf("event %s delivered twice:\n%s", id[1], out)
			}
			seen[id[1]] = true
		}
	})

	t.Run("go net/http", func(t *testing.T) {
		t.Parallel()
		// Its own module, outside the workspace: it compiles with nothing of this repository.
		out := run(t, filepath.Join(root, "examples/go"), 3*time.Minute, append(env, "GOWORK=off"), "go", "run", ".")
		for _, want := range []string{"sensors of type buoy", "latest reading of", "daily water_temperature_c (UTC):", "mean "} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("curl tour", func(t *testing.T) {
		t.Parallel()
		need(t, "jq", "apt-get install jq")
		out := run(t, root, 3*time.Minute, append(env, "GW="+url+"/api/v1", "OUT="+t.TempDir()), "bash", "examples/curl-tour.sh")
		if n := strings.Count(out, "+ curl "); n < 25 {
			t.Errorf("ran %d curl calls, want the whole tour:\n%s", n, out)
		}
		if !strings.Contains(out, "tour: every call answered") {
			t.Errorf("the tour did not finish:\n%s", out)
		}
	})
}

// TestTourIsTheReadmes: examples/curl-tour.sh holds the README's tour block unchanged, so
// what the README shows is what the test runs.
func TestTourIsTheReadmes(t *testing.T) {
	t.Parallel()
	root, err := checks.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "examples/curl-tour.sh"))
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(readme, []byte("```sh\nKEY='x-api-key"))
	if start < 0 {
		t.Fatal("README: the tour block (```sh KEY=...) is gone")
	}
	block := readme[start+len("```sh\n"):]
	block = block[:bytes.Index(block, []byte("```"))]
	if !bytes.Contains(script, block) {
		t.Errorf("examples/curl-tour.sh does not hold the README's tour block; copy it between the markers:\n%s", block)
	}
}
