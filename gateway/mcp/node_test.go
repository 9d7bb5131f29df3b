package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/mcp"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// nodeDir installs scripts/mcp-client, the committed package of the TypeScript SDK client
// and the conformance suite (pinned by its package-lock.json), once per test process; a
// machine without node/npm, or offline, skips the tests that need them, saying why.
func nodeDir(t *testing.T) string {
	t.Helper()
	return testenv.Node(t, testenv.NodePackage{Dir: filepath.Join("..", "..", "scripts", "mcp-client"),
		Files: []string{"client.mjs", "every-tool.mjs", "conformance-2025-11-25.yaml", "conformance-2026-07-28.yaml",
			"conformance-service-2025-11-25.yaml", "conformance-service-2026-07-28.yaml"},
		Needs: "the TypeScript SDK and conformance tests need Node.js 20+ and npm"})
}

// runNode runs a node script of nodeDir with args and returns what it printed.
func runNode(t *testing.T, timeout time.Duration, script string, args ...string) []byte {
	t.Helper()
	out, stderr, err := testenv.RunIn(nodeDir(t), timeout, nil, "node", append([]string{script}, args...)...)
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr)
	}
	return out
}

// testNodeSDK drives every gateway MCP endpoint with the official TypeScript SDK client
// (@modelcontextprotocol/sdk, run by node), which also validates structuredContent against
// each tool's outputSchema.
func testNodeSDK(t *testing.T, base string, s0 target) {
	cases := sdkCases(s0)
	b, _ := json.Marshal(cases2JSON(cases))
	out := runNode(t, 2*time.Minute, "client.mjs", base, devKey, string(b))
	var results []struct {
		Scope, Tool, ProtocolVersion, Error, Text string
		Tools                                     []string
		IsError, Structured, OK                   bool
	}
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("node output %s: %v", out, err)
	}
	if len(results) != len(cases) {
		t.Fatalf("%d results for %d cases", len(results), len(cases))
	}
	for _, r := range results {
		if !r.OK {
			t.Errorf("%s: %s", r.Scope, r.Error)
			continue
		}
		if r.ProtocolVersion != mcp.LatestProtocolVersion {
			t.Errorf("%s: negotiated %q", r.Scope, r.ProtocolVersion)
		}
		if !slices.Contains(r.Tools, r.Tool) || r.IsError || !r.Structured {
			t.Errorf("%s: tools %v, %s isError %v structured %v: %s", r.Scope, r.Tools, r.Tool, r.IsError, r.Structured, r.Text)
		}
	}
}

// everyToolScopes are the six scopes with the arguments of each tool that needs some
// (every other tool is called with {}); __sensor fills the sensor resource template.
func everyToolScopes(s0 target) []map[string]any {
	station := map[string]any{"sensor_id": s0.ExternalID}
	serviceArgs := map[string]any{
		"ocean.latest_observation": station, "ocean.observations": map[string]any{"sensor_id": s0.ExternalID, "limit": 2},
		"ocean.describe_station": station, "ocean.sea_state": station, "ocean.list_stations": map[string]any{"limit": 2},
	}
	return []map[string]any{
		{"scope": "catalog", "path": "/api/v1/catalog/mcp", "args": map[string]any{
			"search_sensors": map[string]any{"limit": 2}, "describe_sensor": station,
			"get_readings": map[string]any{"sensor_id": s0.ExternalID, "limit": 2}, "__sensor": s0.ExternalID,
			"latest_in_area": map[string]any{"limit": 5}, "aggregate_readings": map[string]any{"sensor_id": s0.ExternalID, "interval": "6h", "days": 1}},
			"errorProbe": map[string]any{"tool": "get_readings", "args": map[string]any{"sensor_id": "no-such-sensor"}}},
		{"scope": "alerts", "path": "/api/v1/alerts/mcp", "args": map[string]any{
			"create_alert_rule": map[string]any{"name": "every tool", "target": map[string]any{"sensor_ids": []string{s0.ID}},
				"condition": map[string]any{"parameter": "wave_height_m", "op": "above", "value": 4}, "for": "PT1H"},
			"delete_alert_rule": map[string]any{"rule_id": "__created_rule__"}},
			"errorProbe": map[string]any{"tool": "create_alert_rule", "args": map[string]any{"name": "", "target": map[string]any{}, "condition": map[string]any{"op": "above"}}}},
		{"scope": "registry", "path": "/api/v1/sensors/registry/mcp", "args": map[string]any{
			"list_sensors": map[string]any{"limit": 2}, "sensor_connected_services": station,
			"sensor_cleaned_stream": map[string]any{"sensor_id": s0.ExternalID, "limit": 2}, "sensor_last_reading": station}},
		{"scope": "service", "path": "/api/v1/services/ocean/mcp", "args": serviceArgs},
		{"scope": "sensor", "path": "/api/v1/sensors/" + s0.ID + "/mcp", "args": map[string]any{"ocean.observations": map[string]any{"limit": 2}, "ocean.list_stations": map[string]any{"limit": 2}}},
		{"scope": "project", "path": "/api/v1/projects/" + s0.FeedSlug + "/mcp", "args": serviceArgs},
	}
}

