package readings

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// env is a gateway slice (the proxy handlers on a real HTTP server) in front of two real
// fake services, over a real catalog.
type env struct {
	gw      *httptest.Server
	ocean   *fakeService
	weather *fakeService
	cache   *Cache
	now     time.Time
}

type envOptions struct {
	cacheTTL time.Duration
	timeouts contract.Timeouts
	retries  int
	logger   *slog.Logger
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	gin.SetMode(gin.TestMode)
	now := time.Now().UTC().Truncate(time.Hour)
	e := &env{now: now}
	e.ocean = newFakeService(t, "ocean", map[string][]contract.Reading{
		"41001":    sampleReadings(ids.Sensor("ocean", "41001"), now, 48),
		"EMPTY":    nil,
		"ST 1+A:B": sampleReadings(ids.Sensor("ocean", "ST 1+A:B"), now, 1),
	})
	e.weather = newFakeService(t, "weather", map[string][]contract.Reading{
		"KSEA": sampleReadings(ids.Sensor("weather", "KSEA"), now, 3),
	})
	st := newCatalog(t, []catalogSensor{
		{"ocean", "41001", true}, {"ocean", "EMPTY", true}, {"ocean", "NOFEED", false}, {"ocean", "ST 1+A:B", true},
		{"ocean", "GONE", true}, // in the catalog, unknown to the service
		{"weather", "KSEA", true},
		{"ghost", "G1", true}, // a service this gateway has no URL for
	})
	clients, err := contract.NewClients(map[string]string{"ocean": e.ocean.url(), "weather": e.weather.url()},
		contract.Options{Timeouts: o.timeouts, Retries: o.retries, Logger: o.logger})
	if err != nil {
		t.Fatal(err)
	}
	e.cache, err = NewCache(CacheOptions{TTL: o.cacheTTL, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandlers(HandlerOptions{Clients: clients, Cache: e.cache, Resolve: resolver(st)})
	if err != nil {
		t.Fatal(err)
	}
	r := gin.New()
	r.UseRawPath = true
	r.Use(func(c *gin.Context) {
		c.Request = c.Request.WithContext(obs.WithRequestID(c.Request.Context(), "req-"+c.GetHeader("x-test-id")))
	})
	r.GET("/api/v1/sensors/:id/readings/latest", h.Latest())
	r.GET("/api/v1/sensors/:id/readings", jsonAnswer(h, contract.RouteReadings))
	r.GET("/api/v1/services/:id/health", h.ServiceHealth())
	e.gw = httptest.NewServer(r)
	t.Cleanup(e.gw.Close)
	return e
}

// jsonAnswer serves route's answer in JSON as package render does for format=json.
func jsonAnswer(h *Handlers, route Route) gin.HandlerFunc {
	return func(c *gin.Context) {
		resp, err := h.Answer(c.Request.Context(), route, c.Param("id"), c.Request.URL.RawQuery)
		if err != nil {
			h.fail(c, err)
			return
		}
		status, body := h.Reply(ginHeader(c.Writer.Header()), resp, c.GetHeader("If-None-Match"))
		c.Writer.WriteHeader(status)
		_, _ = c.Writer.Write(body)
	}
}

type reply struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
}

func (e *env) get(t *testing.T, path string, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.gw.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{Timeout: 20 * time.Second}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, b, time.Since(start)}
}

func (r reply) code(t *testing.T) string {
	t.Helper()
	var e struct{ Error, Code string }
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.body, err)
	}
	if e.Code != "" && e.Error == "" {
		t.Errorf("error body %s has a code but no message", r.body)
	}
	return e.Code
}

func TestReadingsEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{cacheTTL: 0})
	oceanID := ids.Sensor("ocean", "41001").String()
	tests := []struct {
		name, path   string
		status       int
		code         string
		upstreamPath string // the exact request the service must see; "" none
		check        func(t *testing.T, body []byte)
	}{
		{name: "latest by UUID", path: "/api/v1/sensors/" + oceanID + "/readings/latest", status: 200,
			upstreamPath: "/v1/sensors/41001/readings/latest", check: func(t *testing.T, b []byte) {
				var lr contract.LatestResponse
				mustJSON(t, b, &lr)
				if lr.SensorID != oceanID || lr.ExternalID != "41001" || lr.ServiceID != "ocean" || lr.Provenance.SourceID != "41001" || lr.Provenance.SensorID != oceanID {
					t.Errorf("envelope = %+v", lr)
				}
				if lr.Reading.ID == "" || len(lr.Reading.Measurements) == 0 {
					t.Errorf("reading = %+v", lr.Reading)
				}
			}},
		{name: "latest by external id, lower case", path: "/api/v1/sensors/41001/readings/latest?data_format=raw&x=1", status: 200,
			upstreamPath: "/v1/sensors/41001/readings/latest?data_format=raw"},
		{name: "readings paginated", path: "/api/v1/sensors/41001/readings?limit=10&page=2&sort=desc&junk=%00", status: 200,
			upstreamPath: "/v1/sensors/41001/readings?limit=10&page=2&sort=desc", check: func(t *testing.T, b []byte) {
				var rr contract.ReadingsResponse
				mustJSON(t, b, &rr)
				if len(rr.Readings) != 10 || rr.Pagination != (contract.Pagination{Page: 2, Limit: 10, Total: 48, TotalPages: 5}) {
					t.Errorf("readings %d, pagination %+v", len(rr.Readings), rr.Pagination)
				}
			}},
		{name: "empty range is 200 with []", path: "/api/v1/sensors/41001/readings?since=2001-01-01&until=2001-01-02", status: 200,
			upstreamPath: "/v1/sensors/41001/readings?since=2001-01-01&until=2001-01-02", check: func(t *testing.T, b []byte) {
				if !bytes.Contains(b, []byte(`"readings":[]`)) {
					t.Errorf("body %s, want an empty readings array", b)
				}
			}},
		{name: "id with a space, plus and colon, escaped as it was", path: "/api/v1/sensors/ST%201+A:B/readings/latest", status: 200,
			upstreamPath: "/v1/sensors/ST%201+A:B/readings/latest"},
		{name: "no readings", path: "/api/v1/sensors/EMPTY/readings/latest", status: 404, code: "no_readings", upstreamPath: "/v1/sensors/EMPTY/readings/latest"},
		{name: "unknown sensor", path: "/api/v1/sensors/nope/readings/latest", status: 404, code: "sensor_not_found"},
		{name: "unknown sensor readings", path: "/api/v1/sensors/nope/readings", status: 404, code: "sensor_not_found"},
		{name: "unknown UUID", path: "/api/v1/sensors/" + ids.Sensor("ocean", "zzz").String() + "/readings", status: 404, code: "sensor_not_found"},
		{name: "no feed, latest", path: "/api/v1/sensors/NOFEED/readings/latest", status: 404, code: "no_feed"},
		{name: "no feed, readings", path: "/api/v1/sensors/NOFEED/readings", status: 404, code: "no_feed"},
		{name: "service forgot the sensor", path: "/api/v1/sensors/GONE/readings", status: 404, code: "sensor_not_found", upstreamPath: "/v1/sensors/GONE/readings"},
		{name: "service not configured", path: "/api/v1/sensors/G1/readings/latest", status: 502, code: "upstream_unavailable"},
		{name: "bad data_format", path: "/api/v1/sensors/41001/readings/latest?data_format=xml", status: 400, code: "invalid_parameter"},
		{name: "days with since", path: "/api/v1/sensors/41001/readings?days=1&since=2026-01-01", status: 400, code: "invalid_parameter"},
		{name: "unknown parameter", path: "/api/v1/sensors/41001/readings?parameter=foo", status: 400, code: "invalid_parameter"},
		{name: "dot-dot id", path: "/api/v1/sensors/../readings", status: 400, code: "invalid_parameter"},
		{name: "encoded dot-dot id", path: "/api/v1/sensors/%2e%2e/readings", status: 400, code: "invalid_parameter"},
		{name: "encoded slash", path: "/api/v1/sensors/a%2fb/readings/latest", status: 400, code: "invalid_parameter"},
		{name: "encoded NUL", path: "/api/v1/sensors/a%00b/readings", status: 400, code: "invalid_parameter"},
		{name: "encoded percent", path: "/api/v1/sensors/a%25b/readings", status: 400, code: "invalid_parameter"},
		{name: "over-long id", path: "/api/v1/sensors/" + strings.Repeat("A", 200) + "/readings", status: 400, code: "invalid_parameter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.ocean.calls.Load()
			r := e.get(t, tt.path, "x-test-id", tt.name)
			if r.status != tt.status {
				t.Fatalf("GET %s = %d %s, want %d", tt.path, r.status, r.body, tt.status)
			}
			if tt.code != "" {
				if got := r.code(t); got != tt.code {
					t.Errorf("code = %q, want %q (%s)", got, tt.code, r.body)
				}
				if r.header.Get("Cache-Control") != "no-store" {
					t.Errorf("error Cache-Control = %q, want no-store", r.header.Get("Cache-Control"))
				}
			}
			called := e.ocean.calls.Load() != before
			if tt.upstreamPath == "" && called {
				t.Errorf("the service was called (%s); the gateway should have answered alone", e.ocean.lastPath())
			}
			if tt.upstreamPath != "" {
				if !called || e.ocean.lastPath() != tt.upstreamPath {
					t.Errorf("service saw %q, want %q", e.ocean.lastPath(), tt.upstreamPath)
				}
				if e.ocean.lastRequestID() != "req-"+tt.name {
					t.Errorf("service saw request id %q, want %q", e.ocean.lastRequestID(), "req-"+tt.name)
				}
			}
			if tt.check != nil {
				tt.check(t, r.body)
			}
		})
	}
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

