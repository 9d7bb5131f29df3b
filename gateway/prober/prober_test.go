package prober

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// healthServer is a real HTTP server answering /v1/health with the given status, or
// hanging when status is "hang".
func healthServer(t *testing.T, id, status string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != contract.PathHealth {
			http.NotFound(w, r)
			return
		}
		if status == "hang" {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(contract.Health{ServiceID: id, Status: status, Providers: []contract.ProviderHealth{}})
	}))
	t.Cleanup(s.Close)
	return s
}

func TestProbeAllRecordsStatuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{SQLitePath: t.TempDir() + "/c.db", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stopped := healthServer(t, "stopped", "ok")
	stopped.Close()
	servers := map[string]string{
		"ok":       healthServer(t, "ok", contract.StatusOK).URL,
		"degraded": healthServer(t, "degraded", contract.StatusDegraded).URL,
		"selfdown": healthServer(t, "selfdown", contract.StatusDown).URL,
		"hang":     healthServer(t, "hang", "hang").URL,
		"stopped":  stopped.URL,
		"unsynced": healthServer(t, "unsynced", contract.StatusOK).URL, // not in the catalog
	}
	clients := map[string]HealthClient{}
	for id, u := range servers {
		clients[id] = mustClient(t, id, u)
		if id != "unsynced" {
			if _, err := st.Sync(ctx, catalog.SyncBatch{Service: catalog.Service{ID: id, Name: id, Status: "active"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	reg := prometheus.NewRegistry()
	m, err := obs.NewMetrics(reg, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(clients, st, Options{Timeout: 300 * time.Millisecond, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	results := p.ProbeAll(ctx)
	if len(results) != len(servers) {
		t.Fatalf("%d results, want %d", len(results), len(servers))
	}
	want := map[string]string{"ok": "active", "degraded": "degraded", "selfdown": "down", "hang": "down", "stopped": "down", "unsynced": "active"}
	last := map[string]Result{}
	for _, r := range results {
		last[r.ServiceID] = r
	}
	for id, w := range want {
		if last[id].Status != w {
			t.Errorf("probe of %s = %q (%v), want %q", id, last[id].Status, last[id].Err, w)
		}
		if (w == "down") != (last[id].Err != nil) {
			t.Errorf("probe of %s: err = %v", id, last[id].Err)
		}
	}
	services, err := st.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range services {
		if s.Status != want[s.ID] || s.LastProbeAt == nil {
			t.Errorf("catalog service %s: status %q last probe %v, want %q", s.ID, s.Status, s.LastProbeAt, want[s.ID])
		}
	}
	if v := testutil.ToFloat64(m.ServiceUp.WithLabelValues("stopped")); v != 0 {
		t.Errorf("service_up{stopped} = %v", v)
	}
	if v := testutil.ToFloat64(m.ServiceUp.WithLabelValues("ok")); v != 1 {
		t.Errorf("service_up{ok} = %v", v)
	}
}

func TestRunStopsWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := store.Open(ctx, store.Config{SQLitePath: t.TempDir() + "/c.db", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	probed := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probed <- struct{}{}
		_ = json.NewEncoder(w).Encode(contract.Health{ServiceID: "a", Status: "ok"})
	}))
	defer srv.Close()
	p, err := New(map[string]HealthClient{"a": mustClient(t, "a", srv.URL)}, st, Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	<-probed // the first round runs at once, not after an interval
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestNewNeedsStore(t *testing.T) {
	t.Parallel()
	if _, err := New(nil, nil, Options{}); err == nil {
		t.Fatal("New without a store succeeded")
	}
}

func mustClient(t *testing.T, id, url string) *contract.Client {
	t.Helper()
	c, err := contract.NewClient(id, url, contract.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
