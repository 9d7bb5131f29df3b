//go:build k8s

package k8stest

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
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/deploy/checks"
)

const (
	ns            = "sensorgate-dev"
	devKey        = "sg_dev_4f7b1d2c9a8e6b3f0d5c7a9e1b2d4f6a"
	internalToken = "sensorgate-dev-internal-token"
)

var (
	services = []string{"ocean", "weather", "airquality"}
	ports    = map[string]int{"gateway": 8080, "ocean": 8081, "weather": 8082, "airquality": 8083}
)

type cluster struct {
	t       *testing.T
	kubectl string
	root    string
	gw      string // http://<gateway ClusterIP>:8080
	client  *http.Client
	key     string // the API key of the current phase
}

func newCluster(t *testing.T) *cluster {
	k := os.Getenv("KUBECTL")
	if k == "" || os.Getenv("KUBECONFIG") == "" {
		t.Fatal("KUBECTL and KUBECONFIG are not set: run `make k8s-test` (scripts/k8s-test.sh brings the cluster up)")
	}
	root, err := checks.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, kubectl: k, root: root, client: &http.Client{Timeout: 30 * time.Second}, key: devKey}
}

// kc runs kubectl in the test namespace and returns its combined output.
func (c *cluster) kc(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.kubectl, append([]string{"-n", ns}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func (c *cluster) must(timeout time.Duration, args ...string) string {
	c.t.Helper()
	out, err := c.kc(timeout, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// check runs one named check as a subtest: go test -v prints PASS or FAIL for each.
func check(t *testing.T, name string, f func(t *testing.T)) bool {
	start := time.Now()
	ok := t.Run(name, f)
	t.Logf("check %-45s %s in %.1f s", name, map[bool]string{true: "PASS", false: "FAIL"}[ok], time.Since(start).Seconds())
	return ok
}

func (c *cluster) call(method, url, body string, header http.Header) (int, []byte, error) {
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
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (c *cluster) get(path string) (int, []byte, error) {
	return c.call(http.MethodGet, c.gw+"/api/v1"+path, "", http.Header{"X-Api-Key": {c.key}})
}

// pods lists the running, not terminating pods of one app.
func (c *cluster) pods(app string) []string {
	out := c.must(time.Minute, "get", "pods", "-l", "app.kubernetes.io/name="+app,
		"-o", `jsonpath={range .items[?(@.status.phase=="Running")]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}`)
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 1 {
			names = append(names, f[0])
		}
	}
	sort.Strings(names)
	return names
}

// fetch reads a URL from inside a pod with the image's probe binary (which sends the pod's
// INTERNAL_TOKEN), so the pod's own view is what is read.
func (c *cluster) fetch(pod, url string) (string, error) {
	return c.kc(time.Minute, "exec", pod, "--", "/probe", "-print", url)
}

// metric sums the samples of a counter whose series line holds every filter, from a
// pod's own /metrics.
func (c *cluster) metric(pod, svc, name string, filters ...string) float64 {
	c.t.Helper()
	out, err := c.fetch(pod, fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[svc]))
	if err != nil {
		c.t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		ok := true
		for _, f := range filters {
			ok = ok && strings.Contains(line, f)
		}
		if f := strings.Fields(line); ok && len(f) > 1 {
			if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

func (c *cluster) readingsServed(pod, svc string) float64 {
	return c.metric(pod, svc, "sensorgate_http_request_duration_seconds_count", `route="GET /v1/sensors/{id}/readings"`)
}

// restarts maps every gateway and service pod to its containers' restart count.
func (c *cluster) restarts() map[string]string {
	out := c.must(time.Minute, "get", "pods", "-l", "app.kubernetes.io/part-of=sensorgate",
		"-o", `jsonpath={range .items[*]}{.metadata.name}={.status.containerStatuses[0].restartCount}{"\n"}{end}`)
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(k, "gateway-migrate") {
			m[k] = v
		}
	}
	return m
}

// newKey creates a development key (its own 1000 calls an hour) for one phase.
func (c *cluster) newKey(owner string) {
	c.t.Helper()
	out := c.must(2*time.Minute, "exec", "deploy/gateway", "--", "/sensorgate", "keys", "create", "--owner", owner, "--env", "development")
	c.key = strings.Fields(out)[0]
}

// load sends paced readings calls for one sensor (distinct queries, so the gateway's
// short cache does not answer them) from workers goroutines for d; it returns the
// answers' status counts (-1: no answer).
func (c *cluster) load(sensorID string, d time.Duration, workers int) map[int]int {
	var mu sync.Mutex
	got := map[int]int{}
	var seq atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				i := seq.Add(1)
				code, _, err := c.get(fmt.Sprintf("/sensors/%s/readings?limit=%d&days=%d", sensorID, i%500+1, (i/500)%2+1))
				if err != nil {
					code = -1
				}
				mu.Lock()
				got[code]++
				mu.Unlock()
				time.Sleep(400 * time.Millisecond) // within a development key's budget
			}
		}()
	}
	wg.Wait()
	return got
}

func failures(got map[int]int) int {
	n := 0
	for code, k := range got {
		if code < 0 || code >= 500 {
			n += k
		}
	}
	return n
}

// sensorOf returns the id of the first sensor a sensor-list filter selects in the
// gateway's catalog, waiting for the catalog sync (every SYNC_INTERVAL, 30 s) to have brought one.
func (c *cluster) sensorOf(filter string) string {
	c.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		code, body, err := c.get("/sensors?limit=1&" + filter)
		var page struct {
			Sensors []struct {
				ID string `json:"id"`
			} `json:"sensors"`
		}
		if err == nil && code == http.StatusOK && json.Unmarshal(body, &page) == nil && len(page.Sensors) > 0 {
			return page.Sensors[0].ID
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no sensor %s in the gateway's catalog after 3 min: %d %v %.300s", filter, code, err, body)
		}
		time.Sleep(5 * time.Second)
	}
}

func TestCluster(t *testing.T) {
	c := newCluster(t)
	overlay := filepath.Join(c.root, "deploy/k8s/overlays/k8s-test")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := c.kc(time.Minute, "get", "pods,deploy,hpa,svc,pvc", "-o", "wide")
			t.Logf("objects:\n%s", out)
			out, _ = c.kc(time.Minute, "get", "events", "--sort-by=.lastTimestamp")
			t.Logf("events:\n%s", lastLines(out, 40))
		}
	})

	ready := check(t, "deployments ready with their probes", func(t *testing.T) { c.applyAndWait(t, overlay) })
	if !ready {
		t.Fatal("the stack never became ready; the other checks need it")
	}
	c.gw = "http://" + c.must(time.Minute, "get", "svc", "gateway", "-o", "jsonpath={.spec.clusterIP}") + ":8080"
	check(t, "gateway reaches each service by its Service name", c.serviceNames)
	var ocean string
	check(t, "readings and MCP through the gateway Service", func(t *testing.T) { ocean = c.readingsAndMCP(t) })
	if ocean == "" {
		t.Fatal("no ocean sensor: the scaling checks need one")
	}
	check(t, "kubectl scale ocean to 3 replicas", c.scaleOcean)
	check(t, "exactly one replica ingests each provider (lease)", c.oneIngester)
	check(t, "readings answer from every replica", func(t *testing.T) { c.everyReplica(t, ocean) })
	check(t, "ingesting pod killed mid-stream: stream resumes, nothing lost", func(t *testing.T) { c.killMidStream(t, ocean) })
	check(t, "PostgreSQL pod restarted: nothing lost", func(t *testing.T) { c.restartPostgres(t, ocean) })
	check(t, "HPA reads metrics and scales weather up under load", c.autoscale)
	check(t, "rolling update of the airquality image keeps answering", c.rollingUpdate)
}

