// Package e2e tests area latest and the streams end to end: real service binaries on
// PostgreSQL (their event logs in Redis), real gateway processes, HTTP clients.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// apiKey is the production key of the current stack (tests of this package run one at a
// time), on a plan large enough for benchmarks.
var apiKey string

// internalToken is the shared secret of gateways and services (production demands one).
const internalToken = "e2e-live-internal-token"

var bins struct {
	dir string
	err error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sensorgate-live-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins.dir = dir
	for _, name := range []string{"gateway/cmd/gateway", "services/cmd/ocean", "services/cmd/weather", "services/cmd/airquality"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, filepath.Base(name)), "github.com/sensorgate/sensorgate/"+name).CombinedOutput()
		if err != nil {
			bins.err = fmt.Errorf("go build %s: %v\n%s", name, err, out)
			break
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func bin(t testing.TB, name string) string {
	t.Helper()
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	return filepath.Join(bins.dir, name)
}

// proc is a child process, killed when the test ends.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func startProc(t testing.TB, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin(t, strings.SplitN(name, "-", 2)[0]), args...)
	p.cmd.Env = append(os.Environ(), env...)
	if dir := os.Getenv("E2E_PPROF_DIR"); dir != "" {
		// Binaries built with GOFLAGS=-tags=pprof serve net/http/pprof on PPROF_ADDR; the
		// address is left in <dir>/<name>.addr for `go tool pprof` during a benchmark.
		addr := testenv.FreeAddr(t)
		p.cmd.Env = append(p.cmd.Env, "PPROF_ADDR="+addr)
		_ = os.WriteFile(filepath.Join(dir, name+".addr"), []byte(addr), 0o644)
	}
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); _ = f.Close(); close(p.done) }()
	t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			if len(b) > 3000 {
				b = b[len(b)-3000:]
			}
			t.Logf("--- %s log (tail) ---\n%s", name, b)
		}
	})
	return p
}

// signal sends sig and, for SIGKILL, waits until the process is gone.
func (p *proc) signal(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
	}
}

// service is one running backing service.
type service struct {
	id, url string
	p       *proc
	env     []string
}

// restart stops the service with SIGTERM and starts it again on the same address and
// database.
func (sv *service) restart(t testing.TB) {
	t.Helper()
	sv.p.signal(syscall.SIGTERM)
	select {
	case <-sv.p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not stop within 60 s of SIGTERM", sv.id)
	}
	sv.p = startProc(t, sv.id, sv.env)
	waitStatus(t, sv.url+"/readyz", 200, 120*time.Second)
}

// stackOptions shape a test stack.
type stackOptions struct {
	services    []string
	simStations int
	redis       bool // services keep their event log in Redis (shared by gateways)
}

type stack struct {
	services map[string]*service
	env      []string // the gateway environment shared by its replicas
	redisPfx string
}

