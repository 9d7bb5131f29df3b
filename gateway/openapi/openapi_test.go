package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestLoadIsValidAndCoversSpecPaths(t *testing.T) {
	t.Parallel()
	doc, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	// Every path of docs/spec.md 4.1, in OpenAPI form.
	want := map[string][]string{
		"/api/v1/sensors":                      {"GET"},
		"/api/v1/sensors/types":                {"GET"},
		"/api/v1/sensors/statuses":             {"GET"},
		"/api/v1/sensors/registry":             {"GET"},
		"/api/v1/sensors/{id}":                 {"GET"},
		"/api/v1/sensors/{id}/readings/latest": {"GET"},
		"/api/v1/sensors/{id}/readings":        {"GET"},
		"/api/v1/sensors/{id}/mcp":             {"POST"},
		"/api/v1/sensors/registry/mcp":         {"POST"},
		"/api/v1/catalog/mcp":                  {"POST"},
		"/api/v1/alerts/mcp":                   {"POST"},
		"/api/v1/services":                     {"GET"},
		"/api/v1/services/{id}":                {"GET"},
		"/api/v1/services/{id}/health":         {"GET"},
		"/api/v1/services/{id}/mcp":            {"POST"},
		"/api/v1/projects":                     {"GET"},
		"/api/v1/projects/my":                  {"GET"},
		"/api/v1/projects/{id}":                {"GET"},
		"/api/v1/projects/{id}/mcp":            {"POST"},
		"/api/v1/openapi.json":                 {"GET"},
		"/docs":                                {"GET"},
	}
	for p, methods := range want {
		item := doc.Paths.Value(p)
		if item == nil {
			t.Errorf("path %s is missing from the document", p)
			continue
		}
		for _, m := range methods {
			if item.GetOperation(m) == nil {
				t.Errorf("%s %s is missing from the document", m, p)
			}
		}
	}
}

func TestHandler(t *testing.T) {
	t.Parallel()
	h, err := NewHandler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tests := []struct {
		name, method, path string
		status             int
		ctype              string
		contains           string
	}{
		{"document", "GET", PathJSON, 200, "application/json; charset=utf-8", `"openapi":"3.1.0"`},
		{"page", "GET", PathDocs, 200, "text/html; charset=utf-8", `<script src="/docs/assets/redoc.standalone.js">`},
		{"page lists operations without script", "GET", PathDocs, 200, "text/html; charset=utf-8", `<code>/api/v1/sensors/{id}/readings/latest</code>`},
		{"script", "GET", PathAssets + "redoc.standalone.js", 200, "text/javascript; charset=utf-8", "Redoc"},
		{"licence", "GET", PathAssets + "REDOC-LICENSE.txt", 200, "text/plain; charset=utf-8", "MIT"},
		{"unknown asset", "GET", PathAssets + "nope.js", 404, "application/json; charset=utf-8", `"code":"not_found"`},
		{"traversal", "GET", PathAssets + "..%2fopenapi.yaml", 404, "application/json; charset=utf-8", `"code":"not_found"`},
		{"wrong method", "POST", PathJSON, 405, "application/json; charset=utf-8", `"code":"method_not_allowed"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.status)
			}
			if got := resp.Header.Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type = %q, want %q", got, tc.ctype)
			}
			if !strings.Contains(string(body), tc.contains) {
				t.Errorf("body does not contain %q", tc.contains)
			}
		})
	}
}

func TestDocumentIsServedWithETag(t *testing.T) {
	t.Parallel()
	h, err := NewHandler()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", PathJSON, nil))
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("document is not JSON: %v", err)
	}
	etag := rec.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	req := httptest.NewRequest("GET", PathJSON, nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Errorf("conditional GET: status %d, %d bytes; want 304 and no body", rec.Code, rec.Body.Len())
	}
}

func TestPageUsesNoCDN(t *testing.T) {
	t.Parallel()
	h, err := NewHandler()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", PathDocs, nil))
	for _, bad := range []string{"http://", "https://", "//cdn"} {
		if strings.Contains(rec.Body.String(), bad) {
			t.Errorf("page refers to %q: the page must work offline", bad)
		}
	}
	// The bundled renderer refers to a CDN logo; the policy keeps the browser on this origin.
	csp := rec.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "http") {
		t.Errorf("Content-Security-Policy %q must confine the page to its own origin", csp)
	}
}