// testNodeEveryTool lists and calls every tool of every scope with the TypeScript SDK
// client: each must answer without isError, with structuredContent valid against its
// outputSchema (the SDK checks), a title and readOnly/openWorld annotations; the catalog's
// resources must list and read.
func testNodeEveryTool(t *testing.T, base string, s0 target) {
	b, _ := json.Marshal(everyToolScopes(s0))
	out := runNode(t, 3*time.Minute, "every-tool.mjs", base, devKey, string(b))
	var results []struct {
		Scope, Tool, Title, Error, Text                            string
		ReadOnly, OpenWorld, OutputSchema, IsError, Structured, OK bool
	}
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("node output %s: %v", out, err)
	}
	perScope := map[string]int{}
	for _, r := range results {
		perScope[r.Scope]++
		switch {
		case !r.OK:
			t.Errorf("%s %s: %s", r.Scope, r.Tool, r.Error)
		case strings.HasPrefix(r.Tool, "error:"):
			if !r.IsError || !strings.Contains(r.Text, "(") {
				t.Errorf("%s %s: isError %v, text %q: want the failure and its code", r.Scope, r.Tool, r.IsError, r.Text)
			}
		case r.Tool != "resources" && r.Scope == "alerts" && (r.Title == "" || !r.OpenWorld || !r.OutputSchema):
			t.Errorf("%s %s: title %q openWorldHint set %v outputSchema %v", r.Scope, r.Tool, r.Title, r.OpenWorld, r.OutputSchema)
		case r.IsError || !r.Structured:
			t.Errorf("%s %s: isError %v structured %v: %s", r.Scope, r.Tool, r.IsError, r.Structured, r.Text)
		case r.Tool != "resources" && r.Scope != "alerts" && (r.Title == "" || !r.ReadOnly || !r.OpenWorld || !r.OutputSchema):
			t.Errorf("%s %s: title %q readOnlyHint %v openWorldHint set %v outputSchema %v", r.Scope, r.Tool, r.Title, r.ReadOnly, r.OpenWorld, r.OutputSchema)
		}
	}
	// catalog 6 tools + resources + an error, registry 4, service 5, sensor 1 + 5, project
	// 2 + 5, alerts 4 + resources + an error.
	for scope, want := range map[string]int{"catalog": 8, "registry": 4, "service": 5, "sensor": 6, "project": 7, "alerts": 6} {
		if perScope[scope] < want {
			t.Errorf("%s: %d tools called, want at least %d", scope, perScope[scope], want)
		}
	}
	t.Logf("every tool of every scope called with the TypeScript SDK: %v", perScope)
}

