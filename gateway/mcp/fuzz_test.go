package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/catalogsync"
	"github.com/sensorgate/sensorgate/gateway/mcp"
	"github.com/sensorgate/sensorgate/gateway/store"
)

// FuzzEndpoints posts arbitrary bodies to the gateway's own tool servers (registry and
// catalog, on the 30-station fixture catalog in the embedded SQLite store; the services it
// names are not running, so readings fail fast as upstream errors) and checks that nothing
// panics and every answer is either 202 or one JSON value.
//
//	go test ./gateway/mcp -run '^$' -fuzz FuzzEndpoints -fuzztime 60s
func FuzzEndpoints(f *testing.F) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{SQLitePath: filepath.Join(f.TempDir(), "catalog.db"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = st.Close() })
	fixture, err := os.Open(filepath.Join("..", "catalogsync", "testdata", "catalog.json"))
	if err != nil {
		f.Fatal(err)
	}
	defer fixture.Close()
	if _, err := catalogsync.Import(ctx, st, fixture); err != nil {
		f.Fatal(err)
	}
	clients, answers := upstreams(f, st, map[string]string{"ocean": "http://127.0.0.1:1", "weather": "http://127.0.0.1:1", "airquality": "http://127.0.0.1:1"}, 200*time.Millisecond, nil)
	h, err := mcp.New(mcp.Config{Store: st, Logger: slog.New(slog.DiscardHandler), Clients: clients, Readings: answers})
	if err != nil {
		f.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.POST("/registry", h.RegistryMCP())
	r.POST("/catalog", h.CatalogMCP())

	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_sensors","arguments":{"near":{"lat":40,"lon":-70,"radius_km":500},"limit":3}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sensors","arguments":{"latitude":"40","longitude":"-70","limit":"2","data_types":"wave_height_m"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_readings","arguments":{"sensor_id":"41002","days":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sensor_last_reading","arguments":{"feed_id":"ndbc-stdmet"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_catalog"}}`,
		`{"jsonrpc":"2.0","id":"x","method":"initialize","params":{"protocolVersion":"2024-11-05"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[]`, `{"id":1}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_sensors","arguments":{"cursor":"eyJwIjoyLCJsIjoxLCJxIjowfQ"}}}`,
	} {
		f.Add(true, []byte(s))
		f.Add(false, []byte(s))
	}
	f.Fuzz(func(t *testing.T, registry bool, body []byte) {
		path := "/catalog"
		if registry {
			path = "/registry"
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req) // a panic fails the fuzz run
		switch {
		case w.Code == http.StatusAccepted:
			if w.Body.Len() != 0 {
				t.Fatalf("202 with a body: %s", w.Body)
			}
		case w.Code == http.StatusOK || w.Code == http.StatusRequestEntityTooLarge:
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("status %d, body is not JSON: %q", w.Code, w.Body)
			}
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		}
	})
}