func lastLines(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// applyAndWait applies the overlay, waits for the migration Job and every rollout, then
// checks that each pod of the stack is Ready with the probes of its manifest.
func (c *cluster) applyAndWait(t *testing.T, overlay string) {
	c.t = t
	out, err := c.kc(5*time.Minute, "apply", "-k", overlay)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("apply:\n%s", out)
	c.must(10*time.Minute, "wait", "--for=condition=complete", "job/gateway-migrate", "--timeout=600s")
	c.must(10*time.Minute, "rollout", "status", "statefulset/postgres", "--timeout=600s")
	for _, d := range []string{"redis", "ocean", "weather", "airquality", "gateway"} {
		c.must(15*time.Minute, "rollout", "status", "deploy/"+d, "--timeout=900s")
	}
	out = c.must(time.Minute, "get", "pods", "-o", `jsonpath={range .items[?(@.status.phase=="Running")]}{.metadata.name} {.metadata.labels.app\.kubernetes\.io/name} ready={.status.conditions[?(@.type=="Ready")].status} readiness={.spec.containers[0].readinessProbe.httpGet.path}{.spec.containers[0].readinessProbe.exec.command[0]} liveness={.spec.containers[0].livenessProbe.httpGet.path}{.spec.containers[0].livenessProbe.tcpSocket.port}{.spec.containers[0].livenessProbe.exec.command[0]}{"\n"}{end}`)
	t.Logf("pods:\n%s", out)
	seen := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		seen[f[1]] = true
		if f[2] != "ready=True" || f[3] == "readiness=" || f[4] == "liveness=" {
			t.Errorf("pod %s: %s %s %s, want Ready with a readiness and a liveness probe", f[0], f[2], f[3], f[4])
		}
	}
	for _, app := range []string{"gateway", "ocean", "weather", "airquality", "redis", "postgres"} {
		if !seen[app] {
			t.Errorf("no running pod of %s (seen %v)", app, seen)
		}
	}
}

