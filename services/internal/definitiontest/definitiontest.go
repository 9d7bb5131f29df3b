// Package definitiontest holds the checks every service definition's tests run: that each
// provider claims exactly its own recorded payloads (and parses them), and that its live
// targets are well formed.
package definitiontest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/services/internal/providerdata"
	"github.com/sensorgate/sensorgate/services/runtime/app"
)

// CheckRecordedPayloads classifies every recorded payload with def's providers. Each file
// may be claimed by one provider at most, must parse when claimed (unless it is a recorded
// error body), must lie in the folder folderOf names for the provider, and each provider
// must claim exactly wantClaims[slug] files.
func CheckRecordedPayloads(t *testing.T, def app.Definition, folderOf map[string]string, wantClaims map[string]int) {
	t.Helper()
	dir := providerdata.Dir()
	if dir == "" {
		t.Fatalf("recorded provider payloads not found (testdata/providers at the repository root); set %s", providerdata.EnvDir)
	}
	claimed := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if strings.HasSuffix(rel, providerdata.SidecarSuffix) {
			return nil
		}
		for _, p := range def.Providers {
			if p.Classify == nil {
				continue
			}
			pl, ok := p.Classify(rel, body)
			if !ok {
				continue
			}
			if prev, dup := claimed[rel]; dup {
				t.Errorf("%s claimed by %s and %s", rel, prev, p.Slug())
			}
			claimed[rel] = p.Slug()
			if pl.StationID == "" {
				if sc, err := os.ReadFile(path + providerdata.SidecarSuffix); err == nil {
					pl.StationID = strings.TrimSpace(string(sc))
				}
			}
			if _, err := p.Adapter.Parse(pl); err != nil && !strings.Contains(rel, "error") {
				t.Errorf("%s: claimed by %s as %s but does not parse: %v", rel, p.Slug(), pl.Format, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for rel, slug := range claimed {
		got[slug]++
		folder := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
		if want, ok := folderOf[slug]; !ok || want != folder {
			t.Errorf("%s (folder %s) claimed by %s", rel, folder, slug)
		}
	}
	for slug, n := range wantClaims {
		if got[slug] != n {
			t.Errorf("%s claimed %d files, want %d: %v", slug, got[slug], n, claimed)
		}
	}
}

// CheckLiveTargets asks every live-capable provider of def for the targets of one station
// and checks that each names the base URL and one of the adapter's formats.
func CheckLiveTargets(t *testing.T, def app.Definition) {
	t.Helper()
	for _, p := range def.Providers {
		if p.Live.Targets == nil {
			continue
		}
		targets := p.Live.Targets("http://example.test", []string{"ABC1"}, "k:s")
		if len(targets) == 0 {
			t.Errorf("%s: no live targets", p.Slug())
		}
		formats := strings.Join(p.Adapter.Formats(), " ")
		for _, tg := range targets {
			if !strings.HasPrefix(tg.URL, "http://example.test/") || !strings.Contains(formats, strings.TrimSuffix(tg.Format, ".english")) {
				t.Errorf("%s: target %+v", p.Slug(), tg)
			}
		}
	}
}
