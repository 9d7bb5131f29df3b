package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/app"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// lockedBuffer collects the gateway's log while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// realGateway runs the gateway exactly as `gateway serve` does (app.Run), in front of a
// running ocean service, and waits until the catalog sync has brought the ocean sensors.
// It returns the gateway's base URL and the first sensor.
func realGateway(tb testing.TB, env map[string]string, key string) (string, target) {
	tb.Helper()
	url, _, s0 := realGatewayWith(tb, env, func(context.Context, string) string { return key })
	return url, s0
}

// realGatewayWith is realGateway with the key made by mkKey once the gateway has migrated
// its database (dbURL); it also returns the backing service's URL.
func realGatewayWith(tb testing.TB, env map[string]string, mkKey func(ctx context.Context, dbURL string) string) (string, string, target) {
	tb.Helper()
	svc := startService(tb, 3)
	addr := testenv.FreeAddr(tb)
	base := map[string]string{
		"GATEWAY_ADDR":     addr,
		"DATABASE_URL":     testenv.Postgres(tb),
		"SENSORGATE_ENV":   "development",
		"DEV_API_KEY":      devKey,
		"SERVICE_URLS":     "ocean=" + svc,
		"INTERNAL_TOKEN":   internalToken,
		"SYNC_INTERVAL":    "1s",
		"LOG_LEVEL":        "warn",
		"PROBE_INTERVAL":   "1h",
		"SHUTDOWN_TIMEOUT": "5s",
	}
	for k, v := range env {
		base[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	log := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, []string{"gateway", "serve"}, func(k string) string { return base[k] }, log)
	}()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("gateway stopped with %v", err)
			}
		case <-time.After(30 * time.Second):
			tb.Errorf("gateway did not stop")
		}
	})
	url := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	key := ""
	for {
		select {
		case err := <-done:
			tb.Fatalf("gateway exited: %v\n%s", err, log.String())
		default:
		}
		if key == "" {
			if resp, err := http.Get(url + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					key = mkKey(ctx, base["DATABASE_URL"])
				}
			}
		}
		if key != "" {
			req, _ := http.NewRequest(http.MethodGet, url+"/api/v1/sensors?limit=100", nil)
			req.Header.Set("x-api-key", key)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				var page struct {
					Sensors []struct {
						ID         string `json:"id"`
						ExternalID string `json:"external_id"`
						FeedID     string `json:"feed_id"`
					} `json:"sensors"`
				}
				err = json.NewDecoder(resp.Body).Decode(&page)
				resp.Body.Close()
				if err == nil && len(page.Sensors) > 0 && page.Sensors[0].FeedID != "" {
					s := page.Sensors[0]
					return url, svc, target{ID: s.ID, ExternalID: s.ExternalID, FeedSlug: feedSlugOf(tb, url, key, s.FeedID)}
				}
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("gateway has no synced sensors after 60s:\n%s", log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func feedSlugOf(tb testing.TB, url, key, feedID string) string {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/api/v1/projects/"+feedID, nil)
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct {
		Slug string `json:"slug"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || p.Slug == "" {
		tb.Fatalf("project %s: %v", feedID, err)
	}
	return p.Slug
}

// TestRealGateway drives the MCP endpoints of the gateway binary's own server (routes,
// auth, rate limit, error renderer) with the official Go SDK client and a bare client.
func TestRealGateway(t *testing.T) {
	url, s0 := realGateway(t, nil, devKey)
	for _, c := range sdkCases(s0) {
		t.Run("go-sdk "+c.scope, func(t *testing.T) {
			t.Parallel()
			sdkRoundTrip(t, url, c, "", devKey)
		})
	}
	t.Run("bare client", func(t *testing.T) {
		t.Parallel()
		post := func(path, ctype, body string) (*http.Response, []byte) {
			req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
			req.Header.Set("x-api-key", devKey)
			if ctype != "" {
				req.Header.Set("Content-Type", ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			return resp, b.Bytes()
		}
		resp, body := post("/api/v1/sensors/"+s0.ID+"/mcp", "application/json", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ocean.latest_observation","arguments":{}}}`)
		if resp.StatusCode != 200 || !strings.Contains(string(body), s0.ExternalID) || resp.Header.Get("x-ratelimit-limit") == "" {
			t.Errorf("sensor tools/call: %d %s (rate-limit headers %v)", resp.StatusCode, body, resp.Header.Get("x-ratelimit-limit"))
		}
		for _, tt := range []struct {
			name, path, ctype, body string
			status                  int
		}{
			{"notification", "/api/v1/catalog/mcp", "application/json", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 202},
			{"415", "/api/v1/catalog/mcp", "text/plain", `{}`, 415},
			{"413", "/api/v1/sensors/registry/mcp", "application/json", strings.Repeat(" ", 1<<20+1), 413},
			{"external id", "/api/v1/sensors/" + s0.ExternalID + "/mcp", "application/json", `{}`, 404},
			{"parse error", "/api/v1/projects/" + s0.FeedSlug + "/mcp", "application/json", `{"jsonrpc"`, 200},
		} {
			resp, body := post(tt.path, tt.ctype, tt.body)
			if resp.StatusCode != tt.status {
				t.Errorf("%s: %d %s, want %d", tt.name, resp.StatusCode, body, tt.status)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, url+"/api/v1/catalog/mcp", nil)
		req.Header.Set("x-api-key", devKey)
		r := do(t, req)
		if r.Status != http.StatusMethodNotAllowed || !strings.Contains(string(r.Body), "method_not_allowed") {
			t.Errorf("GET: %d %s", r.Status, r.Body)
		}
	})
	t.Run("node sdk client", func(t *testing.T) {
		t.Parallel()
		testNodeSDK(t, url, s0)
	})
	t.Run("node sdk client calls every tool", func(t *testing.T) {
		t.Parallel()
		testNodeEveryTool(t, url, s0)
	})
	t.Run("tool list sizes", func(t *testing.T) {
		t.Parallel()
		testToolListSizes(t, url, s0)
	})
	t.Run("conformance suite on every endpoint", func(t *testing.T) {
		t.Parallel()
		nodeDir(t)
		proxied := headerProxy(t, url, "x-api-key", devKey)
		for _, c := range sdkCases(s0) {
			runConformance(t, proxied+c.path, c.scope == "catalog", "conformance-")
		}
		runConformance(t, proxied+"/api/v1/alerts/mcp", false, "conformance-")
	})
}
