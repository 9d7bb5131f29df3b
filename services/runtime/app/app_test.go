package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/internal/providerdata"
	"github.com/sensorgate/sensorgate/services/ocean"
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/runtime/mcpserver"
)

// echoTool is a stand-in domain tool: it returns the station it was asked about, falling
// back to the sensor the gateway injected.
func echoTool(s *mcp.Server, d mcpserver.Deps) error {
	type in struct {
		StationID string `json:"station_id,omitempty"`
	}
	type out struct {
		StationID string `json:"station_id"`
		Name      string `json:"name"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: mcpserver.ToolName(d.ServiceID, "station_name"), Description: "Name of a station."},
		func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
			id := stationArg(req, a.StationID)
			st, err := d.Store.Station(ctx, id)
			if err != nil {
				return nil, out{}, err
			}
			return nil, out{StationID: st.ExternalID, Name: st.Name}, nil
		})
	return nil
}

// service runs the ocean service through app.Run, as main does, and waits until it is
// ready; stopping it checks that Run returns cleanly.
func service(t *testing.T, env map[string]string) string {
	t.Helper()
	base, cancel, wait := runService(t, env)
	t.Cleanup(func() {
		cancel()
		if err := wait(); err != nil {
			t.Errorf("run: %v", err)
		}
	})
	return base
}

// runService starts the ocean service and waits until /readyz answers 200; cancel begins
// its shutdown and wait returns what Run returned (an error when it did not return within
// 30 s).
func runService(t *testing.T, env map[string]string) (base string, cancel context.CancelFunc, wait func() error) {
	t.Helper()
	addr := testenv.FreeAddr(t)
	if env["SERVICE_ADDR"] == "" {
		env["SERVICE_ADDR"] = addr
	}
	if env["READINGS_SQLITE_PATH"] == "" && env["READINGS_DATABASE_URL"] == "" {
		env["READINGS_SQLITE_PATH"] = filepath.Join(t.TempDir(), "ocean.db")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	var mu sync.Mutex
	errc := make(chan error, 1)
	go func() {
		errc <- app.Run(ctx, ocean.Definition(echoTool), nil, func(k string) string { return env[k] }, lockedWriter{&mu, &out})
	}()
	wait = sync.OnceValue(func() error {
		select {
		case err := <-errc:
			return err
		case <-time.After(30 * time.Second):
			return fmt.Errorf("service did not stop within 30s")
		}
	})
	base = "http://" + env["SERVICE_ADDR"]
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + contract.PathReadyz)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, cancel, wait
			}
		}
		select {
		case err := <-errc:
			cancel()
			mu.Lock()
			t.Fatalf("service exited: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			mu.Lock()
			t.Fatalf("service not ready after 60s:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func get(t *testing.T, url string, header map[string]string, into any) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s: content type %q, body %s", url, resp.Header.Get("Content-Type"), b)
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("GET %s: %v in %s", url, err, b)
		}
	}
	return resp.StatusCode, b
}

func TestInternalAPISimulate(t *testing.T) {
	t.Parallel()
	base := service(t, map[string]string{"SIM_STATIONS": "6", "SIM_DAYS": "3", "SIM_SEED": "7"})

	var meta contract.ServiceMeta
	if code, b := get(t, base+contract.PathMeta, nil, &meta); code != 200 || meta.ID != "ocean" || meta.Port == 0 ||
		len(meta.Providers) != 2 || len(meta.Feeds) != 2 || meta.SensorCount != 12 || meta.LastIngestAt == nil ||
		len(meta.Tools) != 1 || meta.Tools[0] != "ocean.station_name" {
		t.Fatalf("meta = %d %s", code, b)
	}
	var health contract.Health
	if code, b := get(t, base+contract.PathHealth, nil, &health); code != 200 || health.Status != contract.StatusOK ||
		!health.Store.Reachable || len(health.Providers) != 2 || health.Providers[0].RowsIngested == 0 || health.Providers[0].LagSeconds == nil {
		t.Fatalf("health = %d %s", code, b)
	}
	var page contract.StationPage
	// Six NDBC and six CO-OPS stations.
	if code, b := get(t, base+contract.PathSensors+"?limit=5&page=3", nil, &page); code != 200 || len(page.Sensors) != 2 ||
		page.Pagination.Total != 12 || page.Pagination.TotalPages != 3 || page.ServerTime.IsZero() {
		t.Fatalf("sensors page 2 = %d %s", code, b)
	}
	if code, b := get(t, base+contract.PathSensors+"?updated_since="+page.ServerTime.Format(time.RFC3339Nano), nil, &page); code != 200 || len(page.Sensors) != 0 {
		t.Fatalf("sensors updated since the last sync = %d %s", code, b)
	}
	id := "SG001"

	var latest contract.LatestResponse
	if code, b := get(t, base+contract.LatestPath(strings.ToLower(id)), nil, &latest); code != 200 || latest.ExternalID != id ||
		latest.SensorID != ids.Sensor("ocean", id).String() || latest.ServiceID != "ocean" || len(latest.Reading.Measurements) == 0 ||
		latest.Reading.Location == nil || latest.Provenance.SourceID != id || latest.Provenance.Provider != "noaa-ndbc" ||
		latest.Provenance.FetchedAt == nil || latest.Reading.ID != ids.Reading(ids.Sensor("ocean", id), latest.Reading.Timestamp.Time).String() {
		t.Fatalf("latest = %d %s", code, b)
	}
	if !strings.Contains(string(mustGet(t, base+contract.LatestPath(id))), `.000Z"`) {
		t.Fatal("timestamps are not in milliseconds UTC")
	}

	type readings struct {
		contract.ReadingsResponse
		Readings []map[string]any `json:"readings"`
	}
	cases := []struct {
		name  string
		query string
		code  int
		check func(r readings) string
	}{
		{"default page", "", 200, func(r readings) string {
			if len(r.Readings) != 100 || r.Pagination.Limit != 100 || r.Pagination.Page != 1 || r.Pagination.Total < 3*144*9/10 {
				return "want 100 of about 432"
			}
			return ""
		}},
		{"limit clamped", "?limit=1000", 200, func(r readings) string {
			if len(r.Readings) != min(r.Pagination.Total, 500) || r.Pagination.Limit != 500 {
				return "want the limit clamped to 500"
			}
			return ""
		}},
		{"beyond the end", "?page=999", 200, func(r readings) string {
			if len(r.Readings) != 0 || r.Pagination.Total == 0 {
				return "want empty with the true total"
			}
			return ""
		}},
		{"ascending", "?sort=asc&limit=2", 200, func(r readings) string {
			if r.Readings[0]["timestamp"].(string) >= r.Readings[1]["timestamp"].(string) {
				return "want oldest first"
			}
			return ""
		}},
		{"newest first", "?limit=2", 200, func(r readings) string {
			if r.Readings[0]["timestamp"].(string) <= r.Readings[1]["timestamp"].(string) {
				return "want newest first"
			}
			return ""
		}},
		{"parameter filter", "?parameter=water_temperature_c&limit=5", 200, func(r readings) string {
			for _, rd := range r.Readings {
				for _, m := range rd["measurements"].([]any) {
					if m.(map[string]any)["parameter"] != "water_temperature_c" {
						return "other parameters kept"
					}
				}
			}
			return ""
		}},
		{"raw", "?data_format=raw&limit=3", 200, func(r readings) string {
			for _, rd := range r.Readings {
				if rd["raw"] == nil || rd["source_format"] != "ndbc.realtime2.stdmet" || rd["measurements"] != nil {
					return "want raw and source_format instead of measurements"
				}
			}
			return ""
		}},
		{"last day", "?days=1&limit=500", 200, func(r readings) string {
			if n := len(r.Readings); n < 100 || n > 145 {
				return fmt.Sprintf("want about 144 ten-minute readings, got %d", n)
			}
			return ""
		}},
		{"empty range", "?since=2001-01-01&until=2001-01-02", 200, func(r readings) string {
			if len(r.Readings) != 0 || r.Pagination.Total != 0 {
				return "want empty"
			}
			return ""
		}},
		{"days with since", "?days=1&since=2026-01-01", 400, nil},
		{"bad limit", "?limit=abc", 400, nil},
		{"unknown parameter", "?parameter=vibes", 400, nil},
		{"bad format", "?data_format=xml", 400, nil},
	}
	for _, c := range cases {
		var r readings
		code, b := get(t, base+contract.ReadingsPath(id)+c.query, nil, &r)
		if code != c.code {
			t.Errorf("%s: status %d, want %d: %s", c.name, code, c.code, b)
			continue
		}
		if c.code != 200 {
			var e struct{ Error, Code string }
			_ = json.Unmarshal(b, &e)
			if e.Code != "invalid_parameter" || e.Error == "" {
				t.Errorf("%s: error body %s", c.name, b)
			}
			continue
		}
		if msg := c.check(r); msg != "" {
			t.Errorf("%s: %s: %.300s", c.name, msg, b)
		}
	}

	errs := []struct {
		method, path string
		code         int
		errCode      string
	}{
		{"GET", contract.LatestPath("NOPE1"), 404, "sensor_not_found"},
		{"GET", contract.ReadingsPath("NOPE1"), 404, "sensor_not_found"},
		{"GET", contract.PathSensors + "/NOPE1", 404, "sensor_not_found"},
		{"GET", "/v2/elsewhere", 404, "not_found"},
		{"POST", contract.PathMeta, 405, "method_not_allowed"},
		{"GET", contract.PathMCP, 405, "method_not_allowed"},
	}
	for _, e := range errs {
		req, _ := http.NewRequest(e.method, base+e.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error, Code string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != e.code || body.Code != e.errCode || body.Error == "" {
			t.Errorf("%s %s = %d %+v, want %d %s", e.method, e.path, resp.StatusCode, body, e.code, e.errCode)
		}
	}
}

func mustGet(t *testing.T, url string) []byte {
	t.Helper()
	_, b := get(t, url, nil, nil)
	return b
}

func post(t *testing.T, url, contentType, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// MCP works for a bare client (Content-Type only) and for the official SDK client; the
// injected sensor context reaches tools.
func TestMCP(t *testing.T) {
	t.Parallel()
	base := service(t, map[string]string{"SIM_STATIONS": "2", "SIM_DAYS": "1"})
	u := base + contract.PathMCP
	cases := []struct {
		name, ctype, body string
		code              int
		want              string
	}{
		{"initialize", "application/json", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`, 200, `"protocolVersion":"2024-11-05"`},
		{"tools/list", "application/json", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, 200, `"ocean.station_name"`},
		{"tools/call with injected sensor", "application/json", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ocean.station_name","arguments":{},"_meta":{"sensor_external_id":"SG002"}}}`, 200, `"station_id":"SG002"`},
		{"tools/call unknown station", "application/json", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ocean.station_name","arguments":{"station_id":"NOPE"}}}`, 200, `"isError":true`},
		{"unknown method", "application/json", `{"jsonrpc":"2.0","id":5,"method":"tools/dance","params":{}}`, 200, `-32601`},
		{"parse error", "application/json", `{"jsonrpc":`, 200, `-32700`},
		{"not an object", "application/json", `[1,2]`, 200, `-32600`},
		{"wrong media type", "text/plain", `{}`, 415, `unsupported_media_type`},
		{"too large", "application/json", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"pad":"` + strings.Repeat("a", mcpserver.MaxBody) + `"}}`, 413, `payload_too_large`},
	}
	for _, c := range cases {
		code, b := post(t, u, c.ctype, c.body)
		if code != c.code || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %.300s; want %d containing %s", c.name, code, b, c.code, c.want)
		}
	}

	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sdk-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u}, nil)
	if err != nil {
		t.Fatalf("SDK client connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ocean.station_name", Arguments: map[string]any{"station_id": "sg001"}})
	if err != nil || res.IsError {
		t.Fatalf("SDK client call: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), `"SG001"`) {
		t.Fatalf("structured content %s", b)
	}
}

func TestInternalToken(t *testing.T) {
	t.Parallel()
	base := service(t, map[string]string{"SIM_STATIONS": "1", "SIM_DAYS": "0", "INTERNAL_TOKEN": "s3cret"})
	cases := []struct {
		path  string
		token string
		code  int
	}{
		{contract.PathMeta, "", 403},
		{contract.PathMeta, "wrong", 403},
		{contract.PathMeta, "s3cret", 200},
		{contract.PathSensors, "", 403},
		{contract.PathHealthz, "", 200},
		{contract.PathReadyz, "", 200},
		{"/metrics", "", 403},
		{"/metrics", "wrong", 403},
	}
	for _, c := range cases {
		h := map[string]string{}
		if c.token != "" {
			h[contract.HeaderInternalToken] = c.token
		}
		code, b := get(t, base+c.path, h, nil)
		if code != c.code {
			t.Errorf("%s with token %q: %d %s, want %d", c.path, c.token, code, b, c.code)
		}
		// A refusal names no internal header.
		if code == 403 && (strings.Contains(strings.ToLower(string(b)), "internal-token") || strings.Contains(strings.ToLower(string(b)), "x-internal")) {
			t.Errorf("%s: the 403 names the internal header: %s", c.path, b)
		}
	}
	// /metrics (text, not JSON) opens with the token, or with it as a bearer credential
	// (Prometheus' authorization setting).
	status := func(h map[string]string) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for h, want := range map[[2]string]int{
		{contract.HeaderInternalToken, "s3cret"}: 200, {"Authorization", "Bearer s3cret"}: 200,
		{"Authorization", "Bearer wrong"}: 403, {"Authorization", "s3cret"}: 403,
	} {
		if got := status(map[string]string{h[0]: h[1]}); got != want {
			t.Errorf("/metrics with %s: %q: %d, want %d", h[0], h[1], got, want)
		}
	}
	if code, _ := get(t, base+contract.PathMeta, map[string]string{"Authorization": "Bearer s3cret"}, nil); code != 403 {
		t.Errorf("a bearer token opens only /metrics; /meta answered %d", code)
	}
}

// Files mode over the recorded NDBC realtime2 file of TPLM2 (45 days, repeated on every
// real poll), given twice, on PostgreSQL: each reading is stored once.
func TestFilesReplayRealNDBCOnPostgres(t *testing.T) {
	t.Parallel()
	data := providerdata.Dir()
	if data == "" {
		t.Fatalf("recorded provider payloads not found (testdata/providers at the repository root); set %s", providerdata.EnvDir)
	}
	body, err := os.ReadFile(filepath.Join(data, "ndbc", "TPLM2.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"TPLM2.txt", "again/TPLM2.txt"} {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := service(t, map[string]string{"SOURCE_MODE": "files", "SOURCE_DIR": dir, "READINGS_DATABASE_URL": testenv.Postgres(t)})
	var r contract.ReadingsResponse
	if code, b := get(t, base+contract.ReadingsPath("tplm2")+"?limit=1&sort=asc", nil, &r); code != 200 {
		t.Fatalf("readings: %d %s", code, b)
	}
	var h contract.Health
	get(t, base+contract.PathHealth, nil, &h)
	// 1094 rows in the file; rows whose every value is missing carry no reading.
	if r.Pagination.Total < 1000 || r.Pagination.Total > 1094 || int64(r.Pagination.Total) != h.Providers[0].RowsIngested {
		t.Fatalf("stored %d readings, health says %d ingested; want each of the file's rows once", r.Pagination.Total, h.Providers[0].RowsIngested)
	}
	if got := r.Readings[0].Timestamp.Format(time.RFC3339); got != "2022-06-29T00:00:00Z" {
		t.Fatalf("oldest reading at %s", got)
	}
}

// stationArg returns the station a tool should act on: the caller's argument when given,
// else the sensor_external_id the gateway injected at sensor scope, else "".
func stationArg(req *mcp.CallToolRequest, given string) string {
	if given != "" || req == nil || req.Params == nil {
		return given
	}
	if v, ok := req.Params.GetMeta()[mcpserver.MetaSensorExternalID].(string); ok {
		return v
	}
	return ""
}
