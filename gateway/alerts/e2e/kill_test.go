// Package e2e tests alert delivery end to end: a real backing service in simulate mode,
// two gateway processes on one PostgreSQL catalog, a webhook receiver, and a SIGKILL.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

var bins = testenv.Binaries{Pkgs: map[string]string{
	"gateway": "github.com/sensorgate/sensorgate/gateway/cmd/gateway",
	"weather": "github.com/sensorgate/sensorgate/services/cmd/weather",
}}

func TestMain(m *testing.M) { bins.Main(m) }

const devKey = "sg_dev_alerts_e2e_0123456789abcdef"

var client = &http.Client{Timeout: 30 * time.Second}

func call(t *testing.T, method, url string, body any, out any) int {
	t.Helper()
	return callKey(t, devKey, method, url, body, out)
}

// callKey makes a request with key and decodes its JSON answer into out (when not nil).
func callKey(t *testing.T, key, method, url string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode
}

// startGateway starts a gateway replica and waits for its catalog to hold want sensors.
func startGateway(t *testing.T, name string, env []string, want int) (*testenv.Process, string) {
	t.Helper()
	addr := testenv.FreeAddr(t)
	p := testenv.StartProcess(t, testenv.Command{Name: name, Path: bins.Path(t, "gateway"), Env: append([]string{"GATEWAY_ADDR=" + addr}, env...)})
	url := "http://" + addr
	p.WaitReady(t, url+"/healthz", 60*time.Second)
	deadline := time.Now().Add(90 * time.Second)
	for {
		var page struct{ Pagination struct{ Total int } }
		if call(t, http.MethodGet, url+"/api/v1/sensors?limit=1", nil, &page) == 200 && page.Pagination.Total >= want {
			return p, url
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: catalog holds %d sensors after 90 s, want %d", name, page.Pagination.Total, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type hit struct {
	id, body string
}

// TestKillTheDeliveringReplicaDuringABurst: two gateways evaluate and deliver from one
// PostgreSQL catalog; the one that started first (the evaluating leader, and one of the
// two senders) is killed with SIGKILL while a burst of events is being delivered to a
// slow receiver. Every event listed afterwards reaches the receiver with a 2xx, and a
// duplicate only ever comes with the same webhook-id and body.
func TestKillTheDeliveringReplicaDuringABurst(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a service and two gateways")
	}
	const stations, rules = 24, 40
	svcAddr := testenv.FreeAddr(t)
	// The weather simulation's Ambient stations report every 5 minutes, a fifth of them
	// each minute: a burst of readings every minute.
	svc := testenv.StartProcess(t, testenv.Command{Name: "weather", Path: bins.Path(t, "weather"), Env: []string{
		"SERVICE_ADDR=" + svcAddr, "READINGS_DATABASE_URL=" + testenv.Postgres(t), "SOURCE_MODE=simulate", "SIM_DAYS=0",
		fmt.Sprintf("SIM_STATIONS=%d", stations), "LOG_LEVEL=warn"}})
	svc.WaitReady(t, "http://"+svcAddr+"/readyz", 120*time.Second)

	var mu sync.Mutex
	var hits []hit
	cut, inFlight := 0, 0
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		inFlight++
		mu.Unlock()
		time.Sleep(500 * time.Millisecond) // slow: the burst is still being delivered at the kill
		mu.Lock()
		defer mu.Unlock()
		inFlight--
		if r.Context().Err() != nil {
			// The sender died before it could read the answer: not delivered, as far as
			// it knows; another replica must send it again after the lease.
			cut++
			return
		}
		hits = append(hits, hit{id: r.Header.Get("webhook-id"), body: string(body)})
	}))
	defer rc.Close()
	count := func() (delivered, open int) {
		mu.Lock()
		defer mu.Unlock()
		return len(hits), inFlight
	}

	env := []string{"SENSORGATE_ENV=development", "DEV_API_KEY=" + devKey, "DATABASE_URL=" + testenv.Postgres(t),
		"SERVICE_URLS=weather=http://" + svcAddr, "SYNC_INTERVAL=1s", "LOG_LEVEL=warn", "ALERT_RULE_QUOTAS=default=1000"}
	a, aURL := startGateway(t, "gateway-a", env, stations)
	_, bURL := startGateway(t, "gateway-b", env, stations)
	for i := 0; i < rules; i++ {
		rule := map[string]any{"name": fmt.Sprint("world ", i),
			"target":    map[string]any{"bbox": map[string]any{"min_lat": -90, "min_lon": -180, "max_lat": 90, "max_lon": 180}},
			"condition": map[string]any{"parameter": "air_temperature_c", "op": "above", "value": -1000000},
			"for":       "PT0S", "webhook_url": rc.URL + "/hook"}
		var out map[string]any
		if code := call(t, http.MethodPost, aURL+"/api/v1/alerts/rules", rule, &out); code != http.StatusCreated {
			t.Fatalf("create rule %d: %d %v", i, code, out)
		}
	}
	// Each replica has up to workers attempts in flight; more than that at the receiver
	// means both are sending, so the kill cuts off at least one of the killed replica's.
	const workers = 16
	deadline := time.Now().Add(150 * time.Second)
	for {
		if _, open := count(); open > workers {
			break
		}
		if time.Now().After(deadline) {
			var evs, latest map[string]any
			call(t, http.MethodGet, aURL+"/api/v1/alerts/events?limit=3", nil, &evs)
			call(t, http.MethodGet, aURL+"/api/v1/readings/latest?min_lat=-90&min_lon=-180&max_lat=90&max_lon=180&limit=2", nil, &latest)
			delivered, open := count()
			t.Fatalf("%d deliveries and never more than %d in flight after 150 s; no burst to interrupt; events %v; latest %v", delivered, open, evs, latest)
		}
		time.Sleep(5 * time.Millisecond)
	}
	a.Kill()
	atKill, _ := count()

	// All events, as the surviving replica lists them, once the list stops growing.
	events := func() map[string]bool {
		ids := map[string]bool{}
		cursor := ""
		for {
			var page struct {
				Events []struct {
					ID string `json:"id"`
				} `json:"events"`
				NextCursor string `json:"next_cursor"`
			}
			if code := call(t, http.MethodGet, bURL+"/api/v1/alerts/events?limit=1000&cursor="+cursor, nil, &page); code != 200 {
				t.Fatalf("events: %d", code)
			}
			for _, e := range page.Events {
				ids[e.ID] = true
			}
			if page.NextCursor == "" {
				return ids
			}
			cursor = page.NextCursor
		}
	}
	deadline = time.Now().Add(150 * time.Second) // the killed sender's leases run out after 30 s
	var missing []string
	var all map[string]bool
	for {
		all = events()
		mu.Lock()
		got := map[string]string{}
		for _, h := range hits {
			if prev, ok := got[h.id]; ok && prev != h.body {
				mu.Unlock()
				t.Fatalf("webhook-id %s delivered with two bodies:\n%s\n%s", h.id, prev, h.body)
			}
			got[h.id] = h.body
		}
		n := len(hits)
		mu.Unlock()
		missing = missing[:0]
		for id := range all {
			if _, ok := got[id]; !ok {
				missing = append(missing, id)
			}
		}
		for id := range got {
			if !all[id] {
				t.Fatalf("the receiver got webhook-id %s, which is no listed event", id)
			}
		}
		mu.Lock()
		wasCut := cut
		mu.Unlock()
		if len(missing) == 0 && len(all) > atKill && wasCut > 0 {
			mu.Lock()
			t.Logf("%d events; %d deliveries at the kill, %d cut off by it, %d in all (%d duplicates, each with its event's webhook-id and body)",
				len(all), atKill, cut, n, n-len(got))
			mu.Unlock()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events never delivered after the kill (%d deliveries at the kill, %d now, %d cut off by the kill; none cut off means the kill missed the burst)",
				len(missing), len(all), atKill, n, wasCut)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
