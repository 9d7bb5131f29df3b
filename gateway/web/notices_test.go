package web

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestNoticesServed: the third-party notices are served beside the bundle, are the file the
// repository's THIRD_PARTY_NOTICES links to, and name every package the bundle is built
// from (package.json's dependencies) and Redoc.
func TestNoticesServed(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, PathAssets+NoticesFile, nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s%s: %d %s", PathAssets, NoticesFile, rec.Code, rec.Header().Get("Content-Type"))
	}
	root, err := os.ReadFile("../../THIRD_PARTY_NOTICES")
	if err != nil {
		t.Fatalf("the repository's THIRD_PARTY_NOTICES: %v", err)
	}
	if !bytes.Equal(root, rec.Body.Bytes()) {
		t.Error("the served notices differ from the repository's THIRD_PARTY_NOTICES")
	}
	pkg, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	deps := string(pkg)[strings.Index(string(pkg), `"dependencies"`):]
	deps = deps[:strings.Index(deps, "}")]
	for _, line := range strings.Split(deps, "\n")[1:] {
		name, version, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		entry := strings.Trim(name, `"`) + " " + strings.Trim(strings.TrimSpace(version), `",`)
		if !strings.Contains(rec.Body.String(), entry) {
			t.Errorf("the notices lack %q, a dependency of the bundle", entry)
		}
	}
	if !strings.Contains(rec.Body.String(), "Redoc ") {
		t.Error("the notices lack Redoc")
	}
}
