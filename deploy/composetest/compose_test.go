//go:build compose

package composetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/deploy/checks"
	"github.com/sensorgate/sensorgate/deploy/dashboard"
)

const (
	project = "sgcompose"
	devKey  = "sg_dev_4f7b1d2c9a8e6b3f0d5c7a9e1b2d4f6a"
)

type stack struct {
	t        *testing.T
	compose  []string
	files    []string // the compose files, -f each
	root     string
	env      []string
	gw, prom string // base URLs on the published ports
	client   *http.Client
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func newStack(t *testing.T) *stack {
	t.Helper()
	c := strings.Fields(os.Getenv("COMPOSE"))
	if len(c) == 0 {
		t.Fatal("COMPOSE is not set: run `make compose-test` (it builds or finds a Compose v2 CLI)")
	}
	root, err := checks.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// COMPOSE_FILES (make compose-test: the file and its local override, images built
	// without a registry); `COMPOSE_FILES=docker-compose.yml` tests the official images.
	files := strings.Fields(os.Getenv("COMPOSE_FILES"))
	if len(files) == 0 {
		files = checks.ComposeFiles["local"]
	}
	gwPort, promPort := freePort(t), freePort(t)
	s := &stack{t: t, compose: c, files: files, root: root,
		env: append(os.Environ(), "COMPOSE_PROJECT_NAME="+project, fmt.Sprintf("GATEWAY_PORT=%d", gwPort), fmt.Sprintf("PROMETHEUS_PORT=%d", promPort)),
		gw:  fmt.Sprintf("http://127.0.0.1:%d", gwPort), prom: fmt.Sprintf("http://127.0.0.1:%d", promPort),
		client: &http.Client{Timeout: 30 * time.Second}}
	return s
}

// run runs a compose command and returns its output; it fails the test on error.
func (s *stack) run(timeout time.Duration, args ...string) string {
	s.t.Helper()
	out, err := s.try(timeout, args...)
	if err != nil {
		s.t.Fatalf("compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (s *stack) try(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	full := append(append([]string{}, s.compose[1:]...), "-p", project)
	for _, f := range s.files {
		full = append(full, "-f", filepath.Join(s.root, f))
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, s.compose[0], full...)
	cmd.Dir, cmd.Env = s.root, s.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// call sends one request to the gateway and returns status and body.
func (s *stack) call(method, url, body string, header http.Header) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (s *stack) get(path string) (int, []byte, error) {
	return s.call(http.MethodGet, s.gw+"/api/v1"+path, "", http.Header{"X-Api-Key": {devKey}})
}

// phase times one step and logs it (the README's figures come from these lines).
func phase(t *testing.T, name string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	t.Logf("phase %-28s %6.1f s", name, time.Since(start).Seconds())
}

func TestComposeStack(t *testing.T) {
	s := newStack(t)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.try(time.Minute, "ps", "-a")
			t.Logf("compose ps:\n%s", out)
			out, _ = s.try(time.Minute, "logs", "--no-color", "--tail", "40")
			t.Logf("compose logs:\n%s", out)
		}
		if out, err := s.try(3*time.Minute, "down", "-v", "--remove-orphans"); err != nil {
			t.Logf("cleanup down -v: %v\n%s", err, out)
		}
	})

	phase(t, "config", func() { s.run(time.Minute, "config", "-q") })
	phase(t, "clean leftovers", func() { s.run(3*time.Minute, "down", "-v", "--remove-orphans") })
	phase(t, "up --wait", func() { s.run(10*time.Minute, "up", "-d", "--wait", "--no-build", "--pull", "never") })

	var sensorID string
	phase(t, "README curl examples", func() { sensorID = s.readmeExamples(t) })
	phase(t, "prometheus targets up (4)", func() { s.waitTargets(t, 4) })
	phase(t, "scale ocean=3", func() {
		s.run(10*time.Minute, "up", "-d", "--wait", "--no-build", "--pull", "never", "--scale", "ocean=3")
	})
	phase(t, "prometheus targets up (6)", func() { s.waitTargets(t, 6) })
	phase(t, "spread over replicas", func() { s.spread(t, sensorID) })
	phase(t, "ingest once (lease)", func() { s.ingestOnce(t) })
	phase(t, "dashboard queries", func() { s.dashboardQueries(t) })
	phase(t, "kill one ocean replica", func() { s.killReplica(t, sensorID) })
	phase(t, "restart postgres", func() { s.restartDependency(t, "postgres", sensorID) })
	phase(t, "restart redis", func() { s.restartDependency(t, "redis", sensorID) })
	phase(t, "down -v", func() { s.down(t) })
}

// readmeExamples runs every curl line of the README's API block against the published
// port (the sensor id of the block's jq line found the same way) and returns that id.
func (s *stack) readmeExamples(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join(s.root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "```sh\nKEY='x-api-key")
	if start < 0 {
		t.Fatal("README: the API example block (```sh KEY=...) is gone")
	}
	block := readme[start+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]

	code, body, err := s.get("/sensors?sensor_type=buoy&limit=1")
	if err != nil || code != http.StatusOK {
		t.Fatalf("buoy lookup: %d %v %s", code, err, body)
	}
	var page struct {
		Sensors []struct {
			ID string `json:"id"`
		} `json:"sensors"`
	}
	if err := json.Unmarshal(body, &page); err != nil || len(page.Sensors) == 0 {
		t.Fatalf("buoy lookup: no sensor in %s (%v)", body, err)
	}
	id := page.Sensors[0].ID
	vars := map[string]string{"$KEY": "x-api-key: " + devKey, "$GW": s.gw + "/api/v1", "$ID": id}

	n := 0
	for _, cmd := range curlCommands(block) {
		var method, url, data = http.MethodGet, "", ""
		header := http.Header{}
		words := shellWords(cmd)
		for i := 1; i < len(words); i++ {
			w := expand(words[i], vars)
			switch w {
			case "-s", "-N", "--compressed": // quiet, unbuffered; Go's client asks for gzip itself
			case "-o": // the output file
				i++
			case "-H":
				i++
				k, v, _ := strings.Cut(expand(words[i], vars), ":")
				if strings.Contains(v, "<") { // a placeholder such as <id of the last event>
					continue
				}
				header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			case "-d":
				i++
				data, method = expand(words[i], vars), http.MethodPost
			default:
				url = w
			}
		}
		code, body, err := s.call(method, url, data, header)
		n++
		if err != nil && code == http.StatusOK && strings.Contains(url, "/stream") {
			err = nil // an event stream never ends; its opening answer is what is checked
		}
		if err != nil || code >= 300 {
			t.Errorf("README: %s\n  -> %d %v %.300s", cmd, code, err, body)
			continue
		}
		if strings.HasSuffix(url, "/mcp") {
			var rpc struct {
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(body, &rpc); err != nil || len(rpc.Result) == 0 || len(rpc.Error) != 0 {
				t.Errorf("README MCP call %s: want a JSON-RPC result, got %.300s", cmd, body)
			} else if bytes.Contains(rpc.Result, []byte(`"isError":true`)) {
				t.Errorf("README MCP call %s: tool error %.300s", cmd, rpc.Result)
			}
		}
	}
	if n < 15 {
		t.Errorf("README: ran %d curl examples, expected the whole block", n)
	}
	t.Logf("README: %d curl examples answered 2xx, MCP calls included", n)
	return id
}

// curlCommands splits the block into curl commands: continuation lines joined, several
// commands on one line split at "; curl", the id-capturing jq line left out.
func curlCommands(block string) []string {
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		full := strings.TrimSpace(cur.String())
		cur.Reset()
		if !strings.HasPrefix(full, "curl ") {
			continue
		}
		for _, part := range strings.Split(full, "; curl ") {
			if !strings.HasPrefix(part, "curl ") {
				part = "curl " + part
			}
			out = append(out, part)
		}
	}
	return out
}

// shellWords splits a command line as sh would for these examples: single and double
// quotes group, a # outside quotes starts a comment.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '#':
			if in {
				words = append(words, cur.String())
			}
			return words
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

func expand(s string, vars map[string]string) string {
	for k, v := range vars {
		s = strings.ReplaceAll(s, k, v)
	}
	return s
}

// waitTargets waits until Prometheus has want active targets, all up.
func (s *stack) waitTargets(t *testing.T, want int) {
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		code, body, err := s.call(http.MethodGet, s.prom+"/api/v1/targets?state=active", "", nil)
		if err == nil && code == http.StatusOK {
			var r struct {
				Data struct {
					ActiveTargets []struct {
						ScrapeURL string `json:"scrapeUrl"`
						Health    string `json:"health"`
						LastError string `json:"lastError"`
					} `json:"activeTargets"`
				} `json:"data"`
			}
			if json.Unmarshal(body, &r) == nil {
				up := 0
				var states []string
				for _, tg := range r.Data.ActiveTargets {
					if tg.Health == "up" {
						up++
					}
					states = append(states, tg.ScrapeURL+"="+tg.Health+" "+tg.LastError)
				}
				last = strings.Join(states, "; ")
				if up == want && len(r.Data.ActiveTargets) == want {
					t.Logf("prometheus: %d targets up", up)
					return
				}
			}
		} else {
			last = fmt.Sprintf("%d %v", code, err)
		}
		time.Sleep(2 * time.Second)
	}
	t.Fatalf("prometheus: want %d targets up, last seen: %s", want, last)
}

