package openapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/openapi"
)

// apiToolsDir installs scripts/api-client, the committed package of the OpenAPI tooling
// (Redocly CLI, openapi-typescript, openapi-fetch, TypeScript) and the typed client, pinned
// by its package-lock.json, once per test process, with the document beside it (`make
// openapi-lint` installs into scripts/api-client/node_modules instead). Without node/npm
// the tests that need them skip, saying why; CI has both.
func apiToolsDir(t *testing.T) string {
	t.Helper()
	return testenv.Node(t, testenv.NodePackage{Dir: filepath.Join("..", "..", "scripts", "api-client"),
		Files:     []string{"redocly.yaml", "tsconfig.json", "client.ts"},
		Generated: map[string][]byte{"openapi.yaml": openapi.YAML()},
		Needs:     "the Redocly lint and TypeScript client tests need Node.js 20.19+ and npm"})
}

func run(dir string, timeout time.Duration, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// TestRedoclyLint lints the document with Redocly CLI's recommended rules: no error and
// no warning.
func TestRedoclyLint(t *testing.T) {
	dir := apiToolsDir(t)
	out, err := run(dir, 3*time.Minute, filepath.Join("node_modules", ".bin", "redocly"), "lint", "--config", "redocly.yaml", "--format", "json", "openapi.yaml")
	// The JSON report comes between banner and summary lines.
	i := bytes.Index(out, []byte("{\n"))
	var report struct {
		Totals struct {
			Errors, Warnings, Ignored int
		} `json:"totals"`
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
			Location []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	if i < 0 || json.NewDecoder(bytes.NewReader(out[i:])).Decode(&report) != nil {
		t.Fatalf("redocly lint: %v\n%s", err, out)
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		t.Errorf("redocly %s %s at %s: %s", p.Severity, p.RuleID, where, p.Message)
	}
	if report.Totals.Errors != 0 || report.Totals.Warnings != 0 || err != nil {
		t.Errorf("redocly lint: %d errors, %d warnings (exit %v)", report.Totals.Errors, report.Totals.Warnings, err)
	}
}

// TestTypeScriptClient generates TypeScript types from the document with
// openapi-typescript, compiles the typed client (scripts/api-client/client.ts, openapi-fetch)
// with tsc in strict mode, and runs it against a gateway and an ocean service running as
// processes, through the document validator: every documented operation must be called,
// and every answer must match the document.
func TestTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	dir := apiToolsDir(t)
	bin := func(name string) string { return filepath.Join("node_modules", ".bin", name) }
	if out, err := run(dir, 2*time.Minute, bin("openapi-typescript"), "openapi.yaml", "-o", "schema.d.ts"); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, out)
	}
	if out, err := run(dir, 3*time.Minute, bin("tsc"), "-p", "."); err != nil {
		t.Fatalf("tsc: the generated types do not express the client's calls: %v\n%s", err, out)
	}

	tmp := t.TempDir()
	bins := buildBinaries(t)
	oceanAddr, gwAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	testenv.Start(t, bins["ocean"],
		"SERVICE_ADDR="+oceanAddr, "READINGS_SQLITE_PATH="+filepath.Join(tmp, "ocean.db"),
		"SOURCE_MODE=simulate", "SIM_STATIONS=3", "SIM_DAYS=1", "SIM_SEED=7", "LOG_FORMAT=json")
	testenv.WaitFor(t, "ocean", "http://"+oceanAddr+"/readyz", nil, 90*time.Second, func(s int, _ []byte) bool { return s == 200 })
	testenv.Start(t, bins["gateway"],
		"GATEWAY_ADDR="+gwAddr, "SQLITE_PATH="+filepath.Join(tmp, "catalog.db"), "SENSORGATE_ENV=development",
		"DEV_API_KEY="+devKey, "SERVICE_URLS=ocean=http://"+oceanAddr, "SYNC_INTERVAL=1s", "PROBE_INTERVAL=1s",
		"LOG_FORMAT=json")
	base := "http://" + gwAddr
	testenv.WaitFor(t, "gateway catalog sync", base+"/api/v1/projects", map[string][]string{"X-Api-Key": {devKey}}, 90*time.Second, func(s int, b []byte) bool {
		return s == 200 && bytes.Contains(b, []byte(`"id"`))
	})

	v, err := openapi.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(base)
	proxy := httptest.NewServer(v.Wrap(t, httputil.NewSingleHostReverseProxy(target)))
	defer proxy.Close()

	out, stderr, err := testenv.RunIn(dir, 2*time.Minute, []string{"SENSORGATE_URL=" + proxy.URL, "SENSORGATE_KEY=" + devKey},
		"node", filepath.Join("build", "client.js"))
	calls := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var c struct {
			Op     string `json:"op"`
			Status int    `json:"status"`
			OK     bool   `json:"ok"`
			Note   string `json:"note"`
		}
		if json.Unmarshal(sc.Bytes(), &c) != nil {
			continue
		}
		calls++
		if !c.OK {
			t.Errorf("client call %s answered %d (%s)", c.Op, c.Status, c.Note)
		}
	}
	if err != nil {
		t.Fatalf("node build/client.js: %v\n%s\n%s", err, out, stderr)
	}
	// The two event streams never end, so the validator (which checks a whole answer)
	// cannot check them; gateway/stream's own tests cover them. The account dashboard's
	// routes need a passkey-signed session, not a key, and the OAuth server's a person's
	// consent: gateway/account's and gateway/app's tests call each of them through the same
	// validator.
	var missed []string
	for _, op := range v.Unexercised() {
		if !strings.HasSuffix(op, "/stream") && !strings.Contains(op, " /account/") && !strings.Contains(op, " /oauth/") && !strings.Contains(op, " /.well-known/") {
			missed = append(missed, op)
		}
	}
	if len(missed) > 0 {
		t.Errorf("the TypeScript client did not call %s", strings.Join(missed, ", "))
	}
	t.Logf("%d calls; checked: %s", calls, strings.Join(v.Seen(), "; "))
}
