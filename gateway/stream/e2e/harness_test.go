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

// bins are the binaries the tests run, built once for the package.
var bins = testenv.Binaries{Pkgs: map[string]string{
	"gateway":    "github.com/sensorgate/sensorgate/gateway/cmd/gateway",
	"ocean":      "github.com/sensorgate/sensorgate/services/cmd/ocean",
	"weather":    "github.com/sensorgate/sensorgate/services/cmd/weather",
	"airquality": "github.com/sensorgate/sensorgate/services/cmd/airquality",
}}

func TestMain(m *testing.M) { bins.Main(m) }

// startProc starts a process of the test, killed (SIGKILL) when the test ends; its log is
// shown when the test fails. name names the binary up to its first "-" (gateway-b runs
// gateway).
func startProc(t testing.TB, name string, env []string) *testenv.Process {
	t.Helper()
	if dir := os.Getenv("E2E_PPROF_DIR"); dir != "" {
		// Binaries built with GOFLAGS=-tags=pprof serve net/http/pprof on PPROF_ADDR
		// (pkg/obs); the address is left in <dir>/<name>.addr for `go tool pprof` during a
		// benchmark (docs/live.md). A restarted process keeps its address.
		addr := testenv.FreeAddr(t)
		env = append(env[:len(env):len(env)], "PPROF_ADDR="+addr)
		_ = os.WriteFile(filepath.Join(dir, name+".addr"), []byte(addr), 0o644)
	}
	path := bins.Path(t, strings.SplitN(name, "-", 2)[0])
	return testenv.StartProcess(t, testenv.Command{Name: name, Path: path, Env: env})
}

// service is one running backing service.
type service struct {
	id, url string
	p       *testenv.Process
}

// restart stops the service with SIGTERM and starts it again on the same address and
// database.
func (sv *service) restart(t testing.TB) {
	t.Helper()
	sv.p.Signal(t, syscall.SIGTERM)
	if exited, _ := sv.p.Wait(60 * time.Second); !exited {
		t.Fatalf("%s did not stop within 60 s of SIGTERM", sv.id)
	}
	sv.p.Restart(t)
	sv.p.WaitReady(t, sv.url+"/readyz", 120*time.Second)
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
		sv := &service{id: id, url: "http://" + addr}
		sv.p = startProc(t, id, env)
		s.services[id] = sv
		urls = append(urls, id+"="+sv.url)
	}
	for _, sv := range s.services {
		sv.p.WaitReady(t, sv.url+"/readyz", 120*time.Second)
	}
	s.env = []string{"SENSORGATE_ENV=production", "DATABASE_URL=" + testenv.Postgres(t), "INTERNAL_TOKEN=" + internalToken,
		"SERVICE_URLS=" + strings.Join(urls, ","), "SYNC_INTERVAL=2s", "REDIS_URL=" + testenv.RedisURL(), "LOG_LEVEL=warn",
		"RATE_LIMIT_PLANS=big=100000000/h,small=1000/h"}
	cmd := exec.Command(bins.Path(t, "gateway"), "keys", "create", "--owner", "e2e", "--env", "production", "--plan", "big")
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
	p   *testenv.Process
}

// startGateway starts one gateway replica and waits until its catalog holds want sensors.
func (s *stack) startGateway(t testing.TB, name string, want int, extra ...string) *gateway {
	t.Helper()
	addr := testenv.FreeAddr(t)
	g := &gateway{url: "http://" + addr}
	g.p = startProc(t, name, append(append([]string{"GATEWAY_ADDR=" + addr}, s.env...), extra...))
	g.p.WaitReady(t, g.url+"/healthz", 60*time.Second)
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
