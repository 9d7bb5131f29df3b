package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// TestObservability checks, on a running service, that the request id sent by the gateway
// is echoed, and that /metrics exposes HTTP metrics by route pattern (never the raw
// station id), store latency, per-provider ingest state and the build info.
func TestObservability(t *testing.T) {
	t.Parallel()
	base := service(t, map[string]string{"SIM_STATIONS": "3", "SIM_DAYS": "1", "SIM_SEED": "11"})

	var page contract.StationPage
	if code, b := get(t, base+contract.PathSensors, nil, &page); code != 200 || len(page.Sensors) == 0 {
		t.Fatalf("sensors = %d %s", code, b)
	}
	id := page.Sensors[0].ExternalID
	req, _ := http.NewRequest(http.MethodGet, base+contract.LatestPath(id), nil)
	req.Header.Set(contract.HeaderRequestID, "svc-obs-test-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("latest: status %d", resp.StatusCode)
	}
	if got := resp.Header.Get(contract.HeaderRequestID); got != "svc-obs-test-1" {
		t.Errorf("request id echoed as %q, want svc-obs-test-1", got)
	}

	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: status %d", resp.StatusCode)
	}
	body := string(b)
	for _, want := range []string{
		`sensorgate_http_request_duration_seconds_count{component="ocean",method="GET",route="GET /v1/sensors/{id}/readings/latest",status="200"} 1`,
		`sensorgate_store_query_duration_seconds_count{component="ocean",op="latest_reading",result="ok",store="readings"}`,
		`sensorgate_ingest_readings_total{component="ocean"`,
		`sensorgate_ingest_lag_seconds{component="ocean"`,
		`sensorgate_build_info{component="ocean"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, id) {
		t.Errorf("/metrics contains the raw station id %q", id)
	}
}
