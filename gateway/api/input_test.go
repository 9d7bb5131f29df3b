package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/catalogsync"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

func wantInvalid(t *testing.T, what string, err error, param string) {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) || e.Code != apierr.InvalidParameter || !strings.Contains(e.Message, `"`+param+`"`) {
		t.Errorf("%s: error %v, want invalid_parameter naming %q", what, err, param)
	}
}

// TestBadInputIsRefusedBeforeTheStore sends the inputs that reached PostgreSQL (NUL:
// SQLSTATE 22021, a 500) or were silently dropped (a raw ';', a repeated parameter) through
// whole servers on both catalog databases: each is a 400 invalid_parameter naming the
// parameter, and the store (queried directly, as the MCP tools do) refuses them too.
func TestBadInputIsRefusedBeforeTheStore(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) store.Config{
		"sqlite":     func(t *testing.T) store.Config { return store.Config{SQLitePath: t.TempDir() + "/c.db"} },
		"postgresql": func(t *testing.T) store.Config { return store.Config{DatabaseURL: testenv.Postgres(t)} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := store.Open(ctx, open(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			if err := auth.BootstrapDevelopment(ctx, st, testKey); err != nil {
				t.Fatal(err)
			}
			if _, err := catalogsync.Import(ctx, st, syntheticCatalog(6)); err != nil {
				t.Fatal(err)
			}
			a, err := auth.New(st, auth.Options{Environment: catalog.EnvDevelopment})
			if err != nil {
				t.Fatal(err)
			}
			h := NewServer(Deps{Store: st, Auth: a})
			for target, param := range map[string]string{
				"/api/v1/sensors?search=%00":                    "search",
				"/api/v1/sensors?search=abc%00def":              "search",
				"/api/v1/sensors?search=%ff%fe":                 "search",
				"/api/v1/sensors?provider=%00":                  "provider",
				"/api/v1/sensors/registry?sensor_type=%00":      "sensor_type",
				"/api/v1/sensors?sensor_type=buoy;x":            "sensor_type",
				"/api/v1/sensors?status=active;x=1":             "status",
				"/api/v1/sensors?status=active&status=inactive": "status",
				"/api/v1/sensors?sensor_type=buoy&sensor_type=": "sensor_type",
				"/api/v1/sensors?data_types=aqi&data_types=aqi": "data_types",
				"/api/v1/sensors/B000001%00":                    "id",
				"/api/v1/sensors/%ff":                           "id",
				"/api/v1/projects/%00":                          "id",
				"/api/v1/projects?search=%00":                   "search",
				"/api/v1/projects?domain=ocean&domain=weather":  "domain",
				"/api/v1/services/%00":                          "id",
				"/api/v1/services/%c3%28":                       "id",
				"/api/v1/sensors/" + strings.Repeat("x", 300):   "id",
				"/api/v1/sensors?minimal=true&fields=a;b":       "fields",
				"/api/v1/sensors?search=ok&unknown=%00":         "unknown",
				"/api/v1/sensors?lat=1&lon=2&lat=3&radius_km=4": "lat",
			} {
				w := serve(h, http.MethodGet, target, testKey)
				var e apierr.Error
				_ = json.Unmarshal(w.Body.Bytes(), &e)
				if w.Code != http.StatusBadRequest || e.Code != apierr.InvalidParameter || !strings.Contains(e.Message, `"`+param+`"`) {
					t.Errorf("GET %s: %d %s, want 400 invalid_parameter naming %q", target, w.Code, w.Body, param)
				}
			}
			// An encoded ';' is an ordinary character, matched exactly: no sensor type has it.
			w := serve(h, http.MethodGet, "/api/v1/sensors?sensor_type=buoy%3Bx", testKey)
			var page struct{ Pagination struct{ Total int } }
			if err := json.Unmarshal(w.Body.Bytes(), &page); w.Code != http.StatusOK || err != nil || page.Pagination.Total != 0 {
				t.Errorf("sensor_type=buoy%%3Bx: %d %s, want 200 with total 0", w.Code, w.Body)
			}
			if w := serve(h, http.MethodGet, "/api/v1/sensors?sensor_type=buoy", testKey); w.Code != http.StatusOK ||
				!strings.Contains(w.Body.String(), `"total":2`) {
				t.Errorf("sensor_type=buoy: %d %s", w.Code, w.Body)
			}
			// The store's own guard, for callers that do not come through HTTP.
			_, err = st.ListSensors(ctx, catalog.SensorFilter{Search: "a\x00b"})
			wantInvalid(t, "ListSensors search NUL", err, "search")
			_, err = st.SensorByExternalID(ctx, "\xff")
			wantInvalid(t, "SensorByExternalID invalid UTF-8", err, "id")
			_, _, err = st.ListProjects(ctx, catalog.ProjectFilter{Domain: "\x00"})
			wantInvalid(t, "ListProjects domain NUL", err, "domain")
			_, err = st.Project(ctx, "\x00")
			wantInvalid(t, "Project NUL", err, "id")
			_, err = st.Service(ctx, "\x00")
			wantInvalid(t, "Service NUL", err, "id")
		})
	}
}

// TestEveryAnswerIsNosniff: success, error, 404 and 405 answers all carry nosniff.
func TestEveryAnswerIsNosniff(t *testing.T) {
	t.Parallel()
	_, h := newTestServer(t, 2, nil)
	for _, c := range []struct{ method, path, key string }{
		{http.MethodGet, "/api/v1/sensors", testKey}, {http.MethodGet, "/api/v1/sensors", ""},
		{http.MethodGet, "/nope", ""}, {http.MethodPost, "/api/v1/sensors", testKey},
		{http.MethodGet, "/healthz", ""}, {http.MethodGet, "/readyz", ""}, {http.MethodGet, "/api/v1/sensors?search=%00", testKey},
	} {
		w := serve(h, c.method, c.path, c.key)
		if w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s (%d): no nosniff", c.method, c.path, w.Code)
		}
	}
}
