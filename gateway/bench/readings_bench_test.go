package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/gateway/api"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/ginerr"
	"github.com/sensorgate/sensorgate/gateway/ratelimit"
	"github.com/sensorgate/sensorgate/gateway/readings"
	"github.com/sensorgate/sensorgate/gateway/render"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// readingsPage is a readings page of n rows in the services' JSON shape (about 600 bytes a
// row, as the ocean service's NDBC rows), for the benchmark's backend.
func readingsPage(ext string, n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"sensor_id":"6f1c2a4e-0000-5000-8000-%012d","external_id":%q,"name":"Station %s","service_id":"ocean","readings":[`, n, ext, ext)
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"r-%d","timestamp":%q,"measurements":{"wave_height_m":{"value":%d.%d,"unit":"m","quality":"good"},`+
			`"water_temperature_c":{"value":2%d.%d,"unit":"degC","quality":"good"},"wind_speed_ms":{"value":%d.%d,"unit":"m/s","quality":"good"},`+
			`"wind_direction_deg":{"value":%d,"unit":"deg","quality":"good"},"air_pressure_hpa":{"value":101%d.%d,"unit":"hPa","quality":"good"}},`+
			`"location":{"type":"Point","coordinates":[-72.%d,38.%d]},"source":{"provider":"noaa-ndbc","station":%q}}`,
			i, t0.Add(-time.Duration(i)*10*time.Minute).Format(time.RFC3339), i%5, i%10, i%7, i%10, i%15, i%10, (i*37)%360, i%10, i%10, i%100, i%100, ext)
	}
	fmt.Fprintf(&b, `],"provenance":{"sensor_id":"x","service_id":"ocean","source_id":%q,"provider":"noaa-ndbc","fetched_at":"2026-11-25T00:00:00Z"},`+
		`"pagination":{"page":1,"limit":%d,"total":%d}}`, ext, n, n*10)
	return []byte(b.String())
}

// readingsGateway is the gateway's handler for the readings routes wired as the binary
// wires it (gateway/app): obs middleware with metrics, gzip, Gin, key authentication
// (with its cache), the rate limiter (in process; a plan far above the load), the input
// check, the format negotiation of package render and the proxy with its cache, over a
// real SQLite catalog and a loopback backend answering a 2-row page for sensor 41001 and a
// 500-row page for 41002. It returns the handler and keys production keys, key i on a plan
// of planRate(i) requests per 1000 hours (far above any load, and each key's own).
func readingsGateway(b testing.TB, keys int) (http.Handler, []string) {
	b.Helper()
	gin.SetMode(gin.ReleaseMode)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{SQLitePath: filepath.Join(b.TempDir(), "catalog.db"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	if _, err := st.Sync(ctx, catalog.SyncBatch{
		Service:   catalog.Service{ID: "ocean", Name: "ocean"},
		Providers: []catalog.Provider{{Slug: "test", Name: "Test provider"}},
		Projects:  []catalog.Project{{Slug: "ocean-feed", Name: "ocean feed", ProviderSlug: "test", ServiceID: "ocean"}},
		Sensors: []catalog.Sensor{
			{ExternalID: "41001", Name: "Station 41001", SensorType: "buoy", ProviderSlug: "test", FeedSlug: "ocean-feed"},
			{ExternalID: "41002", Name: "Station 41002", SensorType: "buoy", ProviderSlug: "test", FeedSlug: "ocean-feed"},
		},
		Full: true,
	}); err != nil {
		b.Fatal(err)
	}
	owner, err := st.CreateUser(ctx, catalog.User{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	plans := ratelimit.Plans{}
	var secrets []string
	for i := range keys {
		key, err := auth.Generate(catalog.EnvProduction)
		if err != nil {
			b.Fatal(err)
		}
		plan := "p" + strconv.Itoa(i)
		if _, err := st.CreateKey(ctx, catalog.APIKey{Name: "bench", Prefix: key.Prefix, Hash: key.Hash, OwnerID: owner.ID,
			Environment: catalog.EnvProduction, Plan: plan}); err != nil {
			b.Fatal(err)
		}
		plans[plan] = ratelimit.Limit{Rate: planRate(i), Period: 1000 * time.Hour, Burst: planRate(i)}
		secrets = append(secrets, key.Secret)
	}
	small, large := readingsPage("41001", 2), readingsPage("41002", 500)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "/41002/") {
			_, _ = w.Write(large)
			return
		}
		_, _ = w.Write(small)
	}))
	b.Cleanup(backend.Close)

	reg := prometheus.NewRegistry()
	met, err := obs.NewMetrics(reg, "gateway")
	if err != nil {
		b.Fatal(err)
	}
	authn, err := auth.New(st, auth.Options{Environment: catalog.EnvProduction, CacheTTL: time.Minute, Metrics: met})
	if err != nil {
		b.Fatal(err)
	}
	clients, err := contract.NewClients(map[string]string{"ocean": backend.URL}, contract.Options{Metrics: met})
	if err != nil {
		b.Fatal(err)
	}
	cache, err := readings.NewCache(readings.CacheOptions{TTL: 3 * time.Second, Registerer: reg})
	if err != nil {
		b.Fatal(err)
	}
	h, err := readings.NewHandlers(readings.HandlerOptions{Clients: clients, Cache: cache, Error: ginerr.Fail,
		Resolve: func(ctx context.Context, ref string) (catalog.Sensor, error) {
			return catalog.ResolveSensor(ctx, st, ref)
		}})
	if err != nil {
		b.Fatal(err)
	}
	identify := func(c *gin.Context) (ratelimit.Identity, bool) {
		id, ok := auth.FromGin(c)
		if !ok {
			return ratelimit.Identity{}, false
		}
		return ratelimit.Identity{KeyID: id.KeyIDText, Environment: id.Environment, Plan: id.Plan}, true
	}
	return api.NewServer(api.Deps{Store: st, Auth: authn, Metrics: met,
		RateLimit: ratelimit.Middleware(ratelimit.NewMemory(nil), plans, identify, nil),
		Proxy:     api.ProxyHandlers{Latest: h.Latest(), Readings: render.Readings(h, ginerr.Fail)},
	}), secrets
}

