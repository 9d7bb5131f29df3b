package providerdata_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/services/airquality"
	"github.com/sensorgate/sensorgate/services/internal/providerdata"
	"github.com/sensorgate/sensorgate/services/ocean"
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/runtime/ingest"
	"github.com/sensorgate/sensorgate/services/weather"
)

// TestEveryRecordedFileIsIngestedOrListed walks testdata/providers: each file is claimed in
// files mode by exactly one provider of one service and parses into at least one station
// or observation (the CO-OPS error body is claimed and parses into the provider's error),
// or it is in providerdata.NotIngested with a reason, or it is a sidecar of a claimed
// document. A file added to the folder without either fails here.
func TestEveryRecordedFileIsIngestedOrListed(t *testing.T) {
	t.Parallel()
	if ingest.SidecarSuffix != providerdata.SidecarSuffix {
		t.Fatalf("sidecar suffixes differ: %q, %q", ingest.SidecarSuffix, providerdata.SidecarSuffix)
	}
	dir := providerdata.Dir()
	if dir == "" {
		t.Fatal("testdata/providers not found")
	}
	defs := []app.Definition{ocean.Definition(), weather.Definition(), airquality.Definition()}
	claimed := map[string]bool{}
	var sidecars []string
	n := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if strings.HasSuffix(rel, providerdata.SidecarSuffix) {
			sidecars = append(sidecars, rel)
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var who []string
		for _, def := range defs {
			for _, p := range def.Providers {
				if p.Classify == nil {
					continue
				}
				pl, ok := p.Classify(rel, body)
				if !ok {
					continue
				}
				who = append(who, def.ID+"/"+p.Slug())
				if pl.StationID == "" {
					if sc, err := os.ReadFile(path + providerdata.SidecarSuffix); err == nil {
						pl.StationID = strings.TrimSpace(string(sc))
					}
				}
				b, err := p.Adapter.Parse(pl)
				switch {
				case strings.Contains(rel, "error"):
					if err == nil {
						t.Errorf("%s: a recorded error body parsed without an error", rel)
					}
				case err != nil:
					t.Errorf("%s: claimed by %s as %s but does not parse: %v", rel, p.Slug(), pl.Format, err)
				case len(b.Stations) == 0 && len(b.Observations) == 0:
					t.Errorf("%s: claimed by %s but yields nothing", rel, p.Slug())
				}
			}
		}
		reason, listed := providerdata.NotIngested[rel]
		switch {
		case len(who) > 1:
			t.Errorf("%s claimed by %v", rel, who)
		case len(who) == 1 && listed:
			t.Errorf("%s is ingested by %s but listed as not ingested (%s)", rel, who[0], reason)
		case len(who) == 0 && !listed:
			t.Errorf("%s is neither ingested in files mode nor listed in providerdata.NotIngested with a reason", rel)
		case len(who) == 1:
			claimed[rel] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range sidecars {
		if !claimed[strings.TrimSuffix(sc, providerdata.SidecarSuffix)] {
			t.Errorf("sidecar %s names the station of no ingested document", sc)
		}
	}
	for rel := range providerdata.NotIngested {
		if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
			t.Errorf("NotIngested lists %s, which is not in the folder", rel)
		}
	}
	if n < 33 {
		t.Errorf("only %d files in %s", n, dir)
	}
}
