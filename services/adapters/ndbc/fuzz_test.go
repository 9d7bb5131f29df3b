package ndbc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
)

// seedStdmet adds the recorded files (when present), the fixtures, and hostile variants.
func seedStdmet(f *testing.F) {
	var seeds [][]byte
	for _, n := range []string{"41002_excerpt.txt", "tplm2h2020_excerpt.txt", "latest_obs_excerpt.txt"} {
		seeds = append(seeds, adaptertest.Testdata(f, n))
	}
	if dir := adaptertest.ProviderDir(); dir != "" {
		for _, n := range []string{"41002.txt", "TPLM2.txt", "tplm272022.txt", "tplm2h2020.txt", "latest_obs.txt"} {
			if b, err := os.ReadFile(filepath.Join(dir, "ndbc", n)); err == nil {
				seeds = append(seeds, b)
			}
		}
	}
	for _, s := range seeds {
		f.Add("41002", s)
		lines := strings.Split(string(s), "\n")
		if len(lines) > 3 {
			// truncated mid-row, wrong column counts, non-UTF-8, huge numbers, NaN/Inf
			f.Add("41002", []byte(strings.Join(lines[:3], "\n")[:len(lines[0])+len(lines[1])+10]))
			f.Add("41002", []byte(lines[0]+"\n"+lines[1]+"\n"+lines[2]+" 1 2 3\n"))
			f.Add("41002", []byte(lines[0]+"\n"+lines[1]+"\n\xff\xfe"+lines[2]+"\n"))
			f.Add("41002", []byte(lines[0]+"\n"+lines[1]+"\n"+strings.ReplaceAll(lines[2], "MM", "1e308")+"\n"))
			f.Add("41002", []byte(lines[0]+"\n"+lines[1]+"\n"+strings.ReplaceAll(lines[2], "MM", "NaN")+"\n"))
			f.Add("41002", []byte(lines[0]+"\n"+lines[1]+"\n"+strings.ReplaceAll(lines[2], "MM", "-Inf")+"\n"))
		}
	}
	f.Add("", []byte("#STN LAT LON YYYY MM DD hh mm WDIR\n41002 1e400 -74.8 2018 07 30 21 10 190\n"))
}

func FuzzParseStdmet(f *testing.F) {
	seedStdmet(f)
	f.Fuzz(func(t *testing.T, station string, data []byte) {
		b, err := ParseStdmet(station, data)
		if err != nil {
			return
		}
		adaptertest.CheckBatch(t, b)
	})
}

func FuzzParseActiveStations(f *testing.F) {
	f.Add(adaptertest.Testdata(f, "activestations_excerpt.xml"))
	f.Add([]byte(`<stations><station id="x1" lat="NaN" lon="Inf"/><station id="y2" lat="1e999" lon="2"/></stations>`))
	f.Add([]byte("<stations><station id=\"\xff\" lat=\"1\" lon=\"2\"/></stations>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseActiveStations(data)
		if err != nil {
			return
		}
		adaptertest.CheckBatch(t, b)
		for _, s := range b.Stations {
			if s.Latitude == nil || s.Longitude == nil {
				t.Fatalf("station %s without a position", s.ExternalID)
			}
		}
	})
}
