package openapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// recordingTB collects failures instead of failing, so tests can assert on them.
type recordingTB struct {
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recordingTB) failures() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, "\n")
}

const goodSensor = `{"id":"d47a1a34-42fd-5066-9dce-c63c54fe5ace","external_id":"41002","name":"South Hatteras","description":"buoy","sensor_type":"buoy","status":"active","data_types":["water_temperature_c"],"deployment_date":null,"decommissioned_date":null,"latitude":31.76,"longitude":-74.84,"provider_id":"7975d2de-9790-5f77-9400-bc521e0270a3","provider_name":"NOAA NDBC","provider_slug":"ndbc","feed_id":null,"feed_name":"","connected_service":"ocean"}`

// reply is what the fake gateway answers.
type reply struct {
	status  int
	headers map[string]string
	body    string
}

func authHeaders() map[string]string {
	return map[string]string{
		"Content-Type": "application/json; charset=utf-8", "X-Request-Id": "r1",
		"x-ratelimit-limit": "1000", "x-ratelimit-remaining": "999", "x-ratelimit-reset": "3",
	}
}

func with(h map[string]string, kv ...string) map[string]string {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(h, kv[i])
		} else {
			h[kv[i]] = kv[i+1]
		}
	}
	return h
}

func TestValidator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		method, url string
		key         bool
		ctype, body string
		reply       reply
		wantErr     string // "" = must pass
	}{
		{"documented sensor", "GET", "/api/v1/sensors/41002", true, "", "", reply{200, authHeaders(), goodSensor}, ""},
		{"undocumented field", "GET", "/api/v1/sensors/41002", true, "", "",
			reply{200, authHeaders(), strings.Replace(goodSensor, `"connected_service"`, `"secret_field":1,"connected_service"`, 1)}, "secret_field"},
		{"missing required field", "GET", "/api/v1/sensors/41002", true, "", "",
			reply{200, authHeaders(), strings.Replace(goodSensor, `"provider_slug":"ndbc",`, ``, 1)}, "provider_slug"},
		{"undocumented status", "GET", "/api/v1/sensors/41002", true, "", "",
			reply{418, authHeaders(), `{"error":"teapot","code":"internal"}`}, "status 418 is not documented"},
		{"missing rate-limit header", "GET", "/api/v1/sensors/41002", true, "", "",
			reply{200, with(authHeaders(), "x-ratelimit-remaining", ""), goodSensor}, "x-ratelimit-remaining"},
		{"missing request id", "GET", "/api/v1/sensors/41002", true, "", "",
			reply{200, with(authHeaders(), "X-Request-Id", ""), goodSensor}, "X-Request-Id"},
		{"unknown error code", "GET", "/api/v1/sensors/nope", true, "", "",
			reply{404, authHeaders(), `{"error":"gone","code":"gone"}`}, "code"},
		{"documented 404", "GET", "/api/v1/sensors/nope", true, "", "",
			reply{404, authHeaders(), `{"error":"sensor \"nope\" not found","code":"sensor_not_found"}`}, ""},
		{"timestamp without milliseconds", "GET", "/api/v1/sensors/41002/readings/latest", true, "", "",
			reply{200, authHeaders(), `{"sensor_id":"d47a1a34-42fd-5066-9dce-c63c54fe5ace","external_id":"41002","name":"x","service_id":"ocean","reading":{"id":"52b49812-64fa-5c89-a5c3-f4e5fe5d0b85","timestamp":"2018-08-01T15:10:00Z","measurements":[],"location":null},"provenance":{"sensor_id":"d47a1a34-42fd-5066-9dce-c63c54fe5ace","service_id":"ocean","source_id":"41002"}}`}, "timestamp"},
		{"raw reading", "GET", "/api/v1/sensors/41002/readings/latest?data_format=raw", true, "", "",
			reply{200, authHeaders(), `{"sensor_id":"d47a1a34-42fd-5066-9dce-c63c54fe5ace","external_id":"41002","name":"x","service_id":"ocean","reading":{"id":"52b49812-64fa-5c89-a5c3-f4e5fe5d0b85","timestamp":"2018-08-01T15:10:00.000Z","location":null,"raw":{"line":"2018 08 01"},"source_format":"ndbc.realtime2.stdmet"},"provenance":{"sensor_id":"d47a1a34-42fd-5066-9dce-c63c54fe5ace","service_id":"ocean","source_id":"41002","provider":"ndbc","fetched_at":null}}`}, ""},
		{"no key answered 401", "GET", "/api/v1/sensors", false, "", "",
			reply{401, map[string]string{"Content-Type": "application/json", "X-Request-Id": "r1"}, `{"error":"missing API key","code":"missing_api_key"}`}, ""},
		{"no key answered 200", "GET", "/api/v1/sensors/types", false, "", "",
			reply{200, authHeaders(), `["buoy"]`}, "forbids"},
		{"bad parameter answered 400", "GET", "/api/v1/sensors?limit=abc", true, "", "",
			reply{400, authHeaders(), `{"error":"invalid parameter \"limit\"","code":"invalid_parameter"}`}, ""},
		{"bad parameter answered 200", "GET", "/api/v1/sensors/types?x=1", true, "", "", reply{200, authHeaders(), `["buoy"]`}, ""},
		{"out-of-range parameter accepted", "GET", "/api/v1/sensors/41002/readings?data_format=csv", true, "", "",
			reply{200, authHeaders(), `{"sensor_id":"d47a1a34-42fd-5066-9dce-c63c54fe5ace","external_id":"41002","name":"x","service_id":"ocean","readings":[],"provenance":{"sensor_id":"d47a1a34-42fd-5066-9dce-c63c54fe5ace","service_id":"ocean","source_id":"41002"},"pagination":{"page":1,"limit":100,"total":0,"total_pages":0}}`}, "data_format"},
		{"unknown route 404", "GET", "/api/v1/nowhere", true, "", "",
			reply{404, authHeaders(), `{"error":"no route","code":"not_found"}`}, ""},
		{"unknown route 200", "GET", "/api/v1/nowhere", true, "", "", reply{200, authHeaders(), `{}`}, "not in the document"},
		{"wrong method 405", "DELETE", "/api/v1/sensors", true, "", "",
			reply{405, authHeaders(), `{"error":"method DELETE not allowed","code":"method_not_allowed"}`}, ""},
		{"ignored path", "GET", "/metrics", false, "", "", reply{200, map[string]string{"Content-Type": "text/plain"}, "x 1"}, ""},
		{"MCP result", "POST", "/api/v1/catalog/mcp", true, "application/json", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			reply{200, authHeaders(), `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`}, ""},
		{"MCP parse error answered in protocol", "POST", "/api/v1/catalog/mcp", true, "application/json", `{not json`,
			reply{200, authHeaders(), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`}, ""},
		{"MCP undocumented response field", "POST", "/api/v1/catalog/mcp", true, "application/json", `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			reply{200, authHeaders(), `{"jsonrpc":"2.0","id":1,"result":{},"extra":true}`}, "extra"},
		{"MCP notification 202", "POST", "/api/v1/sensors/registry/mcp", true, "application/json", `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			reply{202, with(authHeaders(), "Content-Type", ""), ``}, ""},
		{"MCP notification with a body", "POST", "/api/v1/sensors/registry/mcp", true, "application/json", `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			reply{202, authHeaders(), `{"ok":true}`}, "without a body"},
		{"MCP wrong content type 415", "POST", "/api/v1/services/ocean/mcp", true, "text/plain", `hello`,
			reply{415, authHeaders(), `{"error":"send application/json","code":"unsupported_media_type"}`}, ""},
		{"rate limited without Retry-After", "GET", "/api/v1/services", true, "", "",
			reply{429, authHeaders(), `{"error":"slow down","code":"rate_limited"}`}, "Retry-After"},
		{"rate limited", "GET", "/api/v1/services", true, "", "",
			reply{429, with(authHeaders(), "Retry-After", "3"), `{"error":"slow down","code":"rate_limited"}`}, ""},
		{"not modified", "GET", "/api/v1/services", true, "", "", reply{304, map[string]string{"X-Request-Id": "r1", "ETag": `"x"`}, ``}, ""},
		{"openapi without key", "GET", "/api/v1/openapi.json", false, "", "",
			reply{200, map[string]string{"Content-Type": "application/json", "X-Request-Id": "r1"}, `{"openapi":"3.0.3","info":{},"paths":{}}`}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rtb := &recordingTB{}
			h := Validate(rtb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				for k, v := range tc.reply.headers {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.reply.status)
				_, _ = io.WriteString(w, tc.reply.body)
			}))
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req := httptest.NewRequest(tc.method, tc.url, body)
			if tc.key {
				req.Header.Set("x-api-key", "sg_dev_test")
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.reply.status || rec.Body.String() != tc.reply.body {
				t.Errorf("the validator changed the response: %d %q", rec.Code, rec.Body.String())
			}
			got := rtb.failures()
			switch {
			case tc.wantErr == "" && got != "":
				t.Errorf("want no failure, got:\n%s", got)
			case tc.wantErr != "" && !strings.Contains(got, tc.wantErr):
				t.Errorf("want a failure mentioning %q, got:\n%s", tc.wantErr, got)
			}
		})
	}
}