// serviceNames: from inside the gateway pod, each service answers at its Service name
// (cluster DNS, kube-proxy), and the gateway's own health of each service says so.
func (c *cluster) serviceNames(t *testing.T) {
	c.t = t
	for _, svc := range services {
		url := fmt.Sprintf("http://%s:%d/readyz", svc, ports[svc])
		out, err := c.fetch("deploy/gateway", url)
		if err != nil {
			t.Errorf("gateway pod -> %s: %v", url, err)
			continue
		}
		t.Logf("gateway pod -> %s: %.120s", url, out)
		code, body, err := c.get("/services/" + svc + "/health")
		if err != nil || code != http.StatusOK {
			t.Errorf("GET /services/%s/health through the gateway: %d %v %.300s", svc, code, err, body)
		}
	}
}

// readingsAndMCP: a readings request and an MCP tools/call through the gateway's
// Service; it returns the id of the ocean sensor used.
func (c *cluster) readingsAndMCP(t *testing.T) string {
	c.t = t
	id := c.sensorOf("service=ocean&sensor_type=buoy") // an NDBC buoy, as the README's tour
	code, body, err := c.get("/sensors/" + id + "/readings?days=1&limit=50")
	if err != nil || code != http.StatusOK || !strings.Contains(string(body), `"timestamp"`) {
		t.Fatalf("readings of %s: %d %v %.300s", id, code, err, body)
	}
	t.Logf("readings of %s: %d, %d bytes", id, code, len(body))
	code, body, err = c.call(http.MethodPost, c.gw+"/api/v1/sensors/"+id+"/mcp",
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ocean.latest_observation","arguments":{}}}`,
		http.Header{"X-Api-Key": {c.key}, "Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}})
	var rpc struct {
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &rpc) != nil || rpc.Result == nil || rpc.Result.IsError {
		t.Fatalf("MCP tools/call ocean.latest_observation: %d %v %.400s", code, err, body)
	}
	t.Logf("MCP tools/call ocean.latest_observation: %d %.160s", code, body)
	return id
}

// scaleOcean: kubectl scale to 3, every replica ready. The HorizontalPodAutoscaler owns
// the replica count too: its minimum goes to 3 as well, or it would scale back down once
// its 5 minute window passed.
func (c *cluster) scaleOcean(t *testing.T) {
	c.t = t
	c.must(time.Minute, "scale", "deploy/ocean", "--replicas=3")
	c.must(time.Minute, "patch", "hpa", "ocean", "--type=merge", "-p", `{"spec":{"minReplicas":3}}`)
	c.must(10*time.Minute, "rollout", "status", "deploy/ocean", "--timeout=600s")
	if p := c.pods("ocean"); len(p) != 3 {
		t.Fatalf("ocean pods: %v, want 3", p)
	}
}

// holders maps each ocean provider to the replicas whose ingest counter is non-zero.
func (c *cluster) holders() map[string][]string {
	m := map[string][]string{}
	for _, provider := range []string{"noaa-ndbc", "noaa-coops"} {
		m[provider] = nil
		for _, p := range c.pods("ocean") {
			if c.metric(p, "ocean", "sensorgate_ingest_readings_total", `provider="`+provider+`"`) > 0 {
				m[provider] = append(m[provider], p)
			}
		}
	}
	return m
}

// leases maps each ocean provider to the replicas whose /v1/health says they hold its
// lease.
func (c *cluster) leases() map[string][]string {
	c.t.Helper()
	m := map[string][]string{}
	for _, p := range c.pods("ocean") {
		out, err := c.fetch(p, "http://127.0.0.1:8081/v1/health")
		if err != nil {
			c.t.Fatal(err)
		}
		var h struct {
			Providers []struct {
				Slug  string `json:"slug"`
				Lease string `json:"lease"`
			} `json:"providers"`
		}
		if err := json.Unmarshal([]byte(out), &h); err != nil {
			c.t.Fatalf("%s /v1/health: %v %.300s", p, err, out)
		}
		for _, pr := range h.Providers {
			if pr.Lease == "held" {
				m[pr.Slug] = append(m[pr.Slug], p)
			}
		}
	}
	return m
}

// oneIngester: each provider's readings counter is non-zero on exactly one replica, and
// that replica's health says it holds the provider's lease (the others: standby).
func (c *cluster) oneIngester(t *testing.T) {
	c.t = t
	ingest, leases := c.holders(), c.leases()
	for _, provider := range []string{"noaa-ndbc", "noaa-coops"} {
		if len(ingest[provider]) != 1 || len(leases[provider]) != 1 || ingest[provider][0] != leases[provider][0] {
			t.Errorf("%s: ingested by %v, lease held by %v; want the same one replica", provider, ingest[provider], leases[provider])
		} else {
			t.Logf("%s ingested by %s only, which holds its lease", provider, ingest[provider][0])
		}
	}
}

// everyReplica: under 60 s of calls through the gateway, each ocean replica's own
// readings counter grows. On Kubernetes the gateway's resolver sees one address, the
// Service's ClusterIP, and kube-proxy picks a replica per connection: what spreads the
// calls is the gateway closing its idle keep-alive connections every 10 s, so the window
// spans several of those (25 s, as in the compose test, once left a replica with none).
func (c *cluster) everyReplica(t *testing.T, sensorID string) {
	c.t = t
	c.newKey("k8s-test-spread")
	reps := c.pods("ocean")
	before := map[string]float64{}
	for _, p := range reps {
		before[p] = c.readingsServed(p, "ocean")
	}
	got := c.load(sensorID, 60*time.Second, 3)
	share := map[string]float64{}
	for _, p := range reps {
		share[p] = c.readingsServed(p, "ocean") - before[p]
		if share[p] == 0 {
			t.Errorf("ocean replica %s served none of the readings calls", p)
		}
	}
	t.Logf("gateway answers %v; readings calls per replica %v", got, share)
	if n := failures(got); n > 0 {
		t.Errorf("%d readings calls failed: %v", n, got)
	}
}

// event is one reading of a stream: its SSE id (the cursor) and the reading's identity.
type event struct{ cursor, reading string }

// follow reads an SSE stream until ctx ends, sending each reading event.
func (c *cluster) follow(ctx context.Context, path, lastID string, out chan<- event) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.gw+"/api/v1"+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Api-Key", c.key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("stream %s: %d %.300s", path, resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var id, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && data != "":
			var r struct {
				Service string `json:"service_id"`
				ID      string `json:"id"`
			}
			if err := json.Unmarshal([]byte(data), &r); err == nil {
				select {
				case out <- event{cursor: id, reading: r.Service + "/" + r.ID}:
				case <-ctx.Done():
					return nil
				}
			}
			id, data = "", ""
		}
	}
	return nil
}

