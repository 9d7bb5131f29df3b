package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/testenv"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/mcp"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
)

// TestGateway drives every MCP endpoint over HTTP the way a bare client does: one POST
// with x-api-key and Content-Type: application/json, against a catalog synced from a
// running ocean service.
func TestGateway(t *testing.T) {
	g := newGateway(t, 4)
	s0 := g.Sensors[0]
	feed := s0.FeedSlug
	endpoints := map[string]string{
		"service":  "/api/v1/services/ocean/mcp",
		"sensor":   "/api/v1/sensors/" + s0.ID.String() + "/mcp",
		"project":  "/api/v1/projects/" + feed + "/mcp",
		"registry": "/api/v1/sensors/registry/mcp",
		"catalog":  "/api/v1/catalog/mcp",
	}

	t.Run("official go-sdk client", func(t *testing.T) {
		t.Parallel()
		testGoSDK(t, g)
	})

	t.Run("client configurations", func(t *testing.T) {
		t.Parallel()
		testClientConfigs(t, g)
	})

	t.Run("http errors", func(t *testing.T) {
		t.Parallel()
		big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", mcp.MaxBodyBytes) + `"}}`
		tests := []struct {
			name, method, path, body string
			header                   []string
			status                   int
			code                     string
		}{
			{"GET is 405", http.MethodGet, endpoints["catalog"], "", nil, 405, "method_not_allowed"},
			{"GET on the sensor scope is 405", http.MethodGet, endpoints["sensor"], "", nil, 405, "method_not_allowed"},
			{"text/plain is 415", http.MethodPost, endpoints["catalog"], `{}`, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
			{"no Content-Type is 415", http.MethodPost, endpoints["registry"], `{}`, []string{"Content-Type", ""}, 415, "unsupported_media_type"},
			{"over 1 MiB is 413", http.MethodPost, endpoints["catalog"], big, nil, 413, "payload_too_large"},
			{"missing key is 401", http.MethodPost, endpoints["catalog"], `{}`, []string{"x-api-key", ""}, 401, "missing_api_key"},
			{"wrong key is 401", http.MethodPost, endpoints["service"], `{}`, []string{"x-api-key", "nope"}, 401, "invalid_api_key"},
			{"unknown service is 404", http.MethodPost, "/api/v1/services/nosuch/mcp", `{}`, nil, 404, "not_found"},
			{"external id at sensor scope is 404", http.MethodPost, "/api/v1/sensors/" + s0.ExternalID + "/mcp", `{}`, nil, 404, "sensor_not_found"},
			{"UUID without dashes is 404", http.MethodPost, "/api/v1/sensors/" + strings.ReplaceAll(s0.ID.String(), "-", "") + "/mcp", `{}`, nil, 404, "sensor_not_found"},
			{"unknown sensor is 404", http.MethodPost, "/api/v1/sensors/" + uuid.NewString() + "/mcp", `{}`, nil, 404, "sensor_not_found"},
			{"unknown project is 404", http.MethodPost, "/api/v1/projects/nosuch/mcp", `{}`, nil, 404, "not_found"},
			{"bad tool_names is 400", http.MethodPost, endpoints["service"] + "?tool_names=camel", `{}`, nil, 400, "invalid_parameter"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				req, _ := http.NewRequest(tt.method, g.URL+tt.path, strings.NewReader(tt.body))
				req.Header.Set("x-api-key", devKey)
				req.Header.Set("Content-Type", "application/json")
				for i := 0; i+1 < len(tt.header); i += 2 {
					if tt.header[i+1] == "" {
						req.Header.Del(tt.header[i])
					} else {
						req.Header.Set(tt.header[i], tt.header[i+1])
					}
				}
				r := do(t, req)
				if r.Status != tt.status {
					t.Fatalf("status %d, want %d: %s", r.Status, tt.status, r.Body)
				}
				var e struct{ Error, Code string }
				if err := json.Unmarshal(r.Body, &e); err != nil || e.Code != tt.code || e.Error == "" {
					t.Errorf("body %s, want JSON error with code %q", r.Body, tt.code)
				}
				if tt.status == 405 && !strings.Contains(r.Header.Get("Allow"), "POST") {
					t.Errorf("405 without Allow: POST (Allow: %q)", r.Header.Get("Allow"))
				}
			})
		}
	})

	t.Run("private project of another owner is 403", func(t *testing.T) {
		t.Parallel()
		other := uuid.New()
		ctx := context.Background()
		if _, err := g.Store.CreateUser(ctx, catalog.User{ID: other, Name: "other-" + other.String()[:8], Email: other.String() + "@example.org"}); err != nil {
			t.Fatal(err)
		}
		p, err := g.Store.CreateProject(ctx, catalog.Project{ID: uuid.New(), Slug: "secret-" + other.String()[:8], Name: "Secret", OwnerID: other, Visibility: catalog.VisibilityPrivate, ServiceID: "ocean"})
		if err != nil {
			t.Fatal(err)
		}
		r := g.post(t, "/api/v1/projects/"+p.Slug+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), `"forbidden"`) {
			t.Errorf("status %d %s, want 403 forbidden", r.Status, r.Body)
		}
		// The caller's own private project (the development sandbox) is reachable.
		r = g.post(t, "/api/v1/projects/dev-sandbox/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		if r.Status != http.StatusOK || r.Msg.Error != nil {
			t.Errorf("own private project: status %d %s", r.Status, r.Body)
		}
	})

	t.Run("json-rpc errors", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name, body string
			code       int
			id         string
		}{
			{"malformed JSON", `{"jsonrpc":"2.0","id":1,`, jsonrpc.CodeParseError, "null"},
			{"empty body", ``, jsonrpc.CodeParseError, "null"},
			{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, jsonrpc.CodeInvalidRequest, "null"},
			{"no jsonrpc member", `{"id":4,"method":"ping"}`, jsonrpc.CodeInvalidRequest, "4"},
			{"no method", `{"jsonrpc":"2.0","id":5}`, jsonrpc.CodeInvalidRequest, "5"},
			{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, jsonrpc.CodeInvalidRequest, "null"},
			{"unknown method", `{"jsonrpc":"2.0","id":"m","method":"prompts/list"}`, jsonrpc.CodeMethodNotFound, `"m"`},
			{"server/discover is unknown", `{"jsonrpc":"2.0","id":6,"method":"server/discover","params":{}}`, jsonrpc.CodeMethodNotFound, "6"},
			{"initialize without version", `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"capabilities":{}}}`, jsonrpc.CodeInvalidParams, "7"},
			{"initialize with array params", `{"jsonrpc":"2.0","id":8,"method":"initialize","params":[]}`, jsonrpc.CodeInvalidParams, "8"},
			{"tools/call without name", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{}}}`, jsonrpc.CodeInvalidParams, "9"},
			{"tools/call with string arguments", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"search_sensors","arguments":"x"}}`, jsonrpc.CodeInvalidParams, "10"},
			{"unknown tool", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, jsonrpc.CodeInvalidParams, "11"},
			{"tools/list bad cursor", `{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{"cursor":"zz"}}`, jsonrpc.CodeInvalidParams, "12"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				r := g.post(t, endpoints["catalog"], tt.body)
				if r.Status != http.StatusOK {
					t.Fatalf("status %d, want 200: %s", r.Status, r.Body)
				}
				if r.Msg.Error == nil || r.Msg.Error.Code != tt.code {
					t.Fatalf("body %s, want error %d", r.Body, tt.code)
				}
				if string(r.Msg.ID) != tt.id {
					t.Errorf("id %s, want %s", r.Msg.ID, tt.id)
				}
				if r.Msg.JSONRPC != "2.0" || r.Msg.Result != nil {
					t.Errorf("not a JSON-RPC error response: %s", r.Body)
				}
			})
		}
		// The same at a forwarding scope: the gateway answers, the service never sees it.
		r := g.post(t, endpoints["sensor"], `[1]`)
		if r.Msg.Error == nil || r.Msg.Error.Code != jsonrpc.CodeInvalidRequest {
			t.Errorf("batch at sensor scope: %s", r.Body)
		}
	})

	t.Run("lifecycle on every endpoint", func(t *testing.T) {
		t.Parallel()
		for scope, path := range endpoints {
			for _, v := range []struct{ asked, want string }{
				{"2024-11-05", "2024-11-05"},
				{"2025-03-26", "2025-03-26"},
				{"2025-06-18", "2025-06-18"},
				{"2025-11-25", "2025-11-25"},
				{"2031-01-01", mcp.LatestProtocolVersion},
			} {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`, v.asked)
				r := g.post(t, path, body)
				var res struct {
					ProtocolVersion string `json:"protocolVersion"`
					Capabilities    struct {
						Tools *json.RawMessage `json:"tools"`
					} `json:"capabilities"`
					ServerInfo struct{ Name, Version string } `json:"serverInfo"`
				}
				if r.Status != 200 || json.Unmarshal(r.Msg.Result, &res) != nil {
					t.Fatalf("%s initialize: %d %s", scope, r.Status, r.Body)
				}
				if res.ProtocolVersion != v.want || res.Capabilities.Tools == nil || res.ServerInfo.Name == "" {
					t.Errorf("%s initialize(%s) = %s", scope, v.asked, r.Msg.Result)
				}
				if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Errorf("%s: Content-Type %q", scope, ct)
				}
			}
			r := g.post(t, path, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			if r.Status != http.StatusAccepted || len(r.Body) != 0 {
				t.Errorf("%s notification: %d %q, want 202 and no body", scope, r.Status, r.Body)
			}
			r = g.post(t, path, `{"jsonrpc":"2.0","id":"srv-1","result":{}}`)
			if r.Status != http.StatusAccepted || len(r.Body) != 0 {
				t.Errorf("%s response message: %d %q, want 202", scope, r.Status, r.Body)
			}
			r = g.post(t, path, `{"jsonrpc":"2.0","id":"p","method":"ping"}`)
			if r.Status != 200 || string(r.Msg.Result) != "{}" || string(r.Msg.ID) != `"p"` {
				t.Errorf("%s ping: %s", scope, r.Body)
			}
		}
	})

	t.Run("2026-07-28 from a bare client", func(t *testing.T) {
		t.Parallel()
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"}}`
		for scope, path := range endpoints {
			r := g.post(t, path, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`,
				mcp.HeaderProtocolVersion, mcp.StatelessProtocolVersion, mcp.HeaderMethod, "server/discover")
			var res struct {
				SupportedVersions []string `json:"supportedVersions"`
				Capabilities      struct {
					Tools *json.RawMessage `json:"tools"`
				} `json:"capabilities"`
				TTLMs      *int64         `json:"ttlMs"`
				CacheScope string         `json:"cacheScope"`
				Meta       map[string]any `json:"_meta"`
			}
			if r.Status != 200 || r.Msg.Error != nil || json.Unmarshal(r.Msg.Result, &res) != nil {
				t.Fatalf("%s server/discover: %d %s", scope, r.Status, r.Body)
			}
			if !slices.Equal(res.SupportedVersions, mcp.AllProtocolVersions()) || res.Capabilities.Tools == nil || res.TTLMs == nil || res.CacheScope == "" || res.Meta["io.modelcontextprotocol/serverInfo"] == nil {
				t.Errorf("%s server/discover = %s", scope, r.Msg.Result)
			}
			// Without the version in _meta, server/discover is unknown: old clients fall back.
			r = g.post(t, path, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`)
			if r.Msg.Error == nil || r.Msg.Error.Code != jsonrpc.CodeMethodNotFound {
				t.Errorf("%s legacy server/discover: %s", scope, r.Body)
			}
			// initialize, ping and resources/subscribe are not part of 2026-07-28: 404
			// (SEP-2575), as is any unknown method.
			for _, m := range []string{"initialize", "ping", "resources/subscribe", "no/such"} {
				r = g.post(t, path, `{"jsonrpc":"2.0","id":9,"method":"`+m+`","params":{`+meta+`}}`,
					mcp.HeaderProtocolVersion, mcp.StatelessProtocolVersion, mcp.HeaderMethod, m)
				if r.Status != http.StatusNotFound || r.Msg.Error == nil || r.Msg.Error.Code != jsonrpc.CodeMethodNotFound || string(r.Msg.ID) != "9" {
					t.Errorf("%s 2026 %s: %d %s", scope, m, r.Status, r.Body)
				}
			}
			// Headers that disagree with the body, or are missing, are refused with 400,
			// naming the header.
			for _, hdr := range [][]string{
				{mcp.HeaderProtocolVersion, mcp.StatelessProtocolVersion, mcp.HeaderMethod, "tools/call"},
				{mcp.HeaderProtocolVersion, mcp.StatelessProtocolVersion, mcp.HeaderMethod, "TOOLS/LIST"},
				{mcp.HeaderProtocolVersion, mcp.StatelessProtocolVersion},
			} {
				r = g.post(t, path, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`, hdr...)
				if r.Status != http.StatusBadRequest || r.Msg.Error == nil || r.Msg.Error.Code != -32020 || !strings.Contains(r.Msg.Error.Message, mcp.HeaderMethod) {
					t.Errorf("%s Mcp-Method %v: %d %s", scope, hdr, r.Status, r.Body)
				}
			}
			// A version the gateway does not speak, in the header, in _meta or both: 400
			// with the versions it does, under the request's id; header and body that
			// disagree are a mismatch first.
			for _, tt := range []struct {
				header, meta string
				code         int
			}{{"1999-01-01", "", -32022}, {"1999-01-01", "1999-01-01", -32022}, {mcp.StatelessProtocolVersion, "1999-01-01", -32020}} {
				body := `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{}}`
				if tt.meta != "" {
					body = `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{` + strings.Replace(meta, "2026-07-28", tt.meta, 1) + `}}`
				}
				r = g.post(t, path, body, mcp.HeaderProtocolVersion, tt.header, mcp.HeaderMethod, "tools/list")
				var data struct{ Supported []string }
				if r.Status != http.StatusBadRequest || r.Msg.Error == nil || r.Msg.Error.Code != tt.code || string(r.Msg.ID) != "5" ||
					tt.code == -32022 && (json.Unmarshal(r.Msg.Error.Data, &data) != nil || !slices.Equal(data.Supported, mcp.AllProtocolVersions())) {
					t.Errorf("%s version header %q, _meta %q: %d %s", scope, tt.header, tt.meta, r.Status, r.Body)
				}
			}
			r = g.post(t, path, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`,
				mcp.HeaderProtocolVersion, mcp.StatelessProtocolVersion, mcp.HeaderMethod, "tools/list")
			var list struct {
				Tools      []json.RawMessage `json:"tools"`
				TTLMs      *int64            `json:"ttlMs"`
				CacheScope string            `json:"cacheScope"`
			}
			if r.Msg.Error != nil || json.Unmarshal(r.Msg.Result, &list) != nil || len(list.Tools) == 0 || list.TTLMs == nil || *list.TTLMs != 5000 || list.CacheScope != "public" {
				t.Errorf("%s 2026 tools/list: %.300s", scope, r.Body)
			}
		}
	})

	t.Run("a large result is cut with a working link", func(t *testing.T) {
		t.Parallel()
		r := g.post(t, endpoints["catalog"], fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_readings","arguments":{"sensor_id":%q,"limit":1000}}}`, s0.ID.String()))
		var res struct {
			Content []struct {
				Type, Text, URI, MimeType string
			} `json:"content"`
			StructuredContent struct {
				Readings []json.RawMessage `json:"readings"`
			} `json:"structuredContent"`
			IsError bool `json:"isError"`
		}
		if r.Status != 200 || json.Unmarshal(r.Msg.Result, &res) != nil || res.IsError {
			t.Fatalf("get_readings: %d %.300s", r.Status, r.Body)
		}
		if len(res.Content) != 3 || res.Content[1].Type != "resource_link" || res.Content[2].MimeType != "application/vnd.apache.parquet" {
			t.Fatalf("%d bytes, %d readings, content %+v: want a cut answer with a resource_link (the fixture gives more than 25 KB)", len(r.Body), len(res.StructuredContent.Readings), res.Content)
		}
		link := res.Content[1]
		if !strings.Contains(res.Content[0].Text, "first") || link.MimeType != "text/csv" || !strings.HasPrefix(link.URI, g.URL+"/api/v1/sensors/"+s0.ID.String()+"/readings?") {
			t.Errorf("cut answer: %+v", res.Content)
		}
		req, _ := http.NewRequest(http.MethodGet, link.URI, nil)
		req.Header.Set("x-api-key", devKey)
		got := do(t, req)
		if got.Status != 200 || !strings.HasPrefix(got.Header.Get("Content-Type"), "text/csv") || strings.Count(string(got.Body), "\n") <= len(res.StructuredContent.Readings) {
			t.Errorf("GET %s: %d %s, %d lines for %d readings kept", link.URI, got.Status, got.Header.Get("Content-Type"), strings.Count(string(got.Body), "\n"), len(res.StructuredContent.Readings))
		}
		req, _ = http.NewRequest(http.MethodGet, res.Content[2].URI, nil)
		req.Header.Set("x-api-key", devKey)
		if got := do(t, req); got.Status != 200 || got.Header.Get("Content-Type") != "application/vnd.apache.parquet" || !strings.HasPrefix(string(got.Body), "PAR1") {
			t.Errorf("GET %s: %d %s %.20q", res.Content[2].URI, got.Status, got.Header.Get("Content-Type"), got.Body)
		}
	})

	t.Run("tool-call metrics", func(t *testing.T) {
		t.Parallel()
		path := endpoints["catalog"]
		before := map[string]float64{}
		cases := []struct{ tool, outcome string }{{"describe_catalog", "ok"}, {"get_readings", "tool_error"}, {"unknown", "rpc_error"}}
		for _, c := range cases {
			before[c.tool] = mcpCalls(t, g, "catalog", c.tool, c.outcome)
		}
		g.call(t, path, "describe_catalog", map[string]any{})
		if tr := g.call(t, path, "get_readings", map[string]any{"sensor_id": s0.ID.String(), "limit": "many"}); !tr.IsError {
			t.Fatalf("get_readings with a bad limit did not fail: %s", tr.text())
		}
		if r := g.post(t, path, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no_such_tool_`+uuid.NewString()+`","arguments":{}}}`); r.Msg.Error == nil {
			t.Fatalf("unknown tool: %s", r.Body)
		}
		for _, c := range cases {
			if got := mcpCalls(t, g, "catalog", c.tool, c.outcome); got <= before[c.tool] {
				t.Errorf("sensorgate_mcp_calls_total{scope=catalog,tool=%s,outcome=%s} = %v, was %v", c.tool, c.outcome, got, before[c.tool])
			}
		}
	})

	t.Run("tools-list per scope", func(t *testing.T) {
		t.Parallel()
		want := map[string][]string{
			"service":  {"ocean.latest_observation", "ocean.list_stations"},
			"sensor":   {"ocean.latest_observation"},
			"project":  {"describe_project", "list_project_sensors", "ocean.latest_observation"},
			"registry": {"list_sensors", "sensor_connected_services", "sensor_cleaned_stream", "sensor_last_reading"},
			"catalog":  {"describe_catalog", "search_sensors", "get_readings", "describe_sensor", "latest_in_area", "aggregate_readings"},
		}
		for scope, path := range endpoints {
			names := listNames(t, g, path)
			for _, w := range want[scope] {
				if !slices.Contains(names, w) {
					t.Errorf("%s tools/list lacks %s: %v", scope, w, names)
				}
			}
			if scope == "registry" && len(names) != 4 || scope == "catalog" && len(names) != 6 {
				t.Errorf("%s lists %v, want exactly its own tools", scope, names)
			}
		}
	})

	t.Run("underscore tool names", func(t *testing.T) {
		t.Parallel()
		for _, variant := range []struct {
			path   string
			header []string
		}{
			{endpoints["service"] + "?tool_names=underscore", nil},
			{endpoints["sensor"], []string{mcp.HeaderToolNames, "underscore"}},
			{endpoints["project"] + "?tool_names=underscore", nil},
		} {
			names := listNames(t, g, variant.path, variant.header...)
			if !slices.Contains(names, "ocean__latest_observation") {
				t.Errorf("%s: %v lacks ocean__latest_observation", variant.path, names)
			}
			for _, n := range names {
				if strings.Contains(n, ".") {
					t.Errorf("%s: dotted name %q listed in underscore mode", variant.path, n)
				}
			}
		}
		// The default stays dotted.
		if names := listNames(t, g, endpoints["service"]); !slices.Contains(names, "ocean.latest_observation") {
			t.Errorf("default listing changed: %v", names)
		}
		// tools/call accepts the alias whatever the listing mode.
		tr := g.call(t, endpoints["service"], "ocean__latest_observation", map[string]any{"station_id": s0.ExternalID})
		var out struct {
			Station struct {
				ExternalID string `json:"external_id"`
			}
		}
		tr.decode(t, &out)
		if !strings.EqualFold(out.Station.ExternalID, s0.ExternalID) {
			t.Errorf("alias call answered for %q, want %q", out.Station.ExternalID, s0.ExternalID)
		}
	})

	t.Run("sensor scope injects the sensor", func(t *testing.T) {
		t.Parallel()
		for _, s := range g.Sensors {
			tr := g.call(t, "/api/v1/sensors/"+s.ID.String()+"/mcp", "ocean.latest_observation", map[string]any{})
			var out struct {
				Station struct {
					SensorID   string `json:"sensor_id"`
					ExternalID string `json:"external_id"`
				} `json:"station"`
				Measurements []struct{ Parameter, Unit string } `json:"measurements"`
			}
			tr.decode(t, &out)
			if out.Station.SensorID != s.ID.String() || !strings.EqualFold(out.Station.ExternalID, s.ExternalID) {
				t.Errorf("sensor %s: answered for %+v", s.ExternalID, out.Station)
			}
			if len(out.Measurements) == 0 || out.Measurements[0].Unit == "" {
				t.Errorf("sensor %s: no measurements with units: %s", s.ExternalID, tr.StructuredContent)
			}
		}
		// The caller's arguments win over the injected context.
		other := g.Sensors[1]
		tr := g.call(t, endpoints["sensor"], "ocean.latest_observation", map[string]any{"station_id": other.ExternalID})
		var out struct {
			Station struct {
				ExternalID string `json:"external_id"`
			}
		}
		tr.decode(t, &out)
		if !strings.EqualFold(out.Station.ExternalID, other.ExternalID) {
			t.Errorf("explicit station_id overridden: %s", out.Station.ExternalID)
		}
		// An unknown service tool is the service's -32602, passed through.
		r := g.post(t, endpoints["sensor"], `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ocean.nope","arguments":{}}}`)
		if r.Msg.Error == nil || r.Msg.Error.Code != jsonrpc.CodeInvalidParams || string(r.Msg.ID) != "3" {
			t.Errorf("unknown service tool: %s", r.Body)
		}
	})

	t.Run("project scope", func(t *testing.T) {
		t.Parallel()
		var d struct {
			Slug        string `json:"slug"`
			ServiceID   string `json:"service_id"`
			SensorCount int    `json:"sensor_count"`
		}
		g.call(t, endpoints["project"], "describe_project", map[string]any{}).decode(t, &d)
		if d.Slug != feed || d.ServiceID != "ocean" || d.SensorCount == 0 {
			t.Errorf("describe_project: %+v", d)
		}
		var l struct {
			Sensors []struct {
				FeedSlug string `json:"feed_slug"`
			} `json:"sensors"`
			Total      int    `json:"total"`
			NextCursor string `json:"nextCursor"`
		}
		g.call(t, endpoints["project"], "list_project_sensors", map[string]any{"limit": 1}).decode(t, &l)
		if len(l.Sensors) != 1 || l.Sensors[0].FeedSlug != feed || l.Total != d.SensorCount {
			t.Errorf("list_project_sensors: %+v (sensor_count %d)", l, d.SensorCount)
		}
		if l.Total > 1 && l.NextCursor == "" {
			t.Errorf("no nextCursor with %d sensors and limit 1", l.Total)
		}
		// The service tool sees the feed through params._meta.feed_slug.
		var st struct {
			Filters struct {
				Feed     string `json:"feed"`
				FeedFrom string `json:"feed_from"`
			} `json:"filters"`
			Pagination struct{ Total int } `json:"pagination"`
		}
		g.call(t, endpoints["project"], "ocean__list_stations", map[string]any{}).decode(t, &st)
		if st.Filters.Feed != feed || !strings.Contains(st.Filters.FeedFrom, "feed_slug") || st.Pagination.Total != d.SensorCount {
			t.Errorf("ocean.list_stations at project scope: %+v", st)
		}
	})

	t.Run("service down", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		dead := "http://" + testenv.FreeAddr(t) // nothing listens there
		lat, lon := 10.0, 20.0
		if _, err := g.Store.Sync(ctx, catalog.SyncBatch{
			Service: catalog.Service{ID: "deadsvc", Name: "Dead", URL: dead, Status: "active"},
			Sensors: []catalog.Sensor{{ID: uuid.New(), ExternalID: "DEAD1", Name: "Dead sensor", ServiceID: "deadsvc", Status: "active", SensorType: "buoy", Latitude: &lat, Longitude: &lon, UpdatedAt: time.Now()}},
			Full:    true,
		}); err != nil {
			t.Fatal(err)
		}
		r := g.post(t, "/api/v1/services/deadsvc/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		if r.Status != 200 || r.Msg.Error == nil || r.Msg.Error.Code != jsonrpc.CodeInternalError || !strings.Contains(string(r.Msg.Error.Data), "upstream_unavailable") {
			t.Errorf("tools/list of a dead service: %d %s", r.Status, r.Body)
		}
		tr := g.call(t, "/api/v1/services/deadsvc/mcp", "deadsvc.latest_observation", map[string]any{})
		if !tr.IsError || !strings.Contains(tr.text(), "unavailable") {
			t.Errorf("tools/call of a dead service: %+v", tr)
		}
	})
}

func listNames(tb testing.TB, g *gateway, path string, header ...string) []string {
	tb.Helper()
	r := g.post(tb, path, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, header...)
	var res struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if r.Status != 200 || r.Msg.Error != nil || json.Unmarshal(r.Msg.Result, &res) != nil {
		tb.Fatalf("tools/list %s: %d %s", path, r.Status, r.Body)
	}
	var names []string
	for _, t := range res.Tools {
		if len(t.InputSchema) == 0 {
			tb.Errorf("tool %s has no inputSchema", t.Name)
		}
		names = append(names, t.Name)
	}
	return names
}

// mcpCalls reads sensorgate_mcp_calls_total for one scope, tool and outcome.
func mcpCalls(tb testing.TB, g *gateway, scope, tool, outcome string) float64 {
	tb.Helper()
	return counterValue(tb, g.Metrics, "sensorgate_mcp_calls_total", map[string]string{"scope": scope, "tool": tool, "outcome": outcome})
}
