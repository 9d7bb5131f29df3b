package web

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// sourceFiles lists what the bundle is made of, as sourceFiles in build.mjs does.
func sourceFiles(t *testing.T) []string {
	t.Helper()
	out := []string{"account.html", "build.mjs", "index.html", "package.json", "package-lock.json", "tsconfig.json"}
	err := filepath.WalkDir("src", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out = append(out, filepath.ToSlash(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestBundleMatchesSources fails when the committed bundle in dist/ was not built from the
// sources as they are now: build.mjs records the SHA-256 of every source file in
// dist/SOURCES.sha256, and a source edited (or added, or removed) since differs from it.
func TestBundleMatchesSources(t *testing.T) {
	f, err := os.Open("dist/SOURCES.sha256")
	if err != nil {
		t.Fatalf("the bundle has no source list (%v); rebuild it with: make web", err)
	}
	defer f.Close()
	recorded := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("dist/SOURCES.sha256: bad line %q", sc.Text())
		}
		recorded[name] = sum
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var stale []string
	for _, name := range sourceFiles(t) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		switch want, ok := recorded[name]; {
		case !ok:
			stale = append(stale, name+" (new since the build)")
		case want != hex.EncodeToString(sum[:]):
			stale = append(stale, name+" (changed since the build)")
		}
		delete(recorded, name)
	}
	for name := range recorded {
		stale = append(stale, name+" (removed since the build)")
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		t.Fatalf("the committed bundle in gateway/web/dist is older than its sources; rebuild it with `make web` and commit dist/:\n  %s",
			strings.Join(stale, "\n  "))
	}
	t.Logf("dist/ was built from the current %d source files", len(sourceFiles(t)))
}

// TestSourceListAgrees checks that this test and build.mjs hash the same files: a source
// kind added to one but not the other would let a stale bundle through.
func TestSourceListAgrees(t *testing.T) {
	b, err := os.ReadFile("build.mjs")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%q", []string{"account.html", "build.mjs", "index.html", "package.json", "package-lock.json", "tsconfig.json"})
	want = strings.NewReplacer("[", "[", " ", ", ").Replace(want)
	if !strings.Contains(string(b), want) || !strings.Contains(string(b), `walk("src")`) {
		t.Fatalf("build.mjs's sourceFiles no longer lists %s plus src/: keep it and sourceFiles in this test the same", want)
	}
}
