package api

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/catalogsync"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPostgresOutageIs503AndRecovers stops and starts a real, throwaway PostgreSQL server
// under a gateway: while it is down, catalog answers and key checks are 503
// store_unavailable with Retry-After (never 500, never 401), /readyz names the store as down
// without any connection detail, and everything answers again once the server is back.
func TestPostgresOutageIs503AndRecovers(t *testing.T) {
	t.Parallel()
	pg := testenv.NewCluster(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{DatabaseURL: pg.URL, MaxOpenConns: 4})
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
	// A second key, never presented before the outage: its check must reach the store.
	fresh, err := auth.Generate(catalog.EnvDevelopment)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateKey(ctx, catalog.APIKey{Prefix: fresh.Prefix, Hash: fresh.Hash, OwnerID: auth.DevOwnerID, Environment: catalog.EnvDevelopment}); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(st, auth.Options{Environment: catalog.EnvDevelopment, CacheTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	h := NewServer(Deps{Store: st, Auth: a, Logger: slog.New(slog.NewTextHandler(logs, nil)), QueryTimeout: 3 * time.Second})
	for _, p := range []string{"/api/v1/sensors", "/api/v1/sensors/types", "/api/v1/projects", "/api/v1/services", "/readyz"} {
		if w := serve(h, http.MethodGet, p, testKey); w.Code != http.StatusOK {
			t.Fatalf("GET %s before the outage: %d %s", p, w.Code, w.Body)
		}
	}

	pg.Stop(t)
	for _, c := range []struct{ path, key string }{
		{"/api/v1/sensors", testKey},
		{"/api/v1/sensors/B000001", testKey},
		{"/api/v1/sensors/types", testKey},
		{"/api/v1/projects", testKey},
		{"/api/v1/projects/dev-sandbox", testKey},
		{"/api/v1/services", testKey},
		{"/api/v1/services/bench", testKey},
		{"/api/v1/sensors", fresh.Secret}, // the key check itself
	} {
		w := serve(h, http.MethodGet, c.path, c.key)
		var e apierr.Error
		_ = json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != http.StatusServiceUnavailable || e.Code != apierr.StoreUnavailable || w.Header().Get("Retry-After") == "" {
			t.Errorf("GET %s with PostgreSQL down: %d %s (Retry-After %q), want 503 store_unavailable with Retry-After",
				c.path, w.Code, w.Body, w.Header().Get("Retry-After"))
		}
		if strings.Contains(w.Body.String(), "127.0.0.1") || strings.Contains(w.Body.String(), "connect") {
			t.Errorf("GET %s: the answer shows connection detail: %s", c.path, w.Body)
		}
	}
	w := serve(h, http.MethodGet, "/readyz", "")
	var ready readiness
	_ = json.Unmarshal(w.Body.Bytes(), &ready)
	if w.Code != http.StatusServiceUnavailable || ready.Checks["store"] != StateDown {
		t.Errorf("/readyz with PostgreSQL down: %d %s", w.Code, w.Body)
	}
	for _, leak := range []string{"127.0.0.1", "postgres", "user", "port", "dial", "refused"} {
		if strings.Contains(w.Body.String(), leak) {
			t.Errorf("/readyz shows %q: %s", leak, w.Body)
		}
	}
	if !strings.Contains(logs.String(), "catalog database unavailable") {
		t.Errorf("the outage is not logged:\n%s", logs.String())
	}

	pg.Start(t)
	deadline := time.Now().Add(60 * time.Second)
	for {
		w := serve(h, http.MethodGet, "/api/v1/sensors", fresh.Secret)
		if w.Code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("60s after PostgreSQL restarted: %d %s", w.Code, w.Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, p := range []string{"/api/v1/sensors/types", "/api/v1/projects", "/api/v1/services/bench", "/readyz"} {
		if w := serve(h, http.MethodGet, p, testKey); w.Code != http.StatusOK {
			t.Errorf("GET %s after the restart: %d %s", p, w.Code, w.Body)
		}
	}
}

// TestReadinessLogsInfoUntilFirstSuccess: a dependency that is still starting is logged at
// INFO; once it has been ready, a failure is a WARN.
func TestReadinessLogsInfoUntilFirstSuccess(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	var mu sync.Mutex
	var probeErr error = context.DeadlineExceeded
	st, _ := newTestServer(t, 0, nil)
	a, _ := auth.New(st, auth.Options{Environment: catalog.EnvDevelopment})
	h := NewServer(Deps{Store: st, Auth: a, Logger: slog.New(slog.NewTextHandler(logs, nil)), Checks: []Check{{
		Name: "upstream", Critical: true, Probe: func(context.Context) (any, error) { mu.Lock(); defer mu.Unlock(); return nil, probeErr },
	}}})
	set := func(err error) { mu.Lock(); probeErr = err; mu.Unlock() }
	for range 3 {
		serve(h, http.MethodGet, "/readyz", "")
	}
	if s := logs.String(); !strings.Contains(s, "level=INFO msg=\"readiness: component not ready yet\"") || strings.Contains(s, "level=WARN") || strings.Contains(s, "level=ERROR") {
		t.Errorf("while starting, want one INFO line:\n%s", s)
	}
	if n := strings.Count(logs.String(), "not ready yet"); n != 1 {
		t.Errorf("logged %d times while the state did not change, want once", n)
	}
	set(nil)
	if w := serve(h, http.MethodGet, "/readyz", ""); w.Code != http.StatusOK {
		t.Fatalf("/readyz: %d", w.Code)
	}
	set(context.DeadlineExceeded)
	serve(h, http.MethodGet, "/readyz", "")
	if s := logs.String(); !strings.Contains(s, "level=WARN msg=\"readiness: component failing\"") {
		t.Errorf("after the first success, a failure must be a WARN:\n%s", s)
	}
}
