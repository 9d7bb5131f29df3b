package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// keyTransport sends an API key with every request, as an MCP host configured with a
// header does.
type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-api-key", k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestRulesRefuseWhatCanNeverFire: on a real gateway over a real service and PostgreSQL,
// POST /api/v1/alerts/rules and the MCP tool create_alert_rule give the same answers to a
// rule that could never fire (an unknown sensor, a parameter no reading carries, a project
// that does not exist or is another owner's private one, for past P7D), and both take
// sensors by their external ids, store them by UUID and fire on those sensors' readings.
func TestRulesRefuseWhatCanNeverFire(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a service and a gateway")
	}
	const stations = 24
	svcAddr := testenv.FreeAddr(t)
	svc := testenv.StartProcess(t, testenv.Command{Name: "weather", Path: bins.Path(t, "weather"), Env: []string{
		"SERVICE_ADDR=" + svcAddr, "READINGS_DATABASE_URL=" + testenv.Postgres(t), "SOURCE_MODE=simulate", "SIM_DAYS=0",
		fmt.Sprintf("SIM_STATIONS=%d", stations), "LOG_LEVEL=warn"}})
	svc.WaitReady(t, "http://"+svcAddr+"/readyz", 120*time.Second)
	env := []string{"SENSORGATE_ENV=development", "DEV_API_KEY=" + devKey, "DATABASE_URL=" + testenv.Postgres(t),
		"SERVICE_URLS=weather=http://" + svcAddr, "SYNC_INTERVAL=1s", "LOG_LEVEL=warn"}
	_, url := startGateway(t, "gateway", env, stations)

	// Ambient Weather stations report every 5 minutes, each on its own minute: among a
	// dozen of them, one reports within about a minute.
	var list struct {
		Sensors []struct {
			ID         string   `json:"id"`
			ExternalID string   `json:"external_id"`
			DataTypes  []string `json:"data_types"`
		} `json:"sensors"`
	}
	if code := call(t, http.MethodGet, url+"/api/v1/sensors?provider=ambient-weather&limit=12", nil, &list); code != http.StatusOK || len(list.Sensors) < 12 {
		t.Fatalf("ambient sensors: %d, %d of them", code, len(list.Sensors))
	}
	var uuids, externals []string
	common := map[string]int{}
	for _, s := range list.Sensors {
		uuids, externals = append(uuids, s.ID), append(externals, s.ExternalID)
		for _, d := range s.DataTypes {
			common[d]++
		}
	}
	param := ""
	for d, n := range common {
		if n > common[param] || n == common[param] && d < param {
			param = d
		}
	}
	other := otherOwnersKey(t, env)

	// Both faces: REST answers with a status and an error body, the tool with an error
	// result whose text carries the same message and code.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sessions := map[string]*sdk.ClientSession{}
	session := func(key string) *sdk.ClientSession {
		if cs := sessions[key]; cs != nil {
			return cs
		}
		c := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url + "/api/v1/alerts/mcp",
			HTTPClient: &http.Client{Transport: keyTransport{key}}}, nil)
		if err != nil {
			t.Fatalf("connect to the alerts MCP endpoint: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		sessions[key] = cs
		return cs
	}
	type answer struct {
		status int    // REST's status; 0 for the tool
		text   string // the error message and code, or the rule's JSON
		rule   struct {
			ID     string `json:"id"`
			Target struct {
				SensorIDs []string `json:"sensor_ids"`
				ProjectID string   `json:"project_id"`
			} `json:"target"`
		}
	}
	create := func(face, key string, rule map[string]any) answer {
		t.Helper()
		var a answer
		if face == "rest" {
			var raw json.RawMessage
			a.status = callKey(t, key, http.MethodPost, url+"/api/v1/alerts/rules", rule, &raw)
			a.text = string(raw)
			if a.status == http.StatusCreated {
				_ = json.Unmarshal(raw, &a.rule)
				return a
			}
			var e struct{ Error, Code string }
			if json.Unmarshal(raw, &e) == nil && e.Code != "" {
				a.text = e.Error + " (" + e.Code + ")" // as the tool's error result words it
			}
			return a
		}
		res, err := session(key).CallTool(ctx, &sdk.CallToolParams{Name: "create_alert_rule", Arguments: rule})
		if err != nil {
			t.Fatalf("create_alert_rule: %v", err)
		}
		if res.IsError {
			for _, c := range res.Content {
				if tc, ok := c.(*sdk.TextContent); ok {
					a.text += tc.Text
				}
			}
			return a
		}
		b, _ := json.Marshal(res.StructuredContent)
		a.text, a.status = string(b), http.StatusCreated
		_ = json.Unmarshal(b, &a.rule)
		return a
	}
	rule := func(target map[string]any, parameter, holdFor string) map[string]any {
		cond := map[string]any{"parameter": parameter, "op": "above", "value": -1e9}
		if parameter == "" {
			cond = map[string]any{"op": "stale"}
		}
		return map[string]any{"name": "e2e", "target": target, "condition": cond, "for": holdFor}
	}
	refused := func(face string, a answer, status int, want ...string) {
		t.Helper()
		if face == "rest" && a.status != status || face == "mcp" && a.status != 0 {
			t.Errorf("%s: %d %s, want %d", face, a.status, a.text, status)
			return
		}
		for _, w := range want {
			if !strings.Contains(a.text, w) {
				t.Errorf("%s: %s, want it to name %s", face, a.text, w)
			}
		}
	}

	made := map[string]string{} // rule id -> face
	for _, face := range []string{"rest", "mcp"} {
		sensors := map[string]any{"sensor_ids": externals}
		refused(face, create(face, devKey, rule(map[string]any{"sensor_ids": []string{externals[0], "NOPE-404"}}, param, "PT0S")),
			http.StatusBadRequest, "invalid_parameter", `"target.sensor_ids"`, `item 1`, "NOPE-404")
		refused(face, create(face, devKey, rule(map[string]any{"sensor_ids": []string{"0b7a1c2d-3e4f-5a6b-8c7d-9e0f1a2b3c4d"}}, param, "PT0S")),
			http.StatusBadRequest, "invalid_parameter", `"target.sensor_ids"`, "0b7a1c2d-3e4f-5a6b-8c7d-9e0f1a2b3c4d")
		refused(face, create(face, devKey, rule(sensors, "air_temp_c", "PT0S")), http.StatusBadRequest, "invalid_parameter", `"condition.parameter"`, "air_temp_c")
		refused(face, create(face, devKey, rule(sensors, param, "P400D")), http.StatusBadRequest, "invalid_parameter", `"for"`, "P7D")
		refused(face, create(face, devKey, rule(sensors, param, "P8D")), http.StatusBadRequest, "invalid_parameter", `"for"`, "P7D")
		refused(face, create(face, devKey, rule(map[string]any{"project_id": "0b7a1c2d-3e4f-5a6b-8c7d-9e0f1a2b3c4d"}, "", "PT0S")),
			http.StatusNotFound, "project_not_found", "0b7a1c2d-3e4f-5a6b-8c7d-9e0f1a2b3c4d")
		// The development key's private project is another owner's for this key: the same
		// answer as no project at all.
		refused(face, create(face, other, rule(map[string]any{"project_id": "dev-sandbox"}, "", "PT0S")), http.StatusNotFound, "project_not_found", "dev-sandbox")
		if a := create(face, devKey, rule(map[string]any{"project_id": "dev-sandbox"}, "", "P7D")); a.status != http.StatusCreated || a.rule.Target.ProjectID == "dev-sandbox" {
			t.Errorf("%s: the owner's rule over its private project: %d %s, want 201 stored by the project's UUID", face, a.status, a.text)
		}

		// External ids in, UUIDs stored, and the rule fires on those sensors' readings.
		a := create(face, devKey, rule(sensors, param, "PT0S"))
		if a.status != http.StatusCreated || !slices.Equal(a.rule.Target.SensorIDs, uuids) {
			t.Fatalf("%s: a rule over %d external ids: %d %s, want 201 with sensor_ids %v", face, len(externals), a.status, a.text, uuids)
		}
		made[a.rule.ID] = face
	}

	deadline := time.Now().Add(200 * time.Second)
	for len(made) > 0 {
		var page struct {
			Events []struct {
				RuleID   string `json:"rule_id"`
				SensorID string `json:"sensor_id"`
				State    string `json:"state"`
			} `json:"events"`
		}
		call(t, http.MethodGet, url+"/api/v1/alerts/events?limit=1000", nil, &page)
		for _, e := range page.Events {
			if _, ok := made[e.RuleID]; ok && e.State == "firing" {
				if !slices.Contains(uuids, e.SensorID) {
					t.Fatalf("rule %s fired for sensor %s, which it does not watch", e.RuleID, e.SensorID)
				}
				delete(made, e.RuleID)
			}
		}
		if len(made) > 0 && time.Now().After(deadline) {
			t.Fatalf("no firing event within 200 s for the rules over external ids made by %v", made)
		}
		time.Sleep(time.Second)
	}
}

// otherOwnersKey makes a development key of another owner than the development key's
// (through the gateway's keys command, as an operator would).
func otherOwnersKey(t *testing.T, env []string) string {
	t.Helper()
	cmd := exec.Command(bins.Path(t, "gateway"), "keys", "create", "--owner", "e2e-other", "--env", "development")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	key, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(key)
}