// stream is one open SSE connection and what it received.
type stream struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	events []event
	err    error
	done   chan struct{}
}

func (c *cluster) open(path, lastID string) *stream {
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{cancel: cancel, done: make(chan struct{})}
	ch := make(chan event)
	go func() {
		defer close(s.done)
		err := c.follow(ctx, path, lastID, ch)
		s.mu.Lock()
		if ctx.Err() == nil {
			s.err = err
		}
		s.mu.Unlock()
	}()
	go func() {
		for {
			select {
			case e := <-ch:
				s.mu.Lock()
				s.events = append(s.events, e)
				s.mu.Unlock()
			case <-s.done:
				return
			}
		}
	}()
	return s
}

func (s *stream) got() []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]event(nil), s.events...)
}

func (s *stream) close() { s.cancel(); <-s.done }

// waitFor waits until the stream has at least n events, up to d.
func (s *stream) waitFor(t *testing.T, what string, n int, d time.Duration) {
	deadline := time.Now().Add(d)
	for len(s.got()) < n {
		s.mu.Lock()
		err := s.err
		s.mu.Unlock()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d events after %s, want %d", what, len(s.got()), d, n)
		}
		time.Sleep(time.Second)
	}
}

// killMidStream: a control stream stays open throughout; a second stream is open when the
// pod that ingests NDBC is killed (no grace), is dropped, and resumes with its last id
// after a standby took the lease and stored more. The resumed stream must hold every
// reading the control stream received after the second stream's first, exactly once;
// the calls made meanwhile must not fail.
func (c *cluster) killMidStream(t *testing.T, sensorID string) {
	c.t = t
	c.newKey("k8s-test-stream")
	const path = "/readings/stream?service=ocean"
	control := c.open(path, "")
	defer control.close()
	s1 := c.open(path, "")
	s1.waitFor(t, "first stream", 2, 5*time.Minute)

	victims := c.leases()["noaa-ndbc"]
	if len(victims) != 1 {
		t.Fatalf("NDBC ingested by %v, want one replica", victims)
	}
	done := make(chan map[int]int)
	go func() { done <- c.load(sensorID, 20*time.Second, 2) }()
	time.Sleep(3 * time.Second)
	c.must(time.Minute, "delete", "pod", victims[0], "--grace-period=0", "--force")
	t.Logf("killed %s (the NDBC ingester) with %d events streamed", victims[0], len(s1.got()))
	got := <-done
	s1.close()
	first := s1.got()
	t.Logf("readings calls while it died: %v", got)
	if n := failures(got); n > 0 {
		t.Errorf("%d readings calls failed while an ocean replica died: %v", n, got)
	}

	// A survivor (or the replacement pod) takes the NDBC lease.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		h := c.leases()["noaa-ndbc"]
		if len(h) == 1 && h[0] != victims[0] {
			t.Logf("NDBC now ingested by %s", h[0])
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no survivor took the NDBC lease within 2 min: %v", h)
		}
		time.Sleep(5 * time.Second)
	}
	// The control stream sees readings stored after the kill; then resume.
	n := len(control.got())
	control.waitFor(t, "control stream after the kill", n+2, 5*time.Minute)
	s2 := c.open(path, first[len(first)-1].cursor)
	defer s2.close()

	// The control stream's readings from the first stream's first on must all arrive,
	// once, on the first stream or the resumed one.
	ctl := control.got()
	start := -1
	for i, e := range ctl {
		if e.reading == first[0].reading {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatalf("the control stream never received %s, the first stream's first reading", first[0].reading)
	}
	want := ctl[start:]
	deadline = time.Now().Add(time.Minute)
	for {
		seen := map[string]int{}
		for _, e := range append(first, s2.got()...) {
			seen[e.reading]++
		}
		var missing, dup []string
		for _, e := range want {
			if seen[e.reading] == 0 {
				missing = append(missing, e.reading)
			}
		}
		for r, k := range seen {
			if k > 1 {
				dup = append(dup, r)
			}
		}
		if len(dup) > 0 {
			t.Fatalf("readings received twice across the resume: %v", dup)
		}
		if len(missing) == 0 {
			t.Logf("%d readings: %d before the drop, %d after the resume, none missing, none twice", len(want), len(first), len(s2.got()))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d readings never arrived after the resume, e.g. %v", len(missing), len(want), missing[:min(5, len(missing))])
		}
		time.Sleep(2 * time.Second)
	}
}

