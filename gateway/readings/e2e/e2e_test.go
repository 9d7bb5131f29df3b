package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

func randomKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "sg_dev_" + hex.EncodeToString(b)
}

func codeOf(b []byte) string {
	var e apierr.Error
	_ = json.Unmarshal(b, &e)
	return e.Code
}

// TestTwoGatewaysShareOneBudget: two gateway processes on one Redis, one development key
// (1000 requests an hour), 1500 requests spread over both: exactly 1000 pass.
func TestTwoGatewaysShareOneBudget(t *testing.T) {
	t.Parallel()
	rs := testenv.StartRedis(t)
	g := gatewayEnv{databaseURL: testenv.Postgres(t), redisURL: rs.URL(), env: "development", devKey: randomKey(),
		services: "ocean=http://127.0.0.1:1"} // no service needed: the catalog answers
	var urls []string
	for i := range 2 {
		g.addr = testenv.FreeAddr(t)
		startProc(t, fmt.Sprintf("gateway%d", i+1), bin(t, "gateway"), g.list()).WaitReady(t, "http://"+g.addr+"/healthz", 60*time.Second)
		urls = append(urls, "http://"+g.addr+"/api/v1/sensors/types")
	}

	var allowed, limited atomic.Int64
	var wg sync.WaitGroup
	jobs := make(chan int)
	start := time.Now()
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				r := get(urls[i%2], "x-api-key", g.devKey)
				switch r.status {
				case 200:
					allowed.Add(1)
				case 429:
					limited.Add(1)
					if r.header.Get("Retry-After") == "" || codeOf(r.body) != "rate_limited" {
						t.Errorf("429 without Retry-After or code rate_limited: %v %s", r.header, r.body)
					}
				default:
					t.Errorf("request %d: %d %s %v", i, r.status, r.body, r.err)
				}
				if r.err == nil && (r.header.Get("X-Ratelimit-Limit") != "1000" || r.header.Get("X-Ratelimit-Remaining") == "" || r.header.Get("X-Ratelimit-Reset") == "") {
					t.Errorf("request %d: rate-limit headers missing: %v", i, r.header)
				}
			}
		}()
	}
	for i := range 1500 {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	took := time.Since(start)
	// GCRA gives one request back every 3.6 s (1000 an hour): a burst that lasted longer
	// than that has earned that many more, and no other.
	earned := int64(took / (3600 * time.Millisecond))
	t.Logf("1500 requests over 2 gateways in %s: %d allowed, %d limited", took.Round(time.Millisecond), allowed.Load(), limited.Load())
	if allowed.Load() < 1000 || allowed.Load() > 1000+earned || allowed.Load()+limited.Load() != 1500 {
		t.Fatalf("allowed %d, limited %d; want exactly 1000 allowed (+%d earned back over %s)", allowed.Load(), limited.Load(), earned, took)
	}
}