func TestValidateTransportAgainstRealServer(t *testing.T) {
	t.Parallel()
	h, err := NewHandler()
	if err != nil {
		t.Fatal(err)
	}
	// The document's own routes, served by a real server, answer as documented once the
	// request id is added (the gateway's middleware adds it).
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "r1")
		if r.URL.Path == "/api/v1/sensors" {
			for k, v := range authHeaders() {
				w.Header().Set(k, v)
			}
			_, _ = io.WriteString(w, `{"sensors":[{"id":"d47a1a34-42fd-5066-9dce-c63c54fe5ace","color":"red"}],"pagination":{"page":1,"limit":20,"total":1,"total_pages":1}}`)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rtb := &recordingTB{}
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: v.Transport(rtb, nil)}
	for _, p := range []string{PathJSON, PathDocs, PathAssets + "REDOC-LICENSE.txt"} {
		resp, err := client.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) == 0 {
			t.Errorf("%s: %d, %d bytes", p, resp.StatusCode, len(b))
		}
	}
	if f := rtb.failures(); f != "" {
		t.Errorf("documentation routes depart from the document:\n%s", f)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/sensors", nil)
	req.Header.Set("x-api-key", "k")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if f := rtb.failures(); !strings.Contains(f, "color") {
		t.Errorf("an undocumented field passed the transport; failures: %q", f)
	}
	if seen := v.Seen(); len(seen) != 4 {
		t.Errorf("seen = %v, want 4 operation/status pairs", seen)
	}
	if len(v.Unexercised()) == 0 {
		t.Error("Unexercised is empty after four operations")
	}
}