// restartPostgres deletes the PostgreSQL pod; its StatefulSet brings it back on the same
// volume. The readings of a fixed past window are the same after, the API answers again
// within two minutes, and no gateway or service container restarted.
func (c *cluster) restartPostgres(t *testing.T, sensorID string) {
	c.t = t
	c.newKey("k8s-test-postgres")
	until := time.Now().UTC().Add(-time.Minute).Truncate(time.Minute)
	q := fmt.Sprintf("/sensors/%s/readings?since=%s&until=%s&limit=1000", sensorID,
		until.Add(-24*time.Hour).Format(time.RFC3339), until.Format(time.RFC3339))
	ids := func() ([]string, error) {
		code, body, err := c.get(q)
		if err != nil || code != http.StatusOK {
			return nil, fmt.Errorf("%d %v %.200s", code, err, body)
		}
		var page struct {
			Readings []struct {
				ID string `json:"id"`
			} `json:"readings"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, err
		}
		var out []string
		for _, r := range page.Readings {
			out = append(out, r.ID)
		}
		sort.Strings(out)
		return out, nil
	}
	before, err := ids()
	if err != nil || len(before) == 0 {
		t.Fatalf("readings before: %v (%d)", err, len(before))
	}
	restarts := c.restarts()
	c.must(3*time.Minute, "delete", "pod", "postgres-0")
	c.must(5*time.Minute, "rollout", "status", "statefulset/postgres", "--timeout=300s")
	deadline := time.Now().Add(2 * time.Minute)
	var after []string
	for {
		after, err = ids()
		code, _, err2 := c.get("/services/weather/health")
		if err == nil && err2 == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API does not answer within 2 min of the PostgreSQL restart: %v %v %d", err, err2, code)
		}
		time.Sleep(2 * time.Second)
	}
	if strings.Join(before, ",") != strings.Join(after, ",") {
		t.Errorf("readings of %s changed across the restart: %d before, %d after", q, len(before), len(after))
	} else {
		t.Logf("%d readings of a fixed day, the same before and after the restart", len(after))
	}
	if now := c.restarts(); fmt.Sprint(now) != fmt.Sprint(restarts) {
		t.Errorf("containers restarted when PostgreSQL did: before %v, after %v", restarts, now)
	}
}

// autoscale loads weather through its Service (readings pages, straight to the service with
// the internal token: the gateway's development keys are rate limited) until its
// HorizontalPodAutoscaler, reading CPU from metrics-server, raises the replica count.
func (c *cluster) autoscale(t *testing.T) {
	c.t = t
	ip := c.must(time.Minute, "get", "svc", "weather", "-o", "jsonpath={.spec.clusterIP}")
	base := fmt.Sprintf("http://%s:8082", ip)
	h := http.Header{"X-Internal-Token": {internalToken}}
	code, body, err := c.call(http.MethodGet, base+"/v1/sensors?limit=20", "", h)
	if err != nil || code != http.StatusOK {
		t.Fatalf("weather sensors: %d %v %.200s", code, err, body)
	}
	var page struct {
		Sensors []struct {
			ID string `json:"external_id"`
		} `json:"sensors"`
	}
	if err := json.Unmarshal(body, &page); err != nil || len(page.Sensors) == 0 {
		t.Fatalf("weather sensors: %v %.300s", err, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sent, failed atomic.Int64
	for w := range 6 {
		go func() {
			for i := w; ctx.Err() == nil; i++ {
				id := page.Sensors[i%len(page.Sensors)].ID
				url := fmt.Sprintf("%s/v1/sensors/%s/readings?days=2&limit=1000", base, id)
				code, _, err := c.call(http.MethodGet, url, "", h)
				sent.Add(1)
				if err != nil || code != http.StatusOK {
					failed.Add(1)
				}
			}
		}()
	}
	deadline := time.Now().Add(6 * time.Minute)
	for {
		out := c.must(time.Minute, "get", "hpa", "weather", "-o",
			`jsonpath={.status.currentMetrics[0].resource.current.averageUtilization} {.status.currentReplicas} {.status.desiredReplicas}`)
		t.Logf("hpa weather: utilization%%/replicas/desired %s (calls %d, failed %d)", out, sent.Load(), failed.Load())
		f := strings.Fields(out)
		if len(f) == 3 {
			util, _ := strconv.Atoi(f[0])
			desired, _ := strconv.Atoi(f[2])
			if util > 0 && desired > 1 {
				c.must(10*time.Minute, "rollout", "status", "deploy/weather", "--timeout=600s")
				t.Logf("weather scaled to %d replicas at %d%% CPU: %v", desired, util, c.pods("weather"))
				return
			}
		}
		if time.Now().After(deadline) {
			out, _ := c.kc(time.Minute, "describe", "hpa", "weather")
			t.Fatalf("the HPA did not scale weather up within 6 min:\n%s", out)
		}
		time.Sleep(10 * time.Second)
	}
}

// rollingUpdate sets a new image on airquality (the same binary under another tag,
// imported by scripts/k8s-test.sh) while calls run through the gateway: none fails
// (maxUnavailable 0, readiness, the preStop pause that drains endpoints first).
func (c *cluster) rollingUpdate(t *testing.T) {
	c.t = t
	c.newKey("k8s-test-rollout")
	id := c.sensorOf("service=airquality")
	done := make(chan map[int]int)
	go func() { done <- c.load(id, 90*time.Second, 3) }()
	time.Sleep(5 * time.Second)
	before := c.pods("airquality")
	c.must(time.Minute, "set", "image", "deploy/airquality", "airquality=sensorgate/airquality:k8s-test-v2")
	c.must(10*time.Minute, "rollout", "status", "deploy/airquality", "--timeout=600s")
	got := <-done
	after := c.pods("airquality")
	t.Logf("rollout %v -> %v; answers during it %v", before, after, got)
	if fmt.Sprint(before) == fmt.Sprint(after) {
		t.Errorf("the pods did not change: %v", after)
	}
	if n := failures(got); n > 0 {
		t.Errorf("%d calls failed during the rolling update: %v", n, got)
	}
	if got[http.StatusOK] == 0 {
		t.Errorf("no call answered during the rolling update: %v", got)
	}
}
