package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/catalogsync"
	"github.com/sensorgate/sensorgate/gateway/latest"
	"github.com/sensorgate/sensorgate/gateway/mcp"
	"github.com/sensorgate/sensorgate/gateway/readings"
	"github.com/sensorgate/sensorgate/gateway/render"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

const (
	devKey        = "sg_dev_mcp_test_key_0123456789abcdef"
	internalToken = "mcp-test-internal-token"
)

// binaries builds the service binaries once per test process: the tests talk to the real
// ocean service over HTTP, as the gateway does in production.
var binaries = testenv.Binaries{Pkgs: map[string]string{"ocean": "github.com/sensorgate/sensorgate/services/cmd/ocean"}}

func TestMain(m *testing.M) {
	code := m.Run()
	binaries.Remove()
	os.Exit(code)
}

// startService runs the ocean binary in simulate mode and waits until it is ready.
func startService(tb testing.TB, stations int) string {
	tb.Helper()
	bin := binaries.Path(tb, "ocean")
	addr := testenv.FreeAddr(tb)
	p := testenv.StartProcess(tb, testenv.Command{Name: "ocean", Path: bin, Stop: syscall.SIGTERM, Env: []string{
		"SERVICE_ADDR=" + addr,
		"READINGS_SQLITE_PATH=" + filepath.Join(tb.TempDir(), "ocean.db"),
		"SOURCE_MODE=simulate",
		fmt.Sprintf("SIM_STATIONS=%d", stations),
		"SIM_DAYS=2",
		"SIM_SEED=11",
		"INTERNAL_TOKEN=" + internalToken,
		"LOG_LEVEL=warn",
	}})
	base := "http://" + addr
	p.WaitReady(tb, base+contract.PathReadyz, 60*time.Second)
	return base
}

// gateway is the MCP handlers mounted as routes.go mounts them, behind the real API-key
// authentication, on a real catalog synced from a real ocean service.
type gateway struct {
	URL        string
	ServiceURL string
	Store      *store.Store
	Handler    *mcp.Handler
	Sensors    []catalog.Sensor // the ocean sensors, by name
	OwnerID    uuid.UUID
	// Metrics gathers the readings cache's lookups (sensorgate_proxy_cache_lookups_total)
	// and the tool calls (sensorgate_mcp_calls_total).
	Metrics *prometheus.Registry
}

