package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sensorgate/sensorgate/gateway/api"
	"github.com/sensorgate/sensorgate/pkg/obs"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// TestConcurrentClientsGetTheirOwnAnswers runs 48 keep-alive clients for several seconds
// against a real gateway in front of two real service processes: random sensors by UUID
// and by external id, both readings routes, trailing slashes, long query strings, and
// requests with odd methods (PUT, PATCH, OPTIONS, HEAD, a 300-byte method) on the same
// connections. Every 2xx readings answer must be the requested sensor's: a key or buffer
// shared between requests would hand one client another's data (the fasthttp build did).
// Then /metrics must parse, with method labels from the fixed set and route labels from
// the registered routes only. Under -race the gateway process is built with the race
// detector and its log must not report a race.
func TestConcurrentClientsGetTheirOwnAnswers(t *testing.T) {
	t.Parallel()
	ocean := startService(t, "ocean")
	weather := startService(t, "weather")
	g := gatewayEnv{addr: testenv.FreeAddr(t), databaseURL: testenv.Postgres(t), redisURL: testenv.StartRedis(t).URL(),
		env: "production", services: "ocean=" + ocean.url + ",weather=" + weather.url,
		extra: []string{"RATE_LIMIT_PLANS=e2e=100000000/h"}}
	key := createKey(t, g, "e2e")
	gwBin := "gateway"
	if raceEnabled {
		gwBin = "gateway-race"
	}
	gp := startProc(t, "gateway", bin(t, gwBin), g.list())
	gw := "http://" + g.addr
	gp.WaitReady(t, gw+"/healthz", 60*time.Second)
	sensorOf(t, gw, key, "ocean")
	sensorOf(t, gw, key, "weather")
	var page struct{ Sensors []sensorItem }
	r := get(gw+"/api/v1/sensors?limit=1000", "x-api-key", key)
	if r.status != 200 || json.Unmarshal(r.body, &page) != nil {
		t.Fatalf("sensor list: %d %s", r.status, r.body)
	}
	var sensors []sensorItem
	for _, s := range page.Sensors {
		if s.FeedID != "" {
			sensors = append(sensors, s)
		}
	}
	if len(sensors) < 4 {
		t.Fatalf("want at least 4 sensors with a feed, got %d", len(sensors))
	}

	const clients = 48
	duration := 5 * time.Second
	if testing.Short() {
		duration = 2 * time.Second
	}
	var (
		checked, answers2xx, others atomic.Int64
		mu                          sync.Mutex
		wrong                       []string
		perSensor                   = map[string]int{}
	)
	longValue := strings.Repeat("x", 3000)
	longMethod := strings.Repeat("M", 300)
	// At least duration, and on until minChecked answers were judged (a race-built gateway
	// on a loaded machine is slow), but never past hardStop.
	const minChecked = 200
	stop, hardStop := time.Now().Add(duration), time.Now().Add(duration+90*time.Second)
	running := func() bool {
		now := time.Now()
		return now.Before(stop) || (checked.Load() < minChecked && now.Before(hardStop))
	}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			// One connection per client, kept alive across all of its requests.
			tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
			for running() {
				s := sensors[rng.IntN(len(sensors))]
				ref := s.ID
				if rng.IntN(2) == 0 {
					ref = s.ExternalID
				}
				path := "/api/v1/sensors/" + ref + "/readings"
				latest := rng.IntN(2) == 0
				if latest {
					path += "/latest"
				}
				if rng.IntN(3) == 0 {
					path += "/"
				}
				q := []string{}
				if !latest && rng.IntN(2) == 0 {
					q = append(q, "limit="+strconv.Itoa(1+rng.IntN(5)))
				}
				if rng.IntN(5) == 0 {
					q = append(q, "junk"+strconv.Itoa(rng.IntN(1000))+"="+longValue[:100+rng.IntN(len(longValue)-100)])
				}
				if len(q) > 0 {
					path += "?" + strings.Join(q, "&")
				}
				method := http.MethodGet
				switch n := rng.IntN(20); {
				case n == 0:
					method = http.MethodPut
				case n == 1:
					method = http.MethodPatch
				case n == 2:
					method = http.MethodOptions
				case n == 3:
					method = longMethod
				case n == 4:
					method = http.MethodHead
				case n == 5:
					path = "/api/v1/nowhere/" + ref + "?" + longValue[:rng.IntN(len(longValue))]
				}
				var body io.Reader
				if method == http.MethodPut || method == http.MethodPatch {
					body = strings.NewReader(`{"x":1}`)
				}
				req, err := http.NewRequestWithContext(context.Background(), method, gw+path, body)
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("x-api-key", key)
				resp, err := hc.Do(req)
				if err != nil {
					t.Errorf("%s %s: %v", clip(method), clip(path), err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil {
					t.Errorf("%s %s: reading the body: %v", clip(method), clip(path), err)
					return
				}
				if resp.StatusCode/100 != 2 || method != http.MethodGet || strings.Contains(path, "/nowhere/") {
					if resp.StatusCode/100 == 2 && method != http.MethodGet && method != http.MethodOptions {
						mu.Lock()
						wrong = append(wrong, fmt.Sprintf("%s %s answered %d", clip(method), clip(path), resp.StatusCode))
						mu.Unlock()
					}
					others.Add(1)
					continue
				}
				answers2xx.Add(1)
				var got struct {
					SensorID   string `json:"sensor_id"`
					ExternalID string `json:"external_id"`
				}
				if err := json.Unmarshal(b, &got); err != nil {
					mu.Lock()
					wrong = append(wrong, fmt.Sprintf("GET %s: %d with a body that is not JSON: %.200s", clip(path), resp.StatusCode, b))
					mu.Unlock()
					continue
				}
				checked.Add(1)
				mu.Lock()
				if got.SensorID != s.ID || got.ExternalID != s.ExternalID {
					wrong = append(wrong, fmt.Sprintf("GET %s (sensor %s / %s) answered sensor %s / %s", clip(path), s.ID, s.ExternalID, got.SensorID, got.ExternalID))
				}
				perSensor[s.ID]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d clients for %s at least: %d readings answers checked (2xx), %d other answers, %d sensors", clients, duration, checked.Load(), others.Load(), len(perSensor))
	for i, w := range wrong {
		if i == 20 {
			t.Errorf("... and %d more", len(wrong)-20)
			break
		}
		t.Error(w)
	}
	if checked.Load() < minChecked || len(perSensor) < 2 {
		t.Fatalf("too few readings answers to judge: %d over %d sensors", checked.Load(), len(perSensor))
	}

	// The metrics scrape parses, and its labels come from fixed sets.
	m := get(gw + obs.PathMetrics)
	if m.status != 200 {
		t.Fatalf("/metrics: %d %s", m.status, m.body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(m.body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	allowedMethods := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", obs.MethodOther}
	noop := func(*gin.Context) {}
	routes := api.Templates(api.Deps{
		MetricsHandler: http.NotFoundHandler(),
		Proxy:          api.ProxyHandlers{Latest: noop, Readings: noop, Aggregate: noop, ServiceHealth: noop},
		MCP:            api.MCPHandlers{Service: noop, Sensor: noop, Project: noop, Registry: noop, Catalog: noop},
	})
	routes = append(routes, obs.UnmatchedRoute)
	fam := fams["sensorgate_http_request_duration_seconds"]
	if fam == nil {
		t.Fatal("no sensorgate_http_request_duration_seconds in /metrics")
	}
	seen := map[string]bool{}
	for _, mt := range fam.GetMetric() {
		for _, l := range mt.GetLabel() {
			switch l.GetName() {
			case "method":
				if !slices.Contains(allowedMethods, l.GetValue()) {
					t.Errorf("method label %q is not in the fixed set", clip(l.GetValue()))
				}
				seen["method="+l.GetValue()] = true
			case "route":
				if !slices.Contains(routes, l.GetValue()) {
					t.Errorf("route label %q is not a registered route", clip(l.GetValue()))
				}
				seen["route="+l.GetValue()] = true
			}
		}
	}
	for _, want := range []string{"method=" + obs.MethodOther, "method=PUT", "route=/api/v1/sensors/:id/readings/latest", "route=" + obs.UnmatchedRoute} {
		if !seen[want] {
			t.Errorf("no series with %s after the load", want)
		}
	}
	if raceEnabled {
		gp.Kill()
		if strings.Contains(gp.Log(), "DATA RACE") {
			t.Errorf("the race detector reported a race in the gateway:\n%s", gp.Tail(6000))
		}
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
