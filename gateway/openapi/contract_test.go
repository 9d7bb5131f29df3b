package openapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/api"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/catalogsync"
	"github.com/sensorgate/sensorgate/gateway/openapi"
	"github.com/sensorgate/sensorgate/gateway/ratelimit"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

const devKey = "sg_dev_contract_test_key_0123456789"

// gateway builds the real gateway handler (api.NewServer) over an embedded catalog store
// holding the catalog sync fixture, with authentication and rate limiting as in
// production, and serves it through the validator.
func gateway(t *testing.T, v *openapi.Validator) string {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{SQLitePath: filepath.Join(t.TempDir(), "catalog.db"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	f, err := os.Open("../catalogsync/testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := catalogsync.Import(ctx, st, f); err != nil {
		t.Fatal(err)
	}
	if err := auth.BootstrapDevelopment(ctx, st, devKey); err != nil {
		t.Fatal(err)
	}
	reg, err := obs.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	m, err := obs.NewMetrics(reg, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(st, auth.Options{Environment: catalog.EnvDevelopment, CacheTTL: time.Second, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	identify := func(c *gin.Context) (ratelimit.Identity, bool) {
		id, ok := auth.FromGin(c)
		return ratelimit.Identity{KeyID: id.KeyID.String(), Environment: id.Environment, Plan: id.Plan}, ok
	}
	h := api.NewServer(api.Deps{
		Store: st, Auth: a, Metrics: m, MetricsHandler: obs.MetricsHandler(reg),
		RateLimit: ratelimit.Middleware(ratelimit.NewMemory(time.Now), ratelimit.Plans{}, identify, nil),
	})
	srv := httptest.NewServer(v.Wrap(t, h))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestGatewayMatchesDocument sends the gateway every catalog request of docs/spec.md and
// docs/api-decisions.md, good and bad, and lets the validator fail the test on any exchange the document
// does not describe.
func TestGatewayMatchesDocument(t *testing.T) {
	t.Parallel()
	v, err := openapi.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	base := gateway(t, v)
	key := map[string]string{"x-api-key": devKey}
	tests := []struct {
		method, path string
		header       map[string]string
		status       int
	}{
		{"GET", "/api/v1/openapi.json", nil, 200},
		{"GET", "/docs", nil, 200},
		{"GET", "/docs/assets/redoc.standalone.js", nil, 200},
		{"GET", "/api/v1/sensors", nil, 401},
		{"GET", "/api/v1/sensors", map[string]string{"x-api-key": "sg_dev_wrong"}, 401},
		{"GET", "/api/v1/sensors", key, 200},
		{"GET", "/api/v1/sensors?minimal=true", key, 200},
		{"GET", "/api/v1/sensors?fields=id,name,status,nonsense", key, 200},
		{"GET", "/api/v1/sensors?minimal=true&fields=id", key, 200},
		{"GET", "/api/v1/sensors?search=hatteras&sensor_type=buoy&status=active", key, 200},
		{"GET", "/api/v1/sensors?data_types=water_temperature_c,wave_height_m", key, 200},
		{"GET", "/api/v1/sensors?min_lat=20&min_lon=-90&max_lat=50&max_lon=-60", key, 200},
		{"GET", "/api/v1/sensors?min_lat=-60&min_lon=170&max_lat=60&max_lon=-170", key, 200},
		{"GET", "/api/v1/sensors?lat=31.76&lon=-74.84&radius_km=500&sort=distance", key, 200},
		{"GET", "/api/v1/sensors?lat=31.76&lon=-74.84", key, 200},
		{"GET", "/api/v1/sensors?page=999", key, 200},
		{"GET", "/api/v1/sensors?limit=5000", key, 200},
		{"GET", "/api/v1/sensors?limit=abc", key, 400},
		{"GET", "/api/v1/sensors?lat=100&lon=0", key, 400},
		{"GET", "/api/v1/sensors?radius_km=10", key, 400},
		{"GET", "/api/v1/sensors/registry", key, 200},
		{"GET", "/api/v1/sensors/registry?minimal=true", key, 200},
		{"GET", "/api/v1/sensors/registry?lat=31.76&lon=-74.84&radius_km=300", key, 200},
		{"GET", "/api/v1/sensors/types", key, 200},
		{"GET", "/api/v1/sensors/statuses", key, 200},
		{"GET", "/api/v1/sensors/41002", key, 200},
		{"GET", "/api/v1/sensors/no-such-sensor", key, 404},
		{"DELETE", "/api/v1/sensors", key, 405},
		{"GET", "/api/v1/no-such-route", key, 404},
		{"GET", "/api/v1/services", key, 200},
		{"GET", "/api/v1/services/ocean", key, 200},
		{"GET", "/api/v1/services/no-such-service", key, 404},
		{"GET", "/api/v1/projects", key, 200},
		{"GET", "/api/v1/projects?provider=noaa-ndbc&domain=ocean", key, 200},
		{"GET", "/api/v1/projects/my", key, 200},
		{"GET", "/api/v1/projects/ndbc-stdmet", key, 200},
		{"GET", "/api/v1/projects/no-such-project", key, 404},
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for _, tc := range tests {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		for k, val := range tc.header {
			req.Header.Set(k, val)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: status %d, want %d: %s", tc.method, tc.path, resp.StatusCode, tc.status, clip(body))
		}
		if resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "" {
			// A conditional repeat must give a documented 304.
			req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
			resp2, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp2.Body.Close()
			if resp2.StatusCode != http.StatusNotModified {
				t.Errorf("%s %s with If-None-Match: status %d, want 304", tc.method, tc.path, resp2.StatusCode)
			}
		}
	}
	t.Logf("checked: %s", strings.Join(v.Seen(), "; "))
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
