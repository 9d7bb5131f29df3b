package app

import (
	"bufio"
	"context"
	"encoding/json"
	"html"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// TestOAuthConformance runs the MCP conformance suite's authorization server scenarios
// (@modelcontextprotocol/conformance, pinned in scripts/mcp-client: `conformance
// authorization`, the suite's tests of an OAuth server; its `--suite auth` is the client
// side, an MCP client against the suite's own mock servers) against the gateway at
// 2025-11-25 and 2026-07-28: the metadata document, and the code grant with PKCE S256,
// `state`, `iss` and `resource`, whose consent the person signed in by the development link
// gives here. A check that fails is a test failure unless the version's baseline
// (scripts/mcp-client/conformance-auth-<version>.yaml) names it with its reason; a
// baseline entry that passes is a failure too, so the baseline cannot go stale.
func TestOAuthConformance(t *testing.T) {
	t.Parallel()
	o := newOAuthEnv(t)
	dir := testenv.Node(t, testenv.NodePackage{Dir: filepath.Join("..", "..", "scripts", "mcp-client"),
		Files: []string{"conformance-auth-2025-11-25.yaml", "conformance-auth-2026-07-28.yaml"},
		Needs: "the MCP conformance suite needs Node.js 22 and npm"})
	node := testenv.ConformanceNode(t, dir)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			o.t = t
			addr := testenv.FreeAddr(t)
			_, port, _ := net.SplitHostPort(addr)
			client := o.register("http://127.0.0.1:" + port + "/callback")
			results := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join("node_modules", ".bin", "conformance"), "authorization",
				"--url", o.origin, "--client-id", client, "--resource", o.origin+"/api/v1/catalog/mcp",
				"--port", port, "--spec-version", version, "--output-dir", results)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = cmd.Stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The suite prints the authorization URL for a person to open; the person (signed
			// in) approves, and the browser follows the redirect to the suite's callback.
			var out strings.Builder
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				line := sc.Text()
				out.WriteString(line + "\n")
				if strings.HasPrefix(line, o.origin+"/oauth/authorize?") {
					o.approveFor(t, line)
				}
			}
			err = cmd.Wait()
			failed := authFailures(t, results)
			expected := authBaseline(t, filepath.Join(dir, "conformance-auth-"+version+".yaml"))
			for id, msg := range failed {
				if !expected[id] {
					t.Errorf("conformance authorization %s: %s failed: %s", version, id, msg)
				}
			}
			for id := range expected {
				if _, ok := failed[id]; !ok {
					t.Errorf("conformance authorization %s: %s passes; remove it from the baseline", version, id)
				}
			}
			if t.Failed() || err != nil && len(failed) == 0 {
				t.Fatalf("conformance authorization %s: %v\n%s", version, err, out.String())
			}
			t.Logf("conformance authorization %s:\n%s", version, out.String())
		})
	}
}

// approveFor opens an authorization URL as the signed-in person, approves, and follows
// the redirect to the client's callback, as a browser would.
func (o *oauthEnv) approveFor(t *testing.T, authURL string) {
	u, err := url.Parse(authURL)
	if err != nil {
		t.Errorf("authorization URL %q: %v", authURL, err)
		return
	}
	st, h, page := o.do(o.browser, "GET", "/oauth/authorize?"+u.RawQuery, nil, nil)
	cs, rq := csrfField.FindStringSubmatch(page), requestField.FindStringSubmatch(page)
	if st != http.StatusOK || cs == nil || rq == nil {
		t.Errorf("consent page for the suite's request: %d %s %.300s", st, h.Get("Location"), page)
		return
	}
	_, h, _ = o.do(o.browser, "POST", "/oauth/authorize", url.Values{"csrf": {cs[1]}, "request": {html.UnescapeString(rq[1])}, "decision": {"approve"}},
		map[string]string{"Origin": o.origin, "Sec-Fetch-Site": "same-origin"})
	loc := h.Get("Location")
	if !strings.HasPrefix(loc, "http://127.0.0.1:") {
		t.Errorf("consent answered with a redirect to %q, want the suite's callback", loc)
		return
	}
	resp, err := http.Get(loc)
	if err != nil {
		t.Errorf("the suite's callback: %v", err)
		return
	}
	resp.Body.Close()
}

// authFailures reads the checks the suite wrote (checks.json under each scenario's
// directory) and returns the failed ones by scenario id and check id.
func authFailures(t *testing.T, results string) map[string]string {
	t.Helper()
	failed := map[string]string{}
	found := 0
	err := filepath.WalkDir(results, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var checks []struct {
			ID, Status, ErrorMessage, Description string
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			return err
		}
		for _, c := range checks {
			found++
			if c.Status == "FAILURE" {
				failed[c.ID] = c.ErrorMessage + " (" + c.Description + ")"
			}
		}
		return nil
	})
	if err != nil || found == 0 {
		t.Fatalf("the suite's results in %s: %d checks, %v", results, found, err)
	}
	return failed
}

// authBaseline reads the expected failures: one check id per "- " line (comments say why).
func authBaseline(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			want[strings.TrimSpace(strings.SplitN(id, "#", 2)[0])] = true
		}
	}
	return want
}