// startStack starts the services (each on its own PostgreSQL database) and returns what a
// gateway needs to join them.
func startStack(t testing.TB, o stackOptions) *stack {
	t.Helper()
	s := &stack{services: map[string]*service{}}
	_, s.redisPfx = testenv.Redis(t)
	var urls []string
	for _, id := range o.services {
		addr := testenv.FreeAddr(t)
		env := []string{"SERVICE_ADDR=" + addr, "READINGS_DATABASE_URL=" + testenv.Postgres(t), "SIM_DAYS=0",
			fmt.Sprintf("SIM_STATIONS=%d", o.simStations), "LOG_LEVEL=warn", "INTERNAL_TOKEN=" + internalToken}
		if o.redis {
			env = append(env, "REDIS_URL="+testenv.RedisURL(), "LIVE_REDIS_PREFIX="+s.redisPfx)
		}
		sv := &service{id: id, url: "http://" + addr, env: env}
		sv.p = startProc(t, id, env)
		s.services[id] = sv
		urls = append(urls, id+"="+sv.url)
	}
	for _, sv := range s.services {
		waitStatus(t, sv.url+"/readyz", 200, 120*time.Second)
	}
	s.env = []string{"SENSORGATE_ENV=production", "DATABASE_URL=" + testenv.Postgres(t), "INTERNAL_TOKEN=" + internalToken,
		"SERVICE_URLS=" + strings.Join(urls, ","), "SYNC_INTERVAL=2s", "REDIS_URL=" + testenv.RedisURL(), "LOG_LEVEL=warn",
		"RATE_LIMIT_PLANS=big=100000000/h"}
	cmd := exec.Command(bin(t, "gateway"), "keys", "create", "--owner", "e2e", "--env", "production", "--plan", "big")
	cmd.Env = append(os.Environ(), s.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	apiKey, _, _ = strings.Cut(string(out), "\n")
	return s
}

type gateway struct {
	url string
	p   *proc
}

// startGateway starts one gateway replica and waits until its catalog holds want sensors.
func (s *stack) startGateway(t testing.TB, name string, want int, extra ...string) *gateway {
	t.Helper()
	addr := testenv.FreeAddr(t)
	g := &gateway{url: "http://" + addr}
	g.p = startProc(t, name, append(append([]string{"GATEWAY_ADDR=" + addr}, s.env...), extra...))
	waitStatus(t, g.url+"/healthz", 200, 60*time.Second)
	deadline := time.Now().Add(60 * time.Second)
	for {
		var page struct{ Pagination struct{ Total int } }
		if r := get(t, g.url+"/api/v1/sensors?limit=1"); r.status == 200 {
			_ = json.Unmarshal(r.body, &page)
			if page.Pagination.Total >= want {
				return g
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: catalog holds %d sensors after 60s, want %d", name, page.Pagination.Total, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func waitStatus(t testing.TB, url string, status int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == status {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer %d within %s (last err %v)", url, status, within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

var httpc = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// get calls url with the stack's key (and extra header pairs).
func get(t testing.TB, url string, hdr ...string) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("x-api-key", apiKey)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := httpc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// frame is one SSE frame: an event (with id and data) or a comment.
type frame struct {
	event, id, data, comment string
	at                       time.Time
}

// sse is an open stream.
type sse struct {
	resp   *http.Response
	frames chan frame
	cancel context.CancelFunc
	done   chan struct{}
}

var streamClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2000, MaxConnsPerHost: 0}}

// openStream opens a stream; a non-200 answer is returned with its body and no stream.
func openStream(t testing.TB, url string, hdr ...string) (*sse, reply) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("x-api-key", apiKey)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := streamClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("open stream %s: %v", url, err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, reply{status: resp.StatusCode, header: resp.Header, body: b}
	}
	s := &sse{resp: resp, frames: make(chan frame, 100000), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.frames)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var f frame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.event != "" || f.comment != "" {
					f.at = time.Now()
					s.frames <- f
				}
				f = frame{}
			case strings.HasPrefix(line, ":"):
				f.comment = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "event: "):
				f.event = line[7:]
			case strings.HasPrefix(line, "id: "):
				f.id = line[4:]
			case strings.HasPrefix(line, "data: "):
				f.data += line[6:]
			}
		}
	}()
	return s, reply{status: 200, header: resp.Header}
}

func (s *sse) close() {
	s.cancel()
	s.resp.Body.Close()
	<-s.done
}

// readingEvent is an event's data.
type readingEvent struct {
	SensorID     string          `json:"sensor_id"`
	ExternalID   string          `json:"external_id"`
	ServiceID    string          `json:"service_id"`
	ID           string          `json:"id"`
	Timestamp    string          `json:"timestamp"`
	Measurements json.RawMessage `json:"measurements"`
}

// collect gathers the stream's reading events until d passes (or the stream ends).
func (s *sse) collect(t testing.TB, d time.Duration) (events []frame, comments []frame, ended bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				return events, comments, true
			}
			if f.event == "reading" {
				events = append(events, f)
			} else {
				comments = append(comments, f)
			}
		case <-timer.C:
			return events, comments, false
		}
	}
}
