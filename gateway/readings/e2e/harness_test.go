package e2e

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// bins are the binaries the tests run, built once for the package.
var bins = testenv.Binaries{Pkgs: map[string]string{
	"gateway":      "github.com/sensorgate/sensorgate/gateway/cmd/gateway",
	"gateway-race": "github.com/sensorgate/sensorgate/gateway/cmd/gateway",
	"ocean":        "github.com/sensorgate/sensorgate/services/cmd/ocean",
	"weather":      "github.com/sensorgate/sensorgate/services/cmd/weather",
},
	// The concurrency test runs a gateway built with the race detector (under -race), so
	// that a data race inside the server process fails the test too.
	Race: []string{"gateway-race"},
}

func TestMain(m *testing.M) { bins.Main(m) }

func bin(t *testing.T, name string) string {
	t.Helper()
	return bins.Path(t, name)
}

// startProc starts a process of the test, killed (SIGKILL) when the test ends; its log is
// shown when the test fails.
func startProc(t *testing.T, name, path string, env []string) *testenv.Process {
	t.Helper()
	return testenv.StartProcess(t, testenv.Command{Name: name, Path: path, Env: env})
}

type reply struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
	err    error
}

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 100}}

func get(url string, hdr ...string) reply {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return reply{err: err}
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return reply{err: err, took: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b, took: time.Since(start), err: err}
}

// gatewayEnv is the environment of a gateway process.
type gatewayEnv struct {
	addr        string
	databaseURL string
	redisURL    string
	env         string // development | production
	devKey      string
	services    string
	extra       []string
}

func (g gatewayEnv) list() []string {
	e := []string{
		"GATEWAY_ADDR=" + g.addr,
		"DATABASE_URL=" + g.databaseURL,
		"REDIS_URL=" + g.redisURL,
		"SENSORGATE_ENV=" + g.env,
		"SERVICE_URLS=" + g.services,
		"SYNC_INTERVAL=1s",
		"PROBE_INTERVAL=1s",
		"LOG_LEVEL=warn",
		"LOG_FORMAT=text",
		"OTEL_SDK_DISABLED=true",
		// Production refuses to start without one; the test services demand none.
		"INTERNAL_TOKEN=e2e-internal-token",
	}
	if g.devKey != "" {
		e = append(e, "DEV_API_KEY="+g.devKey)
	}
	return append(e, g.extra...)
}

// createKey runs `gateway keys create` and returns the key it prints.
func createKey(t *testing.T, g gatewayEnv, plan string) string {
	t.Helper()
	cmd := exec.Command(bin(t, "gateway"), "keys", "create", "--owner", "e2e", "--env", g.env, "--plan", plan)
	cmd.Env = append(os.Environ(), g.list()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.Contains(line, " ") {
			return line
		}
	}
	t.Fatalf("keys create printed no key:\n%s", out)
	return ""
}