// testToolListSizes measures the tools/list answer of every scope: an agent loads it into
// its context, so it must stay under 20 KB (docs/mcp.md reports the figures).
func testToolListSizes(t *testing.T, base string, s0 target) {
	const budget = 20 << 10
	for _, s := range everyToolScopes(s0) {
		req, _ := http.NewRequest(http.MethodPost, base+s["path"].(string), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("x-api-key", devKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		resp.Body.Close()
		var res struct {
			Result struct {
				Tools []json.RawMessage `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal(body.Bytes(), &res) != nil || len(res.Result.Tools) == 0 {
			t.Fatalf("%s tools/list: %s", s["scope"], body.Bytes())
		}
		t.Logf("tools/list %-8s %2d tools %6d bytes", s["scope"], len(res.Result.Tools), body.Len())
		if body.Len() >= budget {
			t.Errorf("%s tools/list is %d bytes, over the %d-byte budget", s["scope"], body.Len(), budget)
		}
	}
}

func cases2JSON(cases []sdkCase) []map[string]any {
	var out []map[string]any
	for _, c := range cases {
		out = append(out, map[string]any{"scope": c.scope, "path": c.path, "tool": c.tool, "args": c.args})
	}
	return out
}

// conformanceScenarios are the scenarios of @modelcontextprotocol/conformance run at every
// endpoint, per protocol version; the catalog endpoint, which has tools and resources,
// runs the whole suite of each version instead (runConformance's full). Expected failures
// (features sensorgate does not offer, fixtures of the suite's reference server) are in
// scripts/mcp-client/conformance-<version>.yaml, with the reason of each.
var conformanceScenarios = map[string][]string{
	"2025-11-25": {"server-initialize", "ping", "tools-list", "dns-rebinding-protection"},
	"2026-07-28": {"server-stateless", "tools-list", "http-header-validation", "dns-rebinding-protection"},
}

// runConformance runs the conformance suite against endpoint at protocols 2025-11-25 and
// 2026-07-28: every scenario of each (full), or conformanceScenarios, and fails the test
// on any failure that the baseline (<baseline><version>.yaml) does not expect, and on a
// baseline entry that passes.
func runConformance(t *testing.T, endpoint string, full bool, baseline string) {
	t.Helper()
	dir := nodeDir(t)
	node := testenv.ConformanceNode(t, dir)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		args := []string{filepath.Join("node_modules", ".bin", "conformance"), "server", "--url", endpoint,
			"--expected-failures", baseline + version + ".yaml"}
		var runs [][]string
		switch {
		case full && version == "2026-07-28":
			runs = append(runs, append(args, "--requirements", version))
		case full:
			runs = append(runs, append(args, "--spec-version", version))
		default:
			for _, sc := range conformanceScenarios[version] {
				runs = append(runs, append(args, "--spec-version", version, "--scenario", sc))
			}
		}
		for _, run := range runs {
			text, err := conformanceRun(t, node, dir, run)
			if err != nil && warningsOnly(text) {
				// A SHOULD-level warning (a check the suite rates WARNING, such as
				// tools-list-deterministic-order, which fails when one of its repeated
				// requests fails on the way) is run a second time before it fails the
				// test: a protocol fault repeats, a dropped request of a loaded machine
				// does not. The first run's details stay in the log.
				t.Logf("conformance %v against %s: warnings only, running it again:\n%s", run[3:], endpoint, text)
				text, err = conformanceRun(t, node, dir, run)
			}
			if err != nil {
				t.Errorf("conformance %v against %s: %v\n%s", run[3:], endpoint, err, text)
			}
		}
	}
}

// conformanceRun runs the conformance command run in dir and returns what it printed,
// followed by the message of every check that did not succeed (from the results it saves),
// and an error when the run did not pass against its baseline.
func conformanceRun(t *testing.T, node, dir string, run []string) (string, error) {
	t.Helper()
	results := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append(slices.Clone(run), "--output-dir", results)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err == nil && !strings.Contains(text, "Baseline check passed") && !strings.Contains(text, " 0 failed") {
		err = errors.New("the runner passed without saying so")
	}
	if err == nil {
		return text, nil
	}
	files, _ := filepath.Glob(filepath.Join(results, "*", "checks.json"))
	for _, f := range files {
		var checks []struct{ ID, Status, ErrorMessage string }
		if b, rerr := os.ReadFile(f); rerr == nil && json.Unmarshal(b, &checks) == nil {
			for _, c := range checks {
				if c.Status != "SUCCESS" && c.Status != "INFO" {
					text += fmt.Sprintf("\n%s %s: %s", c.Status, c.ID, c.ErrorMessage)
				}
			}
		}
	}
	return text, err
}

// warningsOnly reports whether a failed run's checks failed only at WARNING level.
func warningsOnly(text string) bool {
	return strings.Contains(text, "\nWARNING ") && !strings.Contains(text, "\nFAILURE ")
}

// TestConformanceService runs the conformance suite against a backing service's own
// POST /mcp, as the gateway reaches it.
func TestConformanceService(t *testing.T) {
	nodeDir(t)
	svc := startService(t, 2)
	runConformance(t, headerProxy(t, svc, "X-Internal-Token", internalToken)+"/mcp", false, "conformance-service-")
}

// headerProxy fronts a server with a reverse proxy that adds one header (the API key, the
// internal token), because the conformance runner cannot add headers of its own.
func headerProxy(t *testing.T, target, name, value string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	inner := rp.Director
	rp.Director = func(r *http.Request) {
		inner(r)
		r.Header.Set(name, value)
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}
