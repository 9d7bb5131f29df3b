package providerdata_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/airquality"
	"github.com/sensorgate/sensorgate/services/internal/providerdata"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/ocean"
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/weather"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestGoldenPerProviderFile")

// TestGoldenPerProviderFile parses every recorded file that a service ingests, as files mode
// does (its provider's Classify, the <file>.station sidecar), and compares the normalized
// output with testdata/golden/<file>.golden: a header (provider, format, records read,
// missing markers, rejections by reason), one line per station record, and one line per
// observation "time station rank format | parameter=value unit (source_value source_unit
// field rule) ...".
//
// How the expected files were verified: they were written by the adapters (go test -run
// TestGoldenPerProviderFile -update) and then checked by hand, file by file, against the
// recorded text: the rows and records the adapters' own tests name (41002 2018-08-01 15:10,
// TPLM2 2020-02-02 21:00 PRES 999.0, the AirNow RawConcentration/NowCast pairs, the Davis
// suites, Ambient 04:25, KFLL, the OpenAQ o3 ppm record, the CO-OPS "" value) were
// recomputed with a calculator from the source value and the rule's formula; every file's
// record count against `grep -c` of its data lines or `jq length`; the METAR values against
// AWC's own decoding of all 89 reports (metar.TestADDSAgreesWithItsOwnDecoding); and no
// line of any golden file holds a missing marker as a value (TestGoldenHasNoMarkers).
// Every value's rule, applied to its source value, gives the value (adaptertest.CheckBatch).
func TestGoldenPerProviderFile(t *testing.T) {
	t.Parallel()
	for rel, got := range normalizedFiles(t) {
		path := filepath.Join("testdata", "golden", filepath.FromSlash(rel)+".golden")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: no golden file (run go test -run TestGoldenPerProviderFile -update and check it): %v", rel, err)
			continue
		}
		if !bytes.Equal(got, want) {
			gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
			for i := 0; i < max(len(gl), len(wl)); i++ {
				var g, w string
				if i < len(gl) {
					g = gl[i]
				}
				if i < len(wl) {
					w = wl[i]
				}
				if g != w {
					t.Errorf("%s line %d:\n got %s\nwant %s", rel, i+1, g, w)
					break
				}
			}
		}
	}
}

// TestGoldenHasNoMarkers: no emitted value is a provider's missing marker taken as a
// number: NDBC's fill value of its column (99 for speeds, heights, periods, visibility and
// tide; 999 for directions and temperatures; 9999 for pressure), OpenAQ's -99/-999/-9999,
// AirNow's -999. A direction of 99° and a pressure of 999 hPa are readings.
func TestGoldenHasNoMarkers(t *testing.T) {
	t.Parallel()
	fill := map[string]float64{
		canon.WindDirectionDeg: 999, canon.WaveDirectionDeg: 999, canon.AirTemperatureC: 999, canon.WaterTemperatureC: 999,
		canon.DewPointC: 999, canon.AirPressureHPa: 9999,
	}
	for rel, b := range observationsOf(t) {
		for _, o := range b.Observations {
			for _, m := range o.Measurements {
				f, ok := fill[m.Parameter]
				if !ok {
					f = 99
				}
				if m.ValueOriginal == f || m.ValueOriginal == -99 || m.ValueOriginal == -999 || m.ValueOriginal == -9999 {
					t.Errorf("%s: %s %s %s = %v looks like a missing marker", rel, o.StationID, o.Time.Format(time.RFC3339), m.Parameter, m.ValueOriginal)
				}
			}
		}
	}
}

func observationsOf(t *testing.T) map[string]observation.Batch {
	t.Helper()
	dir := providerdata.Dir()
	if dir == "" {
		t.Fatal("testdata/providers not found")
	}
	defs := []app.Definition{ocean.Definition(), weather.Definition(), airquality.Definition()}
	out := map[string]observation.Batch{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, providerdata.SidecarSuffix) {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, def := range defs {
			for _, p := range def.Providers {
				if p.Classify == nil {
					continue
				}
				pl, ok := p.Classify(rel, body)
				if !ok {
					continue
				}
				if pl.StationID == "" {
					if sc, err := os.ReadFile(path + providerdata.SidecarSuffix); err == nil {
						pl.StationID = strings.TrimSpace(string(sc))
					}
				}
				b, err := p.Adapter.Parse(pl)
				if err != nil {
					b = observation.Batch{Provider: p.Slug(), Rejections: []observation.Rejection{{Reason: "error: " + err.Error()}}}
				}
				if b.Provider == "" {
					b.Provider = p.Slug()
				}
				b.Stations = append(b.Stations[:0:0], b.Stations...)
				out[rel] = b
				out[rel+"\x00format"] = observation.Batch{Provider: pl.Format}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func normalizedFiles(t *testing.T) map[string][]byte {
	t.Helper()
	all := observationsOf(t)
	out := map[string][]byte{}
	for rel, b := range all {
		if strings.Contains(rel, "\x00") {
			continue
		}
		out[rel] = normalize(b, all[rel+"\x00format"].Provider)
	}
	return out
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func normalize(b observation.Batch, format string) []byte {
	var w bytes.Buffer
	reasons := map[string]int{}
	for _, r := range b.Rejections {
		reasons[r.Reason]++
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(&w, "provider %s format %s records %d observations %d stations %d missing_markers %d\n",
		b.Provider, format, b.Records, len(b.Observations), len(b.Stations), b.MissingValues)
	for _, k := range keys {
		fmt.Fprintf(&w, "rejected %s %d\n", k, reasons[k])
	}
	for _, s := range b.Stations {
		pos := "-"
		if s.Latitude != nil {
			pos = num(*s.Latitude) + "," + num(*s.Longitude)
		}
		fmt.Fprintf(&w, "station %q %s %s %s %q\n", s.ExternalID, s.SensorType, pos, strings.Join(s.DataTypes, ","), s.Name)
	}
	for _, o := range b.Observations {
		fmt.Fprintf(&w, "%s %q r%d %s |", o.Time.UTC().Format(time.RFC3339), o.StationID, o.Source.Rank, o.RawFormat)
		conv := canon.Lineage(o.Measurements, o.RawFormat)
		for i, m := range o.Measurements {
			fmt.Fprintf(&w, " %s=%s (%s %q %q %s)", m.Parameter, num(m.Value), num(m.ValueOriginal), m.UnitOriginal, m.SourceField, conv[i].Rule)
		}
		w.WriteByte('\n')
	}
	return w.Bytes()
}