func TestPassThroughIsByteExact(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	r := e.get(t, "/api/v1/sensors/41001/readings?limit=5")
	direct, err := http.Get(e.ocean.url() + "/v1/sensors/41001/readings?limit=5")
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Body.Close()
	want, _ := io.ReadAll(direct.Body)
	if !bytes.Equal(r.body, want) {
		t.Fatalf("gateway body differs from the service's:\n%s\n%s", r.body, want)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
}

func TestCacheETagAndCoalescing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{cacheTTL: 30 * time.Second})
	path := "/api/v1/sensors/KSEA/readings/latest"

	var wg sync.WaitGroup
	bodies := make([][]byte, 50)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.get(t, path)
			if r.status != 200 {
				t.Errorf("burst request %d: %d %s", i, r.status, r.body)
			}
			bodies[i] = r.body
		}()
	}
	wg.Wait()
	if n := e.weather.calls.Load(); n != 1 {
		t.Fatalf("a burst of 50 made %d upstream calls, want 1", n)
	}
	for i := range bodies {
		if !bytes.Equal(bodies[i], bodies[0]) {
			t.Fatalf("burst answers differ")
		}
	}
	r := e.get(t, path)
	etag := r.header.Get("ETag")
	if etag == "" || !strings.HasPrefix(etag, `"`) || r.header.Get("Cache-Control") != "private, max-age=30" {
		t.Fatalf("ETag %q, Cache-Control %q", etag, r.header.Get("Cache-Control"))
	}
	tests := []struct {
		inm    string
		status int
	}{
		{etag, 304},
		{"W/" + etag, 304},
		{`"other", ` + etag, 304},
		{"*", 304},
		{`"other"`, 200},
	}
	for _, tt := range tests {
		r := e.get(t, path, "If-None-Match", tt.inm)
		if r.status != tt.status {
			t.Errorf("If-None-Match %s: %d, want %d", tt.inm, r.status, tt.status)
		}
		if tt.status == 304 && (len(r.body) != 0 || r.header.Get("ETag") != etag) {
			t.Errorf("304 with body %q ETag %q", r.body, r.header.Get("ETag"))
		}
	}
	if n := e.weather.calls.Load(); n != 1 {
		t.Errorf("cached answers made %d upstream calls in all, want 1", n)
	}
	// Spellings of one query share the answer; a repeated spelling skips parsing, an
	// invalid one is refused even though a valid one is cached.
	before := e.weather.calls.Load()
	for _, q := range []string{"?sort=desc&limit=5", "?sort=desc&limit=5", "?limit=5&sort=desc", "?limit=5&sort=desc&junk=1"} {
		if r := e.get(t, "/api/v1/sensors/KSEA/readings"+q); r.status != 200 {
			t.Fatalf("readings%s: %d %s", q, r.status, r.body)
		}
	}
	if n := e.weather.calls.Load() - before; n != 1 {
		t.Errorf("four spellings of one query made %d upstream calls, want 1", n)
	}
	if r := e.get(t, "/api/v1/sensors/KSEA/readings?sort=desc&limit=5&data_format=xml"); r.status != 400 {
		t.Errorf("invalid variant of a cached query: %d, want 400", r.status)
	}
	hits := testutil.ToFloat64(e.cache.lookups.WithLabelValues("hit"))
	if hits < 5 {
		t.Errorf("cache hits = %v, want at least 5", hits)
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		mode      int32
		timeouts  contract.Timeouts
		status    int
		code      string
		wantCalls int64
	}{
		{"503 once is retried", mode503Once, contract.Timeouts{}, 200, "", 2},
		{"500 is not retried", mode500, contract.Timeouts{}, 502, "upstream_unavailable", 1},
		{"non-JSON 404 is the gateway's problem", modeNonJSON404, contract.Timeouts{}, 502, "upstream_bad_response", 1},
		// 100ms cannot hold the longest backoff (200ms) plus an attempt: no retry.
		{"no retry past the deadline", mode503Once, contract.Timeouts{Latest: 100 * time.Millisecond}, 502, "upstream_unavailable", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{timeouts: tt.timeouts})
			e.ocean.mode.Store(tt.mode)
			r := e.get(t, "/api/v1/sensors/41001/readings/latest")
			if r.status != tt.status {
				t.Fatalf("status %d %s, want %d", r.status, r.body, tt.status)
			}
			if tt.code != "" && r.code(t) != tt.code {
				t.Errorf("code %s, want %s", r.body, tt.code)
			}
			if n := e.ocean.calls.Load(); n != tt.wantCalls {
				t.Errorf("service calls = %d, want %d", n, tt.wantCalls)
			}
		})
	}
}

