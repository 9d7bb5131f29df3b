package web

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestPagesAndHeaders(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, ctype, contains string
	}{
		{PathRoot, "text/html", `href="/explorer"`},
		{PathExplorer, "text/html", `<script type="module" src="/explorer/assets/app.js">`},
		{PathAssets + "app.js", "text/javascript", ""},
		{PathAssets + "app.css", "text/css", ""},
		{PathAssets + "countries-110m.json", "application/json", `"Topology"`},
	} {
		w := get(t, h, "GET", tc.path, nil)
		if w.Code != 200 {
			t.Fatalf("GET %s: %d", tc.path, w.Code)
		}
		hdr := w.Header()
		if !strings.HasPrefix(hdr.Get("Content-Type"), tc.ctype) {
			t.Errorf("GET %s: Content-Type %q, want %s", tc.path, hdr.Get("Content-Type"), tc.ctype)
		}
		if hdr.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", tc.path)
		}
		csp := hdr.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("GET %s: CSP %q allows more than this origin's scripts", tc.path, csp)
		}
		if !strings.Contains(csp, "connect-src 'self'") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("GET %s: CSP %q lets the page reach other origins", tc.path, csp)
		}
		if !strings.Contains(w.Body.String(), tc.contains) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.contains)
		}
		if strings.HasSuffix(tc.ctype, "html") && strings.Contains(w.Body.String(), "<script>") {
			t.Errorf("GET %s: inline script", tc.path)
		}
		// A conditional repeat is a 304.
		w2 := get(t, h, "GET", tc.path, map[string]string{"If-None-Match": hdr.Get("ETag")})
		if w2.Code != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match: %d, want 304", tc.path, w2.Code)
		}
	}
}

func TestGzip(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	plain := get(t, h, "GET", PathAssets+"app.js", nil)
	zipped := get(t, h, "GET", PathAssets+"app.js", map[string]string{"Accept-Encoding": "br, gzip"})
	if zipped.Header().Get("Content-Encoding") != "gzip" || plain.Header().Get("Content-Encoding") != "" {
		t.Fatalf("Content-Encoding: %q with gzip accepted, %q without", zipped.Header().Get("Content-Encoding"), plain.Header().Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(zipped.Body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != plain.Body.String() {
		t.Fatal("gzip answer does not unpack to the plain one")
	}
	refused := get(t, h, "GET", PathAssets+"app.js", map[string]string{"Accept-Encoding": "gzip;q=0"})
	if refused.Header().Get("Content-Encoding") != "" {
		t.Fatal("gzip sent to a client that refused it (q=0)")
	}
	raw, gz := h.Size()
	t.Logf("page weight: %d bytes, %d gzipped", raw, gz)
	if gz > 300*1024 {
		t.Errorf("page weight %d bytes gzipped, over the 300 KB target", gz)
	}
}

func TestErrors(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", PathAssets + "nope.js", 404, "not_found"},
		{"GET", PathAssets + "index.html", 404, "not_found"},
		{"GET", PathAssets + "../web.go", 404, "not_found"},
		{"GET", "/explorer/other", 404, "not_found"},
		{"POST", PathExplorer, 405, "method_not_allowed"},
	} {
		w := get(t, h, tc.method, tc.path, nil)
		var body struct{ Error, Code string }
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != tc.status || body.Code != tc.code || body.Error == "" {
			t.Errorf("%s %s: %d %s, want %d with code %s", tc.method, tc.path, w.Code, w.Body.String(), tc.status, tc.code)
		}
	}
	head := get(t, h, "HEAD", PathExplorer, nil)
	if head.Code != 200 || head.Body.Len() != 0 || head.Header().Get("Content-Length") == "" {
		t.Errorf("HEAD %s: %d with %d body bytes", PathExplorer, head.Code, head.Body.Len())
	}
}
