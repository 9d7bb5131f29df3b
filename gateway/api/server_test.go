package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/catalogsync"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

const testKey = "sg_dev_0123456789abcdef0123456789abcdef"

// newTestServer serves a real SQLite catalog holding n synthetic sensors, with testKey as a
// development key.
func newTestServer(tb testing.TB, n int, log *slog.Logger) (*store.Store, http.Handler) {
	tb.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{SQLitePath: filepath.Join(tb.TempDir(), "catalog.db")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	if err := auth.BootstrapDevelopment(ctx, st, testKey); err != nil {
		tb.Fatal(err)
	}
	if n > 0 {
		if _, err := catalogsync.Import(ctx, st, syntheticCatalog(n)); err != nil {
			tb.Fatal(err)
		}
	}
	a, err := auth.New(st, auth.Options{Environment: catalog.EnvDevelopment})
	if err != nil {
		tb.Fatal(err)
	}
	return st, NewServer(Deps{Store: st, Auth: a, Logger: log})
}

// syntheticCatalog is a catalog file of n stations spread over the globe.
func syntheticCatalog(n int) io.Reader {
	r := rand.New(rand.NewPCG(1, 2))
	f := catalogsync.File{Services: []catalogsync.FileService{{
		ID: "bench", Name: "Bench", Domain: "ocean", TemporalPattern: "periodic", Port: 9999,
		Providers: []contract.Provider{{Slug: "bench-provider", Name: "Bench Provider"}},
		Feeds:     []contract.Feed{{Slug: "bench-feed", Name: "Bench feed", ProviderSlug: "bench-provider", Domain: "ocean", FeedType: "timeseries"}},
	}}}
	types := []string{"buoy", "weather_station", "air_quality_monitor"}
	params := []string{"air_temperature_c", "water_temperature_c", "wave_height_m", "wind_speed_ms", "aqi"}
	for i := range n {
		lat, lon := r.Float64()*170-85, r.Float64()*360-180
		f.Services[0].Sensors = append(f.Services[0].Sensors, contract.Station{
			ExternalID: fmt.Sprintf("B%06d", i), Name: fmt.Sprintf("Station %06d", r.IntN(1_000_000)),
			Description: "synthetic", SensorType: types[i%3], Status: catalog.StatusActive,
			DataTypes: []string{params[i%5], params[(i+2)%5]}, DeploymentDate: "2020-01-01",
			Latitude: &lat, Longitude: &lon, ProviderSlug: "bench-provider", FeedSlug: "bench-feed",
		})
	}
	b, _ := json.Marshal(f)
	return bytes.NewReader(b)
}

func serve(h http.Handler, method, target, key string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	if key != "" {
		req.Header.Set(auth.Header, key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// panickingStore is the real store with one method that panics: a fault no input can cause.
type panickingStore struct{ catalog.Store }

func (panickingStore) SensorTypes(context.Context) ([]string, error) { panic("boom: secret detail") }

func TestPanicIsAnInternalErrorThatLeaksNothing(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	st, _ := newTestServer(t, 0, log)
	a, _ := auth.New(st, auth.Options{Environment: catalog.EnvDevelopment})
	h := NewServer(Deps{Store: panickingStore{st}, Auth: a, Logger: log})
	w := serve(h, http.MethodGet, "/api/v1/sensors/types", testKey)
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if got := strings.TrimSpace(w.Body.String()); got != `{"error":"internal error","code":"internal"}` {
		t.Errorf("body %s", got)
	}
	if !strings.Contains(logs.String(), "boom: secret detail") {
		t.Errorf("the panic is not logged:\n%s", logs.String())
	}
	// The server survives and keeps answering.
	if w := serve(h, http.MethodGet, "/api/v1/sensors", testKey); w.Code != http.StatusOK {
		t.Errorf("after a panic: %d", w.Code)
	}
}

func TestStoreDownIsNotReadyAndInternal(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	st, h := newTestServer(t, 3, slog.New(slog.NewTextHandler(&logs, nil)))
	if w := serve(h, http.MethodGet, "/readyz", ""); w.Code != http.StatusOK {
		t.Fatalf("/readyz before: %d %s", w.Code, w.Body)
	}
	if w := serve(h, http.MethodGet, "/api/v1/sensors", testKey); w.Code != http.StatusOK {
		t.Fatalf("sensors before: %d %s", w.Code, w.Body)
	}
	_ = st.Close() // a real outage: every query now fails
	w := serve(h, http.MethodGet, "/readyz", "")
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the store closed: %d %s", w.Code, w.Body)
	}
	var ready readiness
	_ = json.Unmarshal(w.Body.Bytes(), &ready)
	if ready.Status != "not_ready" || ready.Checks["store"] != StateDown || strings.Contains(w.Body.String(), "closed") {
		t.Errorf("/readyz body %s: want the store down and no error text", w.Body)
	}
	if !strings.Contains(logs.String(), "readiness") || !strings.Contains(logs.String(), "closed") {
		t.Errorf("the store's failure is not logged:\n%s", logs.String())
	}
	// /healthz is liveness: the process is fine.
	if w := serve(h, http.MethodGet, "/healthz", ""); w.Code != http.StatusOK {
		t.Errorf("/healthz: %d", w.Code)
	}
	// The key lookup fails first: an internal error, never mistaken for an invalid key.
	w = serve(h, http.MethodGet, "/api/v1/sensors", testKey)
	if w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "closed") {
		t.Errorf("sensors with the store closed: %d %s", w.Code, w.Body)
	}
	if !strings.Contains(logs.String(), "internal error") {
		t.Errorf("the internal error is not logged:\n%s", logs.String())
	}
}

func TestProjectedItemsKeepViewOrder(t *testing.T) {
	t.Parallel()
	_, h := newTestServer(t, 2, nil)
	w := serve(h, http.MethodGet, "/api/v1/sensors?fields=status,name,id&limit=1", testKey)
	if w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	body := w.Body.String()
	i, n, s := strings.Index(body, `"id"`), strings.Index(body, `"name"`), strings.Index(body, `"status"`)
	if i < 0 || !(i < n && n < s) {
		t.Errorf("fields not in the sensor's order (id, name, status): %s", body)
	}
}

// BenchmarkSensorList measures GET /api/v1/sensors end to end through the handler (auth
// with a warm key cache, parsing, a real SQLite query, JSON) on a 5000-sensor catalog.
func BenchmarkSensorList(b *testing.B) {
	_, h := newTestServer(b, 5000, nil)
	for _, bc := range []struct{ name, query string }{
		{"page20_full", "limit=20"},
		{"page100_full", "limit=100&page=7"},
		{"page1000_minimal", "limit=1000&minimal=true"},
		{"radius500km", "lat=40&lon=-83&radius_km=500&sort=distance&limit=100"},
		{"bbox_antimeridian", "min_lat=-40&min_lon=170&max_lat=40&max_lon=-170&limit=100"},
		{"search", "search=station+0001&limit=100"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			target := "/api/v1/sensors?" + bc.query
			if w := serve(h, http.MethodGet, target, testKey); w.Code != http.StatusOK {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
			b.ReportAllocs()
			for b.Loop() {
				if w := serve(h, http.MethodGet, target, testKey); w.Code != http.StatusOK {
					b.Fatalf("%d", w.Code)
				}
			}
		})
	}
}

func BenchmarkParseSensorQuery(b *testing.B) {
	req := httptest.NewRequest(http.MethodGet, "/api/v1/sensors?search=hatteras&sensor_type=buoy&data_types=aqi,wave_height_m&lat=40&lon=-83&radius_km=200&sort=distance&limit=100&fields=id,name", nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sensorquery.Parse(req.URL.Query()); err != nil {
			b.Fatal(err)
		}
	}
}
