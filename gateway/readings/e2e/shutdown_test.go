package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// slowService is a real HTTP server standing in for a backing service whose readings,
// health and MCP answers each take delay; inFlight receives one value per call that has
// arrived, so a test knows its requests reached the service.
func slowService(t *testing.T, delay time.Duration, inFlight chan<- string) string {
	t.Helper()
	mux := http.NewServeMux()
	j := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	wait := func(r *http.Request, what string) bool {
		select {
		case inFlight <- what:
		default:
		}
		select {
		case <-time.After(delay):
			return true
		case <-r.Context().Done():
			return false
		}
	}
	mux.HandleFunc("GET /v1/meta", func(w http.ResponseWriter, r *http.Request) {
		j(w, contract.ServiceMeta{ID: "slow", Name: "Slow service", Domain: "test", TemporalPattern: "periodic", Status: "active",
			Providers: []contract.Provider{{Slug: "slowprov", Name: "Slow provider"}},
			Feeds:     []contract.Feed{{Slug: "slow-feed", Name: "Slow feed", ProviderSlug: "slowprov", Domain: "test", TemporalPattern: "periodic", FeedType: "timeseries"}}})
	})
	mux.HandleFunc("GET /v1/sensors", func(w http.ResponseWriter, r *http.Request) {
		j(w, contract.StationPage{Sensors: []contract.Station{{ExternalID: "SLOW1", Name: "Slow station", SensorType: "buoy", Status: "active",
			DataTypes: []string{"wave_height_m"}, ProviderSlug: "slowprov", FeedSlug: "slow-feed", UpdatedAt: contract.Time{Time: time.Now()}}},
			Pagination: contract.NewPagination(1, 100, 1), ServerTime: contract.Time{Time: time.Now()}})
	})
	health := contract.Health{ServiceID: "slow", Status: "ok", Providers: []contract.ProviderHealth{}}
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(contract.HeaderRequestID) == "" || !strings.HasPrefix(r.Header.Get(contract.HeaderRequestID), "shutdown-") {
			j(w, health) // the gateway's own probe: at once
			return
		}
		if wait(r, "health") {
			j(w, health)
		}
	})
	mux.HandleFunc("GET /v1/sensors/{id}/readings/latest", func(w http.ResponseWriter, r *http.Request) {
		if wait(r, "readings") {
			j(w, contract.LatestResponse{ExternalID: "SLOW1", Name: "Slow station", ServiceID: "slow"})
		}
	})
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		if wait(r, "mcp") {
			j(w, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"tools": []any{}}})
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestGracefulShutdown starts a real gateway process, puts a readings call, a service
// health call and an MCP call in flight (each takes 2 s at the service), sends SIGTERM, and
// requires: /readyz answers 503 during SHUTDOWN_DELAY, new connections are refused after
// it, the three requests complete with their answers, and the process exits 0.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	const delay = 2 * time.Second
	inFlight := make(chan string, 16)
	slow := slowService(t, delay, inFlight)
	g := gatewayEnv{addr: testenv.FreeAddr(t), databaseURL: testenv.Postgres(t), redisURL: testenv.StartRedis(t).URL(),
		env: "production", services: "slow=" + slow,
		extra: []string{"RATE_LIMIT_PLANS=e2e=1000000/h", "UPSTREAM_TIMEOUT=10s", "UPSTREAM_HEALTH_TIMEOUT=10s",
			"SHUTDOWN_DELAY=1s", "SHUTDOWN_TIMEOUT=10s", "LOG_LEVEL=info"}}
	key := createKey(t, g, "e2e")
	gp := startProc(t, "gateway", bin(t, "gateway"), g.list())
	gw := "http://" + g.addr
	gp.WaitReady(t, gw+"/readyz", 60*time.Second)
	sn := sensorOf(t, gw, key, "slow")

	type result struct {
		what   string
		status int
		body   string
		err    error
	}
	results := make(chan result, 3)
	var wg sync.WaitGroup
	send := func(what, method, path, body string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rd io.Reader
			if body != "" {
				rd = strings.NewReader(body)
			}
			req, _ := http.NewRequestWithContext(context.Background(), method, gw+path, rd)
			req.Header.Set("x-api-key", key)
			req.Header.Set("X-Request-Id", "shutdown-"+what)
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
			}
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
			if err != nil {
				results <- result{what: what, err: err}
				return
			}
			b, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			results <- result{what, resp.StatusCode, string(b), err}
		}()
	}
	send("readings", http.MethodGet, "/api/v1/sensors/"+sn.ID+"/readings/latest", "")
	send("health", http.MethodGet, "/api/v1/services/slow/health", "")
	send("mcp", http.MethodPost, "/api/v1/services/slow/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	arrived := map[string]bool{}
	for len(arrived) < 3 {
		select {
		case w := <-inFlight:
			arrived[w] = true
		case r := <-results:
			t.Fatalf("%s answered before shutdown: %d %s %v", r.what, r.status, r.body, r.err)
		case <-time.After(20 * time.Second):
			t.Fatalf("only %v reached the service", arrived)
		}
	}
	signalled := time.Now()
	gp.Signal(t, syscall.SIGTERM)

	// During SHUTDOWN_DELAY: still serving, /readyz says 503.
	time.Sleep(200 * time.Millisecond)
	r := get(gw + "/readyz")
	// /readyz names components and states only (docs/security.md); the reason is logged.
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), `"shutdown":"down"`) {
		t.Errorf("/readyz during the shutdown delay: %d %s, want 503 naming the shutdown", r.status, r.body)
	}
	// After it: no new connections.
	time.Sleep(time.Until(signalled.Add(1500 * time.Millisecond)))
	if c, err := net.DialTimeout("tcp", g.addr, time.Second); err == nil {
		_ = c.Close()
		t.Errorf("the gateway still accepts connections after the shutdown delay")
	}

	wg.Wait()
	close(results)
	for r := range results {
		if r.err != nil || r.status != http.StatusOK {
			t.Errorf("%s in flight at SIGTERM: %d %s %v; want it answered", r.what, r.status, r.body, r.err)
			continue
		}
		want := map[string]string{"readings": `"external_id":"SLOW1"`, "health": `"service_id":"slow"`, "mcp": `"tools":[]`}[r.what]
		if !strings.Contains(r.body, want) {
			t.Errorf("%s: body %s lacks %s", r.what, r.body, want)
		}
	}
	exited, err := gp.Wait(20 * time.Second)
	if !exited {
		t.Fatal("the gateway did not exit within 20 s of SIGTERM")
	}
	if err != nil {
		t.Errorf("gateway exited with %v, want status 0", err)
	}
	t.Logf("exited %s after SIGTERM", time.Since(signalled).Round(10*time.Millisecond))
}
