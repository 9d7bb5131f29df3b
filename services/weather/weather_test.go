package weather_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/services/weather"
)

// Each provider claims exactly the recorded payloads of its own kind (and parses them),
// and no file of another provider.
func TestClassifyRecordedPayloads(t *testing.T) {
	t.Parallel()
	dir := "/work/shared/data/providers"
	if v := os.Getenv("SENSORGATE_PROVIDER_DATA"); v != "" {
		dir = v
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("recorded provider payloads not available (%v); set SENSORGATE_PROVIDER_DATA", err)
	}
	def := weather.Definition()
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
			if _, err := p.Adapter.Parse(pl); err != nil && !strings.Contains(rel, "error") {
				t.Errorf("%s: claimed by %s as %s but does not parse: %v", rel, p.Slug(), pl.Format, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel, slug := range claimed {
		folder := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
		if want, ok := folderOf[slug]; !ok || !strings.Contains(want, folder) {
			t.Errorf("%s (folder %s) claimed by %s", rel, folder, slug)
		}
	}
	for slug, n := range wantClaims {
		got := 0
		for _, s := range claimed {
			if s == slug {
				got++
			}
		}
		if got != n {
			t.Errorf("%s claimed %d files, want %d: %v", slug, got, n, claimed)
		}
	}
}

// Live targets name the station and format of each document.
func TestLiveTargets(t *testing.T) {
	t.Parallel()
	for _, p := range weather.Definition().Providers {
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

var folderOf = map[string]string{"noaa-nws": "nws", "ambient-weather": "imperial_station", "davis-weatherlink": "imperial_station"}

// The five NWS documents; the Ambient devices list (the device-data file names no MAC);
// the Davis sample.
var wantClaims = map[string]int{"noaa-nws": 5, "ambient-weather": 1, "davis-weatherlink": 1}
