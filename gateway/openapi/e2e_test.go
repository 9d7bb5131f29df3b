package openapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/openapi"
)

// binaries are built once per test run and shared by the tests that run them.
var binaries = testenv.Binaries{Pkgs: map[string]string{
	"gateway": "github.com/sensorgate/sensorgate/gateway/cmd/gateway",
	"ocean":   "github.com/sensorgate/sensorgate/services/cmd/ocean",
}}

func buildBinaries(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{"gateway": binaries.Path(t, "gateway"), "ocean": binaries.Path(t, "ocean")}
}

// TestProcessesMatchDocument runs the gateway and the ocean service as processes, as in
// production, and sends the gateway every readings, health and MCP request of docs/spec.md and
// docs/api-decisions.md through the validating transport, so the readings and MCP parts of the document are
// checked against what the real services answer through the real proxy.
func TestProcessesMatchDocument(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	t.Parallel()
	dir := t.TempDir()
	bins := buildBinaries(t)
	oceanAddr, gwAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	oceanLog := testenv.Start(t, bins["ocean"],
		"SERVICE_ADDR="+oceanAddr, "READINGS_SQLITE_PATH="+filepath.Join(dir, "ocean.db"),
		"SOURCE_MODE=simulate", "SIM_STATIONS=4", "SIM_DAYS=2", "SIM_SEED=5", "LOG_FORMAT=json")
	testenv.WaitFor(t, "ocean", "http://"+oceanAddr+"/readyz", nil, 90*time.Second, func(s int, _ []byte) bool { return s == 200 })
	gatewayLog := testenv.Start(t, bins["gateway"],
		"GATEWAY_ADDR="+gwAddr, "SQLITE_PATH="+filepath.Join(dir, "catalog.db"), "SENSORGATE_ENV=development",
		"DEV_API_KEY="+devKey, "SERVICE_URLS=ocean=http://"+oceanAddr, "SYNC_INTERVAL=1s", "PROBE_INTERVAL=1s",
		"LOG_FORMAT=json")
	base := "http://" + gwAddr
	key := http.Header{"X-Api-Key": {devKey}}
	var list struct {
		Sensors []struct {
			ID         string `json:"id"`
			ExternalID string `json:"external_id"`
			FeedID     string `json:"feed_id"`
		} `json:"sensors"`
	}
	testenv.WaitFor(t, "gateway catalog sync", base+"/api/v1/sensors", key, 90*time.Second, func(s int, b []byte) bool {
		return s == 200 && json.Unmarshal(b, &list) == nil && len(list.Sensors) > 0
	})
	sensor := list.Sensors[0]

	v, err := openapi.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: v.Transport(t, nil), Timeout: 30 * time.Second}
	do := func(method, path, ctype, body string, want ...int) []byte {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("x-api-key", devKey)
		req.Header.Set("X-Request-Id", "e2e-contract")
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Header.Get("X-Request-Id") != "e2e-contract" {
			t.Errorf("%s %s: request id %q not echoed", method, path, resp.Header.Get("X-Request-Id"))
		}
		ok := false
		for _, w := range want {
			ok = ok || resp.StatusCode == w
		}
		if !ok {
			t.Errorf("%s %s: status %d, want %v: %.300s", method, path, resp.StatusCode, want, b)
		}
		return b
	}
	s := "/api/v1/sensors/" + sensor.ID
	ext := "/api/v1/sensors/" + sensor.ExternalID
	do("GET", s+"/readings/latest", "", "", 200)
	do("GET", ext+"/readings/latest?data_format=raw", "", "", 200)
	do("GET", s+"/readings/latest?parameter=water_temperature_c", "", "", 200, 404)
	do("GET", s+"/readings", "", "", 200)
	do("GET", s+"/readings?days=1&limit=5&sort=asc", "", "", 200)
	do("GET", s+"/readings?data_format=raw&limit=3", "", "", 200)
	do("GET", s+"/readings?since=2000-01-01&until=2000-01-02", "", "", 200)
	do("GET", s+"/readings?limit=9999", "", "", 200)
	do("GET", s+"/readings?days=1&since=2026-01-01", "", "", 400)
	do("GET", s+"/readings?data_format=csv", "", "", 400)
	do("GET", s+"/readings?parameter=no_such_parameter", "", "", 400)
	do("GET", s+"/readings/aggregate", "", "", 200)
	do("GET", ext+"/readings/aggregate?interval=1d&tz=America/New_York&days=3&stats=mean,count", "", "", 200)
	do("GET", s+"/readings/aggregate?interval=2h", "", "", 400)
	do("GET", s+"/readings/aggregate?interval=1h&days=100", "", "", 400)
	do("GET", "/api/v1/sensors/no-such-sensor/readings/aggregate", "", "", 404)
	do("GET", "/api/v1/sensors/no-such-sensor/readings", "", "", 404)
	do("GET", "/api/v1/sensors/no-such-sensor/readings/latest", "", "", 404)
	do("GET", "/api/v1/services/ocean/health", "", "", 200)
	do("GET", "/api/v1/services/no-such-service/health", "", "", 404)

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`
	for _, ep := range []string{s + "/mcp", "/api/v1/sensors/registry/mcp", "/api/v1/catalog/mcp", "/api/v1/services/ocean/mcp"} {
		do("POST", ep, "application/json", initialize, 200)
		do("POST", ep, "application/json", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 202)
		do("POST", ep, "application/json", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, 200)
		do("POST", ep, "application/json", `{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`, 200)
		do("POST", ep, "application/json", `{not json`, 200)
		do("POST", ep, "text/plain", initialize, 415)
	}
	do("POST", s+"/mcp", "application/json", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ocean.latest_observation","arguments":{}}}`, 200)
	do("POST", "/api/v1/sensors/registry/mcp", "application/json", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"list_sensors","arguments":{"limit":2}}}`, 200)
	do("POST", "/api/v1/sensors/registry/mcp", "application/json", fmt.Sprintf(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"sensor_last_reading","arguments":{"sensor_id":%q}}}`, sensor.ID), 200)
	do("POST", "/api/v1/catalog/mcp", "application/json", fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_readings","arguments":{"sensor_id":%q,"limit":2}}}`, sensor.ID), 200)
	do("POST", ext+"/mcp", "application/json", initialize, 404)
	do("POST", "/api/v1/catalog/mcp", "application/json", `{"jsonrpc":"2.0","id":8,"method":"ping","pad":"`+string(bytes.Repeat([]byte("x"), 1<<20+1))+`"}`, 413)
	if sensor.FeedID != "" {
		do("POST", "/api/v1/projects/"+sensor.FeedID+"/mcp", "application/json", `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, 200)
	}
	t.Logf("checked: %s", strings.Join(v.Seen(), "; "))

	// The request id travelled: the gateway's and the service's log lines of these
	// requests carry it, and no log line carries the key.
	for name, path := range map[string]string{"gateway": gatewayLog, "ocean": oceanLog} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(`"request_id":"e2e-contract"`)) {
			t.Errorf("the %s log has no line with the request id", name)
		}
		if bytes.Contains(b, []byte(devKey)) {
			t.Errorf("the %s log contains the API key", name)
		}
	}
}
