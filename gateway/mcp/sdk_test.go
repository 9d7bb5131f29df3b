package mcp_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/gateway/mcp"
)

// headerTransport adds fixed headers to every request, as an MCP host configured with an
// API key does, and holds every tools/call answer to the size rule (checkToolAnswer).
type headerTransport struct {
	header http.Header
	tb     testing.TB
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || t.tb == nil || r.Method != http.MethodPost || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	checkToolAnswer(t.tb, r, b)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// sdkCase is one endpoint and a tool call that must succeed there.
type sdkCase struct {
	scope, path, tool string
	args              map[string]any
}

// target is the sensor the cases are about.
type target struct{ ID, ExternalID, FeedSlug string }

func sdkCases(s0 target) []sdkCase {
	return []sdkCase{
		{"service", "/api/v1/services/ocean/mcp", "ocean.latest_observation", map[string]any{"station_id": s0.ExternalID}},
		{"sensor", "/api/v1/sensors/" + s0.ID + "/mcp", "ocean.latest_observation", map[string]any{}},
		{"project", "/api/v1/projects/" + s0.FeedSlug + "/mcp", "list_project_sensors", map[string]any{"limit": 2}},
		{"registry", "/api/v1/sensors/registry/mcp", "sensor_last_reading", map[string]any{"sensor_id": s0.ID}},
		{"catalog", "/api/v1/catalog/mcp", "get_readings", map[string]any{"sensor_id": s0.ExternalID, "limit": 2}},
	}
}

// testGoSDK drives every gateway MCP endpoint with the official Go SDK client over its
// streamable HTTP transport, with only an x-api-key header added: at 2026-07-28 (the SDK's
// default) server/discover and stateless calls with the version in each request's _meta
// and the Mcp-Method/Mcp-Name headers; at the older versions initialize; then tools/list
// and tools/call.
func testGoSDK(t *testing.T, g *gateway) {
	s0 := target{ID: g.Sensors[0].ID.String(), ExternalID: g.Sensors[0].ExternalID, FeedSlug: g.Sensors[0].FeedSlug}
	for _, c := range sdkCases(s0) {
		for _, version := range []string{"", mcp.StatelessProtocolVersion, mcp.LatestProtocolVersion, "2025-06-18", "2024-11-05"} {
			t.Run(c.scope+"/"+orLatest(version), func(t *testing.T) {
				t.Parallel()
				sdkRoundTrip(t, g.URL, c, version, devKey)
			})
		}
	}

	t.Run("underscore names through the SDK", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		path := "/api/v1/sensors/" + g.Sensors[0].ID.String() + "/mcp"
		cs := connectSDK(ctx, t, g.URL+path, "", http.Header{"X-Api-Key": {devKey}, mcp.HeaderToolNames: {"underscore"}})
		defer cs.Close()
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools.Tools {
			if strings.Contains(tool.Name, ".") {
				t.Errorf("dotted name %q in underscore mode", tool.Name)
			}
		}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ocean__latest_observation", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("alias call: %v %+v", err, res)
		}
	})

	t.Run("SDK sees a missing key", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client := sdk.NewClient(&sdk.Implementation{Name: "sensorgate-test", Version: "1"}, nil)
		_, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: g.URL + "/api/v1/catalog/mcp", MaxRetries: -1}, nil)
		if err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
			t.Errorf("connect without a key: %v, want a 401", err)
		}
	})
}

func connectSDK(ctx context.Context, t testing.TB, endpoint, version string, header http.Header) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "sensorgate-test", Version: "1"}, nil)
	transport := &sdk.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: headerTransport{header: header, tb: t}, Timeout: 30 * time.Second},
		MaxRetries: -1,
	}
	var opts *sdk.ClientSessionOptions
	if version != "" {
		opts = &sdk.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(ctx, transport, opts)
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	return cs
}

func orLatest(v string) string {
	if v == "" {
		return "sdk-default"
	}
	return v
}

// sdkRoundTrip connects the Go SDK client to one endpoint and runs initialize, tools/list,
// tools/call and ping.
func sdkRoundTrip(t *testing.T, base string, c sdkCase, version, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := connectSDK(ctx, t, base+c.path, version, http.Header{"X-Api-Key": {key}})
	defer cs.Close()
	want := version
	if want == "" {
		want = mcp.StatelessProtocolVersion // the SDK's newest, which every scope speaks
	}
	if got := cs.InitializeResult().ProtocolVersion; got != want {
		t.Errorf("negotiated %q, want %q", got, want)
	}
	if cs.InitializeResult().Capabilities.Tools == nil {
		t.Errorf("no tools capability")
	}
	tools := listHas(ctx, t, cs, c.tool)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", c.tool, err)
	}
	if res.IsError || res.StructuredContent == nil || len(res.Content) == 0 {
		t.Fatalf("tools/call %s: isError %v, structured %v, content %v", c.tool, res.IsError, res.StructuredContent, res.Content)
	}
	if want == mcp.StatelessProtocolVersion {
		// 2026-07-28 has no ping; its list results carry cache hints.
		if tools.TTLMs <= 0 || tools.CacheScope == "" {
			t.Errorf("tools/list cache hints: ttlMs %d, cacheScope %q", tools.TTLMs, tools.CacheScope)
		}
		return
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Errorf("ping: %v", err)
	}
}

// listHas runs tools/list through the SDK client and fails unless it names tool.
func listHas(ctx context.Context, t *testing.T, cs *sdk.ClientSession, tool string) *sdk.ListToolsResult {
	t.Helper()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, tool) {
		t.Fatalf("tools/list %v lacks %s", names, tool)
	}
	return tools
}