func newGateway(tb testing.TB, stations int) *gateway {
	tb.Helper()
	ctx := context.Background()
	svcURL := startService(tb, stations)
	st, err := store.Open(ctx, store.Config{DatabaseURL: testenv.Postgres(tb), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	reg := prometheus.NewRegistry()
	clients, answers := upstreams(tb, st, map[string]string{"ocean": svcURL}, 0, reg)
	syncer, err := catalogsync.New(st, catalogsync.Config{Services: clients, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	if err := syncer.SyncOnce(ctx); err != nil {
		tb.Fatalf("catalog sync: %v", err)
	}
	if err := auth.BootstrapDevelopment(ctx, st, devKey); err != nil {
		tb.Fatalf("bootstrap key: %v", err)
	}
	authn, err := auth.New(st, auth.Options{Environment: catalog.EnvDevelopment, CacheTTL: time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	area := latest.New(latest.Options{Store: st, Services: map[string]latest.BatchClient{"ocean": clients["ocean"]}})
	h, err := mcp.New(mcp.Config{
		Store: st, Clients: clients, Readings: answers, Logger: slog.New(slog.DiscardHandler), AreaLatest: area, Registerer: reg,
		Viewer: func(c *gin.Context) (uuid.UUID, bool) {
			id, ok := auth.FromGin(c)
			return id.OwnerID, ok
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	v1 := r.Group("/api/v1", renderErrors, auth.Middleware(authn))
	v1.GET("/sensors/:id/readings", render.Readings(answers, func(c *gin.Context, err error) { _ = c.Error(err); c.Abort() }))
	for path, handler := range map[string]gin.HandlerFunc{
		"/services/:id/mcp":     h.ServiceMCP(),
		"/sensors/:id/mcp":      h.SensorMCP(),
		"/sensors/registry/mcp": h.RegistryMCP(),
		"/projects/:id/mcp":     h.ProjectMCP(),
		"/catalog/mcp":          h.CatalogMCP(),
	} {
		v1.POST(path, handler)
		v1.GET(path, handler)
	}
	srv := httptest.NewServer(r)
	tb.Cleanup(srv.Close)

	page, err := st.ListSensors(ctx, catalog.SensorFilter{ServiceID: "ocean", Page: 1, Limit: 100})
	if err != nil || len(page.Sensors) == 0 {
		tb.Fatalf("synced catalog has no ocean sensors: %v", err)
	}
	return &gateway{URL: srv.URL, ServiceURL: svcURL, Store: st, Handler: h, Sensors: page.Sensors, OwnerID: auth.OwnerID("development"), Metrics: reg}
}

// upstreams are the services' clients and the readings path over them, as gateway/app
// builds them; timeout 0 keeps the default deadlines.
func upstreams(tb testing.TB, st catalog.Store, urls map[string]string, timeout time.Duration, reg prometheus.Registerer) (map[string]*contract.Client, *readings.Handlers) {
	tb.Helper()
	clients, err := contract.NewClients(urls, contract.Options{Token: internalToken,
		Timeouts: contract.Timeouts{Latest: timeout, Readings: timeout, Health: timeout}})
	if err != nil {
		tb.Fatal(err)
	}
	cache, err := readings.NewCache(readings.CacheOptions{TTL: readings.DefaultCacheTTL, Registerer: reg})
	if err != nil {
		tb.Fatal(err)
	}
	answers, err := readings.NewHandlers(readings.HandlerOptions{Clients: clients, Cache: cache,
		Resolve: func(ctx context.Context, ref string) (catalog.Sensor, error) {
			return catalog.ResolveSensor(ctx, st, ref)
		}})
	if err != nil {
		tb.Fatal(err)
	}
	return clients, answers
}

// renderErrors writes the error the auth middleware records, as the gateway's own error
// middleware does.
func renderErrors(c *gin.Context) {
	c.Next()
	if len(c.Errors) > 0 && !c.Writer.Written() {
		apierr.Write(c.Writer, c.Errors.Last().Err)
	}
}

// rpcResult is a decoded HTTP answer of an MCP endpoint.
type rpcResult struct {
	Status int
	Header http.Header
	Body   []byte
	Msg    struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
}

// post sends body to path the way a bare client does: x-api-key and Content-Type only.
func (g *gateway) post(tb testing.TB, path, body string, header ...string) rpcResult {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, g.URL+path, bytes.NewBufferString(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("x-api-key", devKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	return do(tb, req)
}

func do(tb testing.TB, req *http.Request) rpcResult {
	tb.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	checkToolAnswer(tb, req, b)
	r := rpcResult{Status: resp.StatusCode, Header: resp.Header, Body: b}
	if len(b) > 0 && resp.Header.Get("Content-Type") != "" {
		_ = json.Unmarshal(b, &r.Msg)
	}
	return r
}

// checkToolAnswer fails tb when req was a tools/call and its answer is over
// mcp.MaxToolResultBytes: every tool call the suite makes, through post, call or the go-sdk
// client (headerTransport), is held to the size an agent's context can take.
func checkToolAnswer(tb testing.TB, req *http.Request, answer []byte) {
	if tb == nil || len(answer) <= mcp.MaxToolResultBytes || req.GetBody == nil {
		return
	}
	body, err := req.GetBody()
	if err != nil {
		return
	}
	defer body.Close()
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.NewDecoder(body).Decode(&msg) == nil && msg.Method == "tools/call" {
		tb.Errorf("tools/call %s at %s answered %d bytes, over the %d a tool answer may take", msg.Params.Name, req.URL.Path, len(answer), mcp.MaxToolResultBytes)
	}
}

// call sends a tools/call and decodes the tool result.
func (g *gateway) call(tb testing.TB, path, tool string, args any, header ...string) toolResult {
	tb.Helper()
	params := map[string]any{"name": tool, "arguments": args}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	r := g.post(tb, path, string(b), header...)
	if r.Status != http.StatusOK || r.Msg.Error != nil {
		tb.Fatalf("tools/call %s at %s: status %d: %s", tool, path, r.Status, r.Body)
	}
	var tr toolResult
	if err := json.Unmarshal(r.Msg.Result, &tr); err != nil {
		tb.Fatalf("tools/call %s: result %s: %v", tool, r.Msg.Result, err)
	}
	return tr
}

type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

func (tr toolResult) text() string {
	if len(tr.Content) == 0 {
		return ""
	}
	return tr.Content[0].Text
}

func (tr toolResult) decode(tb testing.TB, v any) {
	tb.Helper()
	if tr.IsError {
		tb.Fatalf("tool failed: %s", tr.text())
	}
	if err := json.Unmarshal(tr.StructuredContent, v); err != nil {
		tb.Fatalf("structuredContent %s: %v", tr.StructuredContent, err)
	}
}