// planRate is the budget of key i of readingsGateway.
func planRate(i int) int { return 1_000_000 + 1000*i }

// BenchmarkGatewayReadings measures one readings request through the gateway's whole
// handler chain (everything but the HTTP server and the network to the client): hot (the
// same request again, answered from the cache), uncached (every request a distinct query,
// a real upstream call over loopback), and the 500-row page (about 300 KB: over the
// cache's per-answer bound, so fetched each time) without and with gzip (issue 14). One request at a time, so ns/op is latency; allocs/op is the
// figure to compare builds by on a shared machine.
//
//	go test -run '^$' -bench GatewayReadings -benchmem ./gateway/bench/
func BenchmarkGatewayReadings(b *testing.B) {
	h, secrets := readingsGateway(b, 1)
	secret := secrets[0]
	cases := []struct {
		name, path string
		unique, gz bool
	}{
		{"hot", "/api/v1/sensors/41001/readings?limit=2", false, false},
		{"uncached", "/api/v1/sensors/41001/readings?limit=2", true, false},
		{"500", "/api/v1/sensors/41002/readings?limit=500", false, false},
		{"500-gzip", "/api/v1/sensors/41002/readings?limit=500", false, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			i := 0
			do := func() {
				i++
				path := tc.path
				if tc.unique {
					path += "&since=" + time.Unix(946684800+int64(i), 0).UTC().Format(time.RFC3339)
				}
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set(auth.Header, secret)
				if tc.gz {
					req.Header["Accept-Encoding"] = []string{"gzip"}
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
				}
				if tc.gz != (w.Header().Get("Content-Encoding") == "gzip") {
					b.Fatalf("GET %s (gzip %v): Content-Encoding %q", path, tc.gz, w.Header().Get("Content-Encoding"))
				}
			}
			do() // warm: key cache, sensor cache, and the hot cases' answer
			b.ReportAllocs()
			for b.Loop() {
				do()
			}
		})
	}
}
