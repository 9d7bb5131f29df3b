package security

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// bins are the binaries the tests run, built once for the package.
var bins = testenv.Binaries{Pkgs: map[string]string{
	"gateway": "github.com/sensorgate/sensorgate/gateway/cmd/gateway",
	"ocean":   "github.com/sensorgate/sensorgate/services/cmd/ocean",
}}

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
	err    error
}

// envelope decodes the error envelope, failing unless the body is exactly {error, code}.
func (r reply) envelope(t *testing.T) apierr.Error {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("error body %q is not JSON: %v", r.body, err)
	}
	e := apierr.Error{}
	e.Message, _ = m["error"].(string)
	e.Code, _ = m["code"].(string)
	if len(m) != 2 || e.Message == "" || e.Code == "" {
		t.Errorf("error body %s is not the envelope {error, code}", r.body)
	}
	if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Errorf("error answer %d has content type %q", r.status, r.header.Get("Content-Type"))
	}
	return e
}

// wantError checks status, envelope and code.
func (r reply) wantError(t *testing.T, what string, status int, code string) apierr.Error {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: %d %s, want %d %s", what, r.status, r.body, status, code)
		return apierr.Error{}
	}
	e := r.envelope(t)
	if e.Code != code {
		t.Errorf("%s: code %s (%s), want %s", what, e.Code, e.Message, code)
	}
	return e
}

var client = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// from returns a client whose connections come from ip (any 127/8 address is this
// machine): the wrong-key throttle counts by client address, so the suite's attacks come
// from addresses of their own and do not throttle the other groups' requests.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, CheckRedirect: client.CheckRedirect,
		Transport: &http.Transport{DialContext: d.DialContext}}
}

func do(method, url string, body []byte, hdr ...string) reply {
	return doWith(client, method, url, body, hdr...)
}

func doWith(c *http.Client, method, url string, body []byte, hdr ...string) reply {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, rd)
	if err != nil {
		return reply{err: err}
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

// gatewayEnv is the environment of a gateway process.
type gatewayEnv struct {
	addr, databaseURL, redisURL, services, token string
	extra                                        []string
}

func (g gatewayEnv) list() []string {
	return append([]string{
		"GATEWAY_ADDR=" + g.addr, "DATABASE_URL=" + g.databaseURL, "REDIS_URL=" + g.redisURL,
		"SENSORGATE_ENV=production", "SERVICE_URLS=" + g.services, "INTERNAL_TOKEN=" + g.token,
		"RATE_LIMIT_PLANS=default=1000000/h,tiny=5/h", "SYNC_INTERVAL=1s", "PROBE_INTERVAL=1s",
		"KEY_CACHE_TTL=1m", "READINGS_CACHE_TTL=0", "LOG_LEVEL=info", "LOG_FORMAT=text", "OTEL_SDK_DISABLED=true",
	}, g.extra...)
}

func (g gatewayEnv) url() string { return "http://" + g.addr }

// admin runs a gateway admin command and returns its output.
func admin(t *testing.T, g gatewayEnv, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin(t, "gateway"), args...)
	cmd.Env = append(os.Environ(), g.list()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gateway %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// createKey runs `gateway keys create` and returns the key it prints.
func createKey(t *testing.T, g gatewayEnv, owner, plan string) string {
	t.Helper()
	out := admin(t, g, "keys", "create", "--owner", owner, "--env", "production", "--plan", plan)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "sg_live_") && !strings.Contains(line, " ") {
			return line
		}
	}
	t.Fatalf("keys create printed no key:\n%s", out)
	return ""
}