// oceanReplicas lists the running ocean containers.
func (s *stack) oceanReplicas(t *testing.T) []string {
	out := s.run(time.Minute, "ps", "-q", "ocean")
	return strings.Fields(out)
}

// metric sums a counter's samples whose series line contains every filter, read from the
// container's own /metrics through its probe binary.
func metric(t *testing.T, container, name string, filters ...string) float64 {
	out := docker(t, "exec", container, "/probe", "-print", "http://127.0.0.1:8081/metrics")
	var sum float64
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		ok := true
		for _, f := range filters {
			ok = ok && strings.Contains(line, f)
		}
		if !ok {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

func readingsCount(t *testing.T, c string) float64 {
	return metric(t, c, "sensorgate_http_request_duration_seconds_count", `route="GET /v1/sensors/{id}/readings"`)
}

// load sends readings calls for ocean (distinct queries, so the gateway's short cache
// does not answer them) and, when others is set, calls routed to the other services too,
// from workers goroutines for d; it returns the answers' status counts by service.
func (s *stack) load(t *testing.T, sensorID string, d time.Duration, workers int, others bool) map[string]map[int]int {
	var mu sync.Mutex
	got := map[string]map[int]int{}
	var seq atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				i := seq.Add(1)
				svc, path := "ocean", fmt.Sprintf("/sensors/%s/readings?limit=%d&days=%d", sensorID, i%500+1, (i/500)%7+1)
				if others && w%2 == 1 {
					svc = []string{"weather", "airquality"}[i%2]
					path = "/services/" + svc + "/health"
				}
				code, _, err := s.get(path)
				if err != nil {
					code = -1
				}
				// Paced: the whole test stays within the development key's 1000 calls an
				// hour (a development key has a fixed budget).
				time.Sleep(500 * time.Millisecond)
				mu.Lock()
				if got[svc] == nil {
					got[svc] = map[int]int{}
				}
				got[svc][code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return got
}

// spread: after the scale-out, the gateway's ocean calls reach all three replicas, each
// replica's own request counter says so.
func (s *stack) spread(t *testing.T, sensorID string) {
	reps := s.oceanReplicas(t)
	if len(reps) != 3 {
		t.Fatalf("ocean replicas: %v, want 3", reps)
	}
	before := map[string]float64{}
	for _, c := range reps {
		before[c] = readingsCount(t, c)
	}
	// Longer than the gateway's connection recycling (10 s), so kept-alive connections to
	// the first replica are replaced.
	got := s.load(t, sensorID, 25*time.Second, 3, false)
	var total float64
	share := map[string]float64{}
	for _, c := range reps {
		share[c] = readingsCount(t, c) - before[c]
		total += share[c]
	}
	t.Logf("spread: gateway answers %v; per replica %v", got["ocean"], share)
	for c, n := range share {
		if n == 0 {
			t.Errorf("ocean replica %.12s served none of %.0f readings calls", c, total)
		}
	}
	if bad := got["ocean"][-1] + got["ocean"][502] + got["ocean"][504] + got["ocean"][500]; bad > 0 {
		t.Errorf("spread: %d ocean calls failed: %v", bad, got["ocean"])
	}
}

// ingestOnce: exactly one ocean replica ingests each provider (its readings counter grows
// or is the only non-zero one); the standbys ingested nothing.
func (s *stack) ingestOnce(t *testing.T) {
	reps := s.oceanReplicas(t)
	for _, provider := range []string{"noaa-ndbc", "noaa-coops"} {
		var ingesting []string
		for _, c := range reps {
			if metric(t, c, "sensorgate_ingest_readings_total", `provider="`+provider+`"`) > 0 {
				ingesting = append(ingesting, c[:12])
			}
		}
		if len(ingesting) != 1 {
			t.Errorf("%s ingested by %v, want exactly one replica", provider, ingesting)
		} else {
			t.Logf("%s ingested by %s only", provider, ingesting[0])
		}
	}
}

// killReplica kills one ocean container while calls run: ocean calls move to the other
// replicas, the other services' calls never see a 5xx.
func (s *stack) killReplica(t *testing.T, sensorID string) {
	reps := s.oceanReplicas(t)
	victim := reps[len(reps)-1]
	done := make(chan map[string]map[int]int)
	go func() { done <- s.load(t, sensorID, 20*time.Second, 4, true) }()
	time.Sleep(5 * time.Second)
	docker(t, "kill", victim)
	got := <-done
	after := s.load(t, sensorID, 5*time.Second, 2, true)
	t.Logf("kill %.12s: answers during %v, after %v", victim, got, after)
	for svc, codes := range got {
		for code, n := range codes {
			if code >= 500 || code < 0 {
				if svc == "ocean" {
					t.Errorf("ocean: %d answers %d while a replica died; the others should have taken them", n, code)
				} else {
					t.Errorf("%s: %d answers %d while an ocean replica died", svc, n, code)
				}
			}
		}
	}
	for svc, codes := range after {
		for code, n := range codes {
			if code != http.StatusOK {
				t.Errorf("%s after the kill: %d answers %d", svc, n, code)
			}
		}
	}
}

// started maps every gateway and service container to its start time.
func (s *stack) started(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, svc := range []string{"gateway", "ocean", "weather", "airquality"} {
		for _, c := range strings.Fields(s.run(time.Minute, "ps", "-q", svc)) {
			out[svc+"/"+c[:12]] = docker(t, "inspect", "-f", "{{.State.StartedAt}} restarts={{.RestartCount}}", c)
		}
	}
	return out
}

// restartDependency restarts PostgreSQL or Redis and checks that the stack answers again
// within a minute with no gateway or service container restarted.
func (s *stack) restartDependency(t *testing.T, svc, sensorID string) {
	before := s.started(t)
	s.run(3*time.Minute, "restart", svc)
	deadline := time.Now().Add(time.Minute)
	paths := []string{"/sensors?limit=5", "/sensors/" + sensorID + "/readings?limit=7&days=2", "/services/weather/health"}
	var last string
	for {
		ok := true
		for _, p := range paths {
			code, body, err := s.get(p)
			if err != nil || code != http.StatusOK {
				ok = false
				last = fmt.Sprintf("%s: %d %v %.200s", p, code, err, body)
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after restarting %s the stack does not answer within a minute: %s", svc, last)
		}
		time.Sleep(time.Second)
	}
	after := s.started(t)
	for c, at := range before {
		if after[c] != at {
			t.Errorf("%s restarted when %s did: %s -> %s", c, svc, at, after[c])
		}
	}
}

// down removes the stack and checks that no container, volume or network of the project
// is left.
func (s *stack) down(t *testing.T) {
	s.run(5*time.Minute, "down", "-v", "--remove-orphans")
	label := "label=com.docker.compose.project=" + project
	for what, args := range map[string][]string{
		"containers": {"ps", "-a", "-q", "--filter", label},
		"volumes":    {"volume", "ls", "-q", "--filter", label},
		"networks":   {"network", "ls", "-q", "--filter", label},
	} {
		if out := docker(t, args...); out != "" {
			t.Errorf("down -v left %s: %s", what, out)
		}
	}
}

// mayBeEmpty are the dashboard panels whose queries need events the test does not cause,
// with the reason; their queries must still parse and run, and the test logs whether they
// returned data.
var mayBeEmpty = map[string]string{
	"5xx ratio": "its numerator exists only once some binary has answered a 5xx; the test fails on any 5xx to its own calls, " +
		"so only a probe's 503 while a container starts can make one",
	"Store query errors per second": "a store error (result=\"error\") happens only while a database is down; this phase runs before PostgreSQL's restart",
}

// promQuery runs one instant query on the stack's Prometheus and returns its result count,
// or Prometheus' error (a query Prometheus 2.42 cannot parse is bad_data).
func (s *stack) promQuery(expr string) (int, error) {
	code, body, err := s.call(http.MethodGet, s.prom+"/api/v1/query?query="+url.QueryEscape(expr), "", nil)
	if err != nil {
		return 0, err
	}
	var r struct {
		Status, ErrorType, Error string
		Data                     struct {
			ResultType string            `json:"resultType"`
			Result     []json.RawMessage `json:"result"`
		}
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return 0, fmt.Errorf("%d %.200s: %w", code, body, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	return len(r.Data.Result), nil
}

// dashboardQueries runs every query of the Grafana dashboard, variables substituted as
// Grafana does, against the stack's Prometheus after the README calls and the scale-out
// traffic: each must run and return at least one series (but for mayBeEmpty), and each
// template variable must offer at least one value.
func (s *stack) dashboardQueries(t *testing.T) {
	d, err := dashboard.Load(filepath.Join(s.root, dashboard.Path))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range d.Variables {
		code, body, err := s.call(http.MethodGet, s.prom+"/api/v1/label/"+v.Label+"/values?match[]="+url.QueryEscape(v.Metric), "", nil)
		var r struct{ Data []string }
		if err != nil || code != http.StatusOK || json.Unmarshal(body, &r) != nil {
			t.Errorf("variable %s: label_values(%s, %s): %d %v %.200s", v.Name, v.Metric, v.Label, code, err, body)
			continue
		}
		var kept []string
		for _, x := range r.Data {
			if v.Regex == nil || v.Regex.MatchString(x) {
				kept = append(kept, x)
			}
		}
		if len(kept) == 0 {
			t.Errorf("variable %s offers no value (Prometheus has %v)", v.Name, r.Data)
		}
		t.Logf("variable %s: %v", v.Name, kept)
	}
	// A rate needs two scrapes (5 s apart) of the traffic in its window; the empty ones are
	// asked again for up to 30 s before they count as empty.
	pending := map[int]bool{}
	for i := range d.Queries {
		pending[i] = true
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		for i := range pending {
			q := d.Queries[i]
			n, err := s.promQuery(q.Expr)
			if err != nil {
				t.Errorf("panel %q %s: Prometheus refuses %s: %v", q.Panel, q.RefID, q.Expr, err)
				delete(pending, i)
			} else if n > 0 {
				t.Logf("panel %q %s: %d series", q.Panel, q.RefID, n)
				delete(pending, i)
			}
		}
		if len(pending) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Second)
	}
	for i := range pending {
		q := d.Queries[i]
		if why, ok := mayBeEmpty[q.Panel]; ok {
			t.Logf("panel %q %s: no series, as expected here (%s)", q.Panel, q.RefID, why)
			continue
		}
		t.Errorf("panel %q %s: no series after the test's traffic: %s", q.Panel, q.RefID, q.Expr)
	}
}