// hangService is a real HTTP server that answers a backing service's catalog (one station)
// and health, and never answers a readings call.
func hangService(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	j := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /v1/meta", func(w http.ResponseWriter, r *http.Request) {
		j(w, contract.ServiceMeta{ID: "hang", Name: "Hanging service", Domain: "test", TemporalPattern: "periodic", Status: "active",
			Providers: []contract.Provider{{Slug: "hangprov", Name: "Hang provider"}},
			Feeds:     []contract.Feed{{Slug: "hang-feed", Name: "Hang feed", ProviderSlug: "hangprov", Domain: "test", TemporalPattern: "periodic", FeedType: "timeseries"}}})
	})
	mux.HandleFunc("GET /v1/sensors", func(w http.ResponseWriter, r *http.Request) {
		j(w, contract.StationPage{Sensors: []contract.Station{{ExternalID: "HANG1", Name: "Hanging station", SensorType: "buoy", Status: "active",
			DataTypes: []string{"wave_height_m"}, ProviderSlug: "hangprov", FeedSlug: "hang-feed", UpdatedAt: contract.Time{Time: time.Now()}}},
			Pagination: contract.NewPagination(1, 100, 1), ServerTime: contract.Time{Time: time.Now()}})
	})
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		j(w, contract.Health{ServiceID: "hang", Status: "ok", Providers: []contract.ProviderHealth{}})
	})
	mux.HandleFunc("GET /v1/sensors/{id}/", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // hangs until the gateway gives up
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

type serviceProc struct {
	*testenv.Process
	url string
}

func startService(t *testing.T, id string) serviceProc {
	t.Helper()
	addr := testenv.FreeAddr(t)
	env := []string{"SERVICE_ADDR=" + addr, "READINGS_SQLITE_PATH=" + t.TempDir() + "/" + id + ".db",
		"SIM_STATIONS=3", "SIM_DAYS=1", "LOG_LEVEL=warn", "OTEL_SDK_DISABLED=true"}
	s := serviceProc{startProc(t, id, bin(t, id), env), "http://" + addr}
	s.WaitReady(t, s.url+contract.PathReadyz, 60*time.Second)
	return s
}

type sensorItem struct {
	ID               string `json:"id"`
	ExternalID       string `json:"external_id"`
	ConnectedService string `json:"connected_service"`
	FeedID           string `json:"feed_id"`
}

// sensorOf waits until the gateway's catalog has a sensor with a feed of service id.
func sensorOf(t *testing.T, gw, key, service string) sensorItem {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r := get(gw+"/api/v1/sensors?limit=1000", "x-api-key", key)
		var page struct{ Sensors []sensorItem }
		if r.status == 200 && json.Unmarshal(r.body, &page) == nil {
			for _, s := range page.Sensors {
				if s.ConnectedService == service && s.FeedID != "" {
					return s
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no sensor of service %s in the gateway's catalog after 60s", service)
	return sensorItem{}
}

type outcome struct {
	at     time.Time
	status int
	code   string
	took   time.Duration
}

// TestServiceFailures runs one gateway in front of two real service processes and a
// hanging one: a hanging service gives 504 at the deadline; a service killed mid-load
// gives 502 fast while the other's requests all succeed; it recovers when restarted; the
// service list and health follow the probe.
func TestServiceFailures(t *testing.T) {
	t.Parallel()
	const deadline = time.Second
	ocean := startService(t, "ocean")
	weather := startService(t, "weather")
	hang := hangService(t)
	g := gatewayEnv{addr: testenv.FreeAddr(t), databaseURL: testenv.Postgres(t), redisURL: testenv.StartRedis(t).URL(),
		env: "production", services: "ocean=" + ocean.url + ",weather=" + weather.url + ",hang=" + hang,
		extra: []string{"RATE_LIMIT_PLANS=e2e=1000000/h", "UPSTREAM_TIMEOUT=" + deadline.String(), "READINGS_CACHE_TTL=0"}}
	key := createKey(t, g, "e2e") // also migrates the new catalog
	gw := "http://" + g.addr
	startProc(t, "gateway", bin(t, "gateway"), g.list()).WaitReady(t, gw+"/healthz", 60*time.Second)
	oc, we, hs := sensorOf(t, gw, key, "ocean"), sensorOf(t, gw, key, "weather"), sensorOf(t, gw, key, "hang")

	t.Run("hang gives 504 at the deadline", func(t *testing.T) {
		r := get(gw+"/api/v1/sensors/"+hs.ID+"/readings/latest", "x-api-key", key)
		if r.status != 504 || codeOf(r.body) != "upstream_timeout" {
			t.Fatalf("hanging service: %d %s, want 504 upstream_timeout", r.status, r.body)
		}
		if r.took < deadline || r.took > deadline+5*time.Second {
			t.Errorf("504 after %s; want it at the %s deadline", r.took, deadline)
		}
		t.Logf("504 after %s (UPSTREAM_TIMEOUT %s)", r.took.Round(time.Millisecond), deadline)
		h := get(gw+"/api/v1/services/hang/health", "x-api-key", key)
		if h.status != 200 {
			t.Errorf("health of the hanging service (whose health answers): %d %s", h.status, h.body)
		}
	})

	t.Run("kill mid-load", func(t *testing.T) {
		var mu sync.Mutex
		results := map[string][]outcome{}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, s := range []sensorItem{oc, oc, we, we} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					r := get(gw+"/api/v1/sensors/"+s.ExternalID+"/readings/latest", "x-api-key", key)
					mu.Lock()
					results[s.ConnectedService] = append(results[s.ConnectedService], outcome{time.Now(), r.status, codeOf(r.body), r.took})
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
				}
			}()
		}
		time.Sleep(time.Second)
		ocean.Kill()
		killedAt := time.Now()

		// The service list follows the prober (PROBE_INTERVAL=1s).
		waitStatus(t, gw, key, "ocean", "down")
		h := get(gw+"/api/v1/services/ocean/health", "x-api-key", key)
		if h.status != 200 || !strings.Contains(string(h.body), `"status":"down"`) {
			t.Errorf("health of the killed service: %d %s, want 200 with status down", h.status, h.body)
		}
		time.Sleep(time.Second)

		ocean.Restart(t)
		restartedAt := time.Now()
		ocean.WaitReady(t, ocean.url+contract.PathReadyz, 60*time.Second)
		waitStatus(t, gw, key, "ocean", "active")
		recoveredBy := time.Now().Add(20 * time.Second)
		for time.Now().Before(recoveredBy) {
			mu.Lock()
			rs := results["ocean"]
			ok := len(rs) > 0 && rs[len(rs)-1].status == 200 && rs[len(rs)-1].at.After(restartedAt)
			mu.Unlock()
			if ok {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		close(stop)
		wg.Wait()

		for _, o := range results["weather"] {
			if o.status != 200 {
				t.Errorf("weather request during the ocean outage: %d %s", o.status, o.code)
			}
		}
		var down, after int
		for _, o := range results["ocean"] {
			switch {
			case o.status == 502 && o.code == "upstream_unavailable":
				down++
				if o.took >= deadline {
					t.Errorf("502 took %s, the whole deadline: a dead service must fail fast", o.took)
				}
			case o.status == 200:
				if o.at.After(restartedAt) {
					after++
				}
			default:
				t.Errorf("ocean request at +%s: %d %s; want 200 or 502 upstream_unavailable", o.at.Sub(killedAt), o.status, o.code)
			}
		}
		if down == 0 || after == 0 {
			t.Errorf("ocean: %d answers 502 while killed, %d answers 200 after restart; want both", down, after)
		}
		t.Logf("weather %d requests all 200; ocean %d requests: %d x 502 while down, %d x 200 after restart", len(results["weather"]), len(results["ocean"]), down, after)
	})
}

func waitStatus(t *testing.T, gw, key, service, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		r := get(gw+"/api/v1/services", "x-api-key", key)
		var list []struct{ ID, Status string }
		if json.Unmarshal(r.body, &list) == nil {
			for _, s := range list {
				if s.ID == service {
					last = s.Status
					if s.Status == want {
						return
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("service %s status %q in the list, want %q within 30s", service, last, want)
}

// TestRedisDownUnderGateway stops the gateway's Redis and starts it again: fail-open keeps
// answering (counted locally) and says so in /readyz and the metric, fail-closed answers
// 503, and both recover without a restart.
func TestRedisDownUnderGateway(t *testing.T) {
	t.Parallel()
	for _, failClosed := range []bool{false, true} {
		t.Run("fail-closed="+strconv.FormatBool(failClosed), func(t *testing.T) {
			t.Parallel()
			rs := testenv.StartRedis(t)
			g := gatewayEnv{addr: testenv.FreeAddr(t), databaseURL: testenv.Postgres(t), redisURL: rs.URL(),
				env: "development", devKey: randomKey(), services: "ocean=http://127.0.0.1:1",
				extra: []string{"RATE_LIMIT_FAIL_CLOSED=" + strconv.FormatBool(failClosed)}}
			gw := "http://" + g.addr
			startProc(t, "gateway", bin(t, "gateway"), g.list()).WaitReady(t, gw+"/healthz", 60*time.Second)
			api := gw + "/api/v1/sensors/types"
			r := get(api, "x-api-key", g.devKey)
			if r.status != 200 || r.header.Get("X-Ratelimit-Remaining") != "999" {
				t.Fatalf("with Redis up: %d remaining %q", r.status, r.header.Get("X-Ratelimit-Remaining"))
			}

			rs.Kill()
			r = get(api, "x-api-key", g.devKey)
			if failClosed {
				if r.status != 503 || r.header.Get("Retry-After") == "" {
					t.Fatalf("fail-closed with Redis down: %d %v %s, want 503 with Retry-After", r.status, r.header, r.body)
				}
			} else if r.status != 200 || r.header.Get("X-Ratelimit-Limit") != "1000" {
				t.Fatalf("fail-open with Redis down: %d %v %s, want 200 with rate-limit headers", r.status, r.header, r.body)
			}
			rd := get(gw + "/readyz")
			wantCheck := map[bool]string{false: `"redis":"degraded"`, true: `"redis":"down"`}[failClosed]
			if !strings.Contains(string(rd.body), wantCheck) {
				t.Errorf("/readyz with Redis down: %d %s, want the redis check to say %s", rd.status, rd.body, wantCheck)
			}
			if wantStatus := map[bool]int{false: 200, true: 503}[failClosed]; rd.status != wantStatus {
				t.Errorf("/readyz status with Redis down = %d, want %d", rd.status, wantStatus)
			}
			m := get(gw + "/metrics")
			if !strings.Contains(string(m.body), "sensorgate_ratelimit_degraded 1") {
				t.Errorf("/metrics with Redis down lacks sensorgate_ratelimit_degraded 1")
			}

			rs.Restart(t)
			rs.WaitUp(t)
			deadline := time.Now().Add(30 * time.Second)
			for {
				r = get(api, "x-api-key", g.devKey)
				rd = get(gw + "/readyz")
				if r.status == 200 && strings.Contains(string(rd.body), `"redis":"ok"`) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("not recovered 30s after Redis came back: %d; readyz %s", r.status, rd.body)
				}
				time.Sleep(100 * time.Millisecond)
			}
			// The new Redis is empty: the count starts again from the shared store.
			if rem, _ := strconv.Atoi(r.header.Get("X-Ratelimit-Remaining")); rem < 990 {
				t.Errorf("after recovery remaining = %d, want a fresh Redis count", rem)
			}
			m = get(gw + "/metrics")
			if !strings.Contains(string(m.body), "sensorgate_ratelimit_degraded 0") {
				t.Errorf("/metrics after recovery lacks sensorgate_ratelimit_degraded 0")
			}
		})
	}
}
