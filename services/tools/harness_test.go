package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/mcpserver"
	"github.com/sensorgate/sensorgate/services/runtime/store"
	"github.com/sensorgate/sensorgate/services/tools"
)

// now is the clock of the fixture services: readings are placed relative to it so ages
// and staleness are exact.
var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func fptr(v float64) *float64 { return &v }

// obs is one observation of a fixture: parameter -> value in the canonical unit.
type obs struct {
	at   time.Time
	vals map[string]float64
}

// batch builds a store batch of one station from canonical values, each normalized
// through pkg/canon as an adapter would.
func batch(t testing.TB, provider, feed string, st contract.Station, rows []obs) store.Batch {
	t.Helper()
	b := store.Batch{Provider: provider, Feed: feed, FetchedAt: now.Add(-time.Minute), Stations: []contract.Station{st}}
	for _, r := range rows {
		o := observation.Observation{StationID: st.ExternalID, Time: r.at, Lat: st.Latitude, Lon: st.Longitude, RawFormat: "test.json"}
		for p, v := range r.vals {
			cp, _ := canon.Lookup(p)
			m, err := canon.Normalize(p, v, cp.Unit)
			if err != nil {
				t.Fatalf("normalize %s=%v: %v", p, v, err)
			}
			o.Measurements = append(o.Measurements, m)
		}
		raw, err := json.Marshal(r.vals)
		if err != nil {
			t.Fatal(err)
		}
		o.Raw = raw
		b.Observations = append(b.Observations, o)
	}
	return b
}

// serve starts serviceID's MCP endpoint over real HTTP, exactly as the service runtime
// mounts it (mcpserver + a SQLite readings store), with the tools of tools.For().
func serve(t testing.TB, serviceID string, batches ...store.Batch) string {
	t.Helper()
	url, _ := serveStore(t, serviceID, batches...)
	return url
}

// serveStore is serve that also hands back the store, for tests that break it.
func serveStore(t testing.TB, serviceID string, batches ...store.Batch) (string, store.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{SQLitePath: filepath.Join(t.TempDir(), serviceID+".db"), ServiceID: serviceID})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	for _, b := range batches {
		if _, err := st.Ingest(ctx, b); err != nil {
			t.Fatalf("ingest: %v", err)
		}
	}
	srv, err := mcpserver.New(ctx, "sensorgate-"+serviceID, "test",
		mcpserver.Deps{ServiceID: serviceID, Store: st, Now: func() time.Time { return now }}, tools.For())
	if err != nil {
		t.Fatalf("mcp server: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle(contract.PathMCP, srv)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs.URL + contract.PathMCP, st
}

// sdkSession connects the official Go SDK client to an MCP endpoint.
func sdkSession(t testing.TB, url string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "tools-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("sdk connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call runs tools/call through the SDK client and returns the result with its structured
// content decoded into out (when out is not nil and the call succeeded).
func call(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any, meta map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if meta != nil {
		// A copy: the SDK client adds its protocol keys to the map it is given.
		p.Meta = maps.Clone(meta)
	}
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if res.IsError {
		return res
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: result has no content", name)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || strings.TrimSpace(tc.Text) == "" {
		t.Fatalf("%s: first content is not a text rendering: %#v", name, res.Content[0])
	}
	if res.StructuredContent == nil {
		t.Fatalf("%s: no structuredContent", name)
	}
	validateOutput(t, cs, name, res.StructuredContent)
	if out != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: decode structuredContent: %v\n%s", name, err, b)
		}
	}
	return res
}

// text returns the concatenated text content of a result.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// rpcResponse is a JSON-RPC response as a bare client sees it.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// barePost sends one JSON-RPC message the way the simplest client does: Content-Type
// application/json and nothing else (no Accept, no session, no protocol header).
func barePost(t testing.TB, url string, msg string) (int, http.Header, rpcResponse) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(msg))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var r rpcResponse
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("POST %s: answer is not JSON (%v): %s", url, err, body)
		}
	}
	return resp.StatusCode, resp.Header, r
}

func rpc(t testing.TB, id int, method string, params any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		t.Fatalf("marshal test message: %v", err)
	}
	return string(b)
}

// validateOutput checks a result's structuredContent against the outputSchema the tool
// lists, since the server does not re-validate its own output on every call.
func validateOutput(t testing.TB, cs *mcp.ClientSession, name string, structured any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		if tool.Name != name {
			continue
		}
		b, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: output schema: %v", name, err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: resolve output schema: %v", name, err)
		}
		// Validate the JSON form, as a client sees it.
		b, err = json.Marshal(structured)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		if err := rs.Validate(v); err != nil {
			t.Fatalf("%s: structuredContent does not match the output schema: %v\n%s", name, err, b)
		}
		return
	}
	t.Fatalf("%s is not listed", name)
}