// TestServiceDownAndBack stops a real service: its sensors get 502 well before the
// deadline, the other service's do not notice, and it recovers when the service is back.
func TestServiceDownAndBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{timeouts: contract.Timeouts{Latest: 5 * time.Second}})
	ocean, weather := "/api/v1/sensors/41001/readings/latest", "/api/v1/sensors/KSEA/readings/latest"
	if r := e.get(t, ocean); r.status != 200 {
		t.Fatalf("before: %d", r.status)
	}
	e.ocean.stop()
	r := e.get(t, ocean)
	if r.status != 502 || r.code(t) != "upstream_unavailable" {
		t.Fatalf("service down: %d %s, want 502 upstream_unavailable", r.status, r.body)
	}
	if r.took >= 5*time.Second {
		t.Errorf("502 took %s, as long as the deadline: a refused connection must fail fast", r.took)
	}
	t.Logf("502 for a stopped service after %s (retries included)", r.took)
	if r := e.get(t, weather); r.status != 200 {
		t.Fatalf("other service while ocean is down: %d %s", r.status, r.body)
	}
	hr := e.get(t, "/api/v1/services/ocean/health")
	var h ProbeHealth
	mustJSON(t, hr.body, &h)
	if hr.status != 200 || h.Status != "down" || h.Source != "gateway" || h.ServiceID != "ocean" || h.Detail == "" {
		t.Errorf("health of a stopped service: %d %s, want 200 status down from the gateway", hr.status, hr.body)
	}
	e.ocean.start()
	if r := e.get(t, ocean); r.status != 200 {
		t.Fatalf("after restart: %d %s", r.status, r.body)
	}
	hr = e.get(t, "/api/v1/services/ocean/health")
	mustJSON(t, hr.body, &h)
	if h.Status != "ok" {
		t.Errorf("health after restart: %s", hr.body)
	}
}

