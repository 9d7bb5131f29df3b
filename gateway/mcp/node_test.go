package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/mcp"
)

// nodeClientDir is the committed package of the TypeScript SDK client and the conformance
// suite, pinned by its package-lock.json.
var nodeClientDir = filepath.Join("..", "..", "scripts", "mcp-client")

// nodePackages installs the pinned npm packages once per test process, into a temporary
// directory (the checkout stays clean). A machine without node/npm, or offline, skips the
// tests that need them, saying why.
var nodePackages struct {
	once sync.Once
	dir  string
	skip string
}

func nodeDir(t *testing.T) string {
	t.Helper()
	nodePackages.once.Do(func() {
		for _, bin := range []string{"node", "npm"} {
			if _, err := exec.LookPath(bin); err != nil {
				nodePackages.skip = bin + " is not installed: the TypeScript SDK and conformance tests need Node.js 20+ and npm"
				return
			}
		}
		dir, err := os.MkdirTemp("", "sensorgate-mcp-node-")
		if err != nil {
			nodePackages.skip = err.Error()
			return
		}
		for _, f := range []string{"package.json", "package-lock.json", "client.mjs"} {
			b, err := os.ReadFile(filepath.Join(nodeClientDir, f))
			if err != nil {
				nodePackages.skip = "scripts/mcp-client is incomplete: " + err.Error()
				return
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				nodePackages.skip = err.Error()
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			nodePackages.skip = fmt.Sprintf("npm ci of scripts/mcp-client failed (offline, or no registry access?): %v\n%s", err, out)
			return
		}
		nodePackages.dir = dir
	})
	if nodePackages.skip != "" {
		t.Skip(nodePackages.skip)
	}
	return nodePackages.dir
}

// testNodeSDK drives every gateway MCP endpoint with the official TypeScript SDK client
// (@modelcontextprotocol/sdk, run by node), which also validates structuredContent against
// each tool's outputSchema.
func testNodeSDK(t *testing.T, base string, s0 target) {
	dir := nodeDir(t)
	cases := sdkCases(s0)
	b, _ := json.Marshal(cases2JSON(cases))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", base, devKey, string(b))
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client.mjs: %v\n%s", err, stderr.String())
	}
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

func cases2JSON(cases []sdkCase) []map[string]any {
	var out []map[string]any
	for _, c := range cases {
		out = append(out, map[string]any{"scope": c.scope, "path": c.path, "tool": c.tool, "args": c.args})
	}
	return out
}

// conformanceScenarios are the server scenarios of @modelcontextprotocol/conformance that
// apply to a tools-only server: the others call reference tools (test_simple_text, ...),
// resources, prompts, sampling or elicitation, which sensorgate does not offer.
var conformanceScenarios = []string{"server-initialize", "ping", "tools-list"}

// runConformance runs the applicable server scenarios against endpoint and fails the test
// on any failed check.
func runConformance(t *testing.T, endpoint string) {
	t.Helper()
	dir := nodeDir(t)
	for _, sc := range conformanceScenarios {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "node", filepath.Join("node_modules", ".bin", "conformance"), "server", "--url", endpoint, "--scenario", sc)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
		out, err := cmd.CombinedOutput()
		cancel()
		text := string(out)
		if err != nil || !strings.Contains(text, " 0 failed") {
			t.Errorf("conformance %s against %s: %v\n%s", sc, endpoint, err, text)
		}
	}
}

// TestConformanceService runs the conformance suite against a backing service's own
// POST /mcp, as the gateway reaches it.
func TestConformanceService(t *testing.T) {
	nodeDir(t)
	svc := startService(t, 2)
	runConformance(t, headerProxy(t, svc, "X-Internal-Token", internalToken)+"/mcp")
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
