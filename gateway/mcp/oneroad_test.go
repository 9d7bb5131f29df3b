package mcp_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestReadingsToolsShareTheRESTPath: get_readings right after the same REST query is
// answered from the readings cache, because MCP's readings tools answer through the REST
// readings path (cache, coalescing, validation) instead of a road of their own.
func TestReadingsToolsShareTheRESTPath(t *testing.T) {
	t.Parallel()
	g := newGateway(t, 3)
	s := g.Sensors[0]
	const since = "2020-01-01T00:00:00Z"
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/v1/sensors/%s/readings?data_format=cleaned&limit=5&page=1&since=%s", g.URL, s.ID, since), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", devKey)
	r := do(t, req)
	if r.Status != http.StatusOK {
		t.Fatalf("REST readings: %d %s", r.Status, r.Body)
	}
	hits, misses := lookups(t, g.Metrics, "hit"), lookups(t, g.Metrics, "miss")

	tr := g.call(t, "/api/v1/catalog/mcp", "get_readings", map[string]any{"sensor_id": s.ID.String(), "since": since, "limit": 5})
	var out struct {
		Count int `json:"count"`
	}
	tr.decode(t, &out)
	if out.Count == 0 {
		t.Fatalf("get_readings found no readings: %s", tr.StructuredContent)
	}
	if got := lookups(t, g.Metrics, "hit"); got != hits+1 {
		t.Errorf("cache hits %v -> %v: get_readings did not hit the answer of the same REST query", hits, got)
	}
	if got := lookups(t, g.Metrics, "miss"); got != misses {
		t.Errorf("cache misses %v -> %v: get_readings asked the service again", misses, got)
	}
}

// lookups reads sensorgate_proxy_cache_lookups_total{result}.
func lookups(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	return counterValue(t, reg, "sensorgate_proxy_cache_lookups_total", map[string]string{"result": result})
}

// counterValue reads the counter name of reg whose labels include want (0 when none).
func counterValue(tb testing.TB, reg *prometheus.Registry, name string, want map[string]string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			n := 0
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
					n++
				}
			}
			if n == len(want) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