// TestHangingServiceTimesOut: a service that accepts and never answers gives 504 at the
// configured deadline, and its health is down, not a hung client.
func TestHangingServiceTimesOut(t *testing.T) {
	t.Parallel()
	deadline := 300 * time.Millisecond
	e := newEnv(t, envOptions{timeouts: contract.Timeouts{Latest: deadline, Readings: deadline, Health: deadline}})
	e.ocean.mode.Store(modeHang)
	for _, p := range []string{"/api/v1/sensors/41001/readings/latest", "/api/v1/sensors/41001/readings"} {
		r := e.get(t, p)
		if r.status != 504 || r.code(t) != "upstream_timeout" {
			t.Fatalf("%s on a hanging service: %d %s, want 504 upstream_timeout", p, r.status, r.body)
		}
		if r.took < deadline {
			t.Errorf("504 after %s, before the %s deadline", r.took, deadline)
		}
		t.Logf("%s: 504 after %s (deadline %s)", p, r.took, deadline)
	}
	hr := e.get(t, "/api/v1/services/ocean/health")
	if hr.status != 200 || !bytes.Contains(hr.body, []byte(`"status":"down"`)) {
		t.Errorf("health of a hanging service: %d %s", hr.status, hr.body)
	}
	if r := e.get(t, "/api/v1/sensors/KSEA/readings"); r.status != 200 {
		t.Errorf("other service while ocean hangs: %d", r.status)
	}
}

func TestServiceHealth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	r := e.get(t, "/api/v1/services/weather/health")
	var h contract.Health
	mustJSON(t, r.body, &h)
	if r.status != 200 || h.ServiceID != "weather" || h.Status != "ok" || r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("health: %d %v %s", r.status, r.header, r.body)
	}
	r = e.get(t, "/api/v1/services/nope/health")
	if r.status != 404 || r.code(t) != "not_found" {
		t.Errorf("unknown service health: %d %s", r.status, r.body)
	}
}

func TestCacheOptions(t *testing.T) {
	t.Parallel()
	for _, ttl := range []time.Duration{-time.Second, 2 * time.Minute} {
		if _, err := NewCache(CacheOptions{TTL: ttl}); err == nil {
			t.Errorf("TTL %s accepted", ttl)
		}
	}
	now := time.Unix(1000, 0)
	c, err := NewCache(CacheOptions{TTL: 2 * time.Second, MaxItems: 2, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	fetches := 0
	fetch := func(status int) func(context.Context) (*contract.Response, error) {
		return func(context.Context) (*contract.Response, error) {
			fetches++
			return contract.NewResponse(status, "", []byte("x"), now), nil
		}
	}
	ctx := context.Background()
	steps := []struct {
		key         string
		status      int
		advance     time.Duration
		wantFetches int
	}{
		{"a", 200, 0, 1},
		{"a", 200, time.Second, 1}, // fresh
		{"a", 200, time.Second, 2}, // 2s old: stale
		{"e", 500, 0, 3},           // errors-as-status are not kept
		{"e", 500, 0, 4},
		{"n", 404, 0, 5},
		{"n", 404, 0, 5}, // 404 kept
		{"z", 200, 0, 6}, // third key, cache of 2: something is evicted
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		if _, err := c.Do(ctx, s.key, fetch(s.status)); err != nil {
			t.Fatal(err)
		}
		if fetches != s.wantFetches {
			t.Fatalf("step %d (%s): fetches %d, want %d", i, s.key, fetches, s.wantFetches)
		}
	}
	if c.Len() > 2 {
		t.Errorf("Len = %d, want at most 2", c.Len())
	}
	if _, err := c.Do(ctx, "err", func(context.Context) (*contract.Response, error) { return nil, fmt.Errorf("boom") }); err == nil {
		t.Error("fetch error not returned")
	}
}

func TestForwardMatchesValuesEncode(t *testing.T) {
	t.Parallel()
	for _, params := range [][]string{readingsParams, latestParams} {
		if !slices.IsSorted(params) {
			t.Fatalf("params %v are not sorted: forward would not be canonical", params)
		}
	}
	for _, q := range []string{
		"", "limit=2", "since=2001-01-01T00:00:00Z&limit=2&x=1", "parameter=a+b&parameter=c&sort=desc&page=3",
		"until=2026-01-01T00%3A00%3A00%2B01%3A00&days=7&data_format=raw", "limit=&page=1",
	} {
		v, err := url.ParseQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		want := url.Values{}
		for _, p := range readingsParams {
			if s := v.Get(p); s != "" {
				want.Set(p, s)
			}
		}
		if got := forward(v, readingsParams); got != want.Encode() {
			t.Errorf("forward(%q) = %q, want %q", q, got, want.Encode())
		}
	}
}
