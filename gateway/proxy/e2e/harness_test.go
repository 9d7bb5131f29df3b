package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// bins holds the binaries built once for the package.
var bins struct {
	dir string
	err error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sensorgate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins.dir = dir
	for name, pkg := range map[string]string{
		"gateway": "github.com/sensorgate/sensorgate/gateway/cmd/gateway",
		"ocean":   "github.com/sensorgate/sensorgate/services/cmd/ocean",
		"weather": "github.com/sensorgate/sensorgate/services/cmd/weather",
	} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg).CombinedOutput()
		if err != nil {
			bins.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
			break
		}
	}
	if bins.err == nil && raceEnabled {
		// The concurrency test runs a gateway built with the race detector, so that a data
		// race inside the server process fails the test too.
		out, err := exec.Command("go", "build", "-race", "-o", filepath.Join(dir, "gateway-race"), "github.com/sensorgate/sensorgate/gateway/cmd/gateway").CombinedOutput()
		if err != nil {
			bins.err = fmt.Errorf("go build -race gateway: %v\n%s", err, out)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func bin(t *testing.T, name string) string {
	t.Helper()
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	return filepath.Join(bins.dir, name)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is a child process of the test, killed when the test ends.
type proc struct {
	t    *testing.T
	name string
	path string
	args []string
	env  []string
	log  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	// exited is closed when the running process has been waited for.
	exited chan struct{}
}

func startProc(t *testing.T, name, path string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, path: path, args: args, env: env, log: filepath.Join(t.TempDir(), name+".log")}
	p.start()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("--- %s log (last 3000 bytes) ---\n%s", name, tail(b, 3000))
		}
	})
	return p
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func (p *proc) start() {
	p.t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = f.Close(); close(exited) }()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
}

// kill sends SIGKILL: the process dies mid-request, as in a crash.
func (p *proc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		select { // Wait, on the goroutine of start, owns the process state
		case <-p.exited:
		case <-time.After(5 * time.Second):
		}
		p.cmd = nil
	}
}

// waitOK polls url until it answers 200.
func waitOK(t *testing.T, url string, hdr ...string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		r := get(url, hdr...)
		if r.status == 200 {
			return
		}
		last = fmt.Sprintf("%d %s %v", r.status, r.body, r.err)
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer 200 within 60s; last: %s", url, last)
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

// redisServer is a redis-server process of the test's own, to stop and start for real.
type redisServer struct {
	*proc
	port int
}

func startRedis(t *testing.T) *redisServer {
	t.Helper()
	port := freePort(t)
	dir := t.TempDir()
	p := startProc(t, "redis", "/usr/bin/redis-server", nil, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	r := &redisServer{proc: p, port: port}
	r.waitUp(t)
	return r
}

func (r *redisServer) url() string { return "redis://127.0.0.1:" + strconv.Itoa(r.port) + "/0" }

func (r *redisServer) waitUp(t *testing.T) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(r.port)})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %d: %v", r.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
