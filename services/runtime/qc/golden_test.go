package qc_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/coops"
	"github.com/sensorgate/sensorgate/services/adapters/ndbc"
	"github.com/sensorgate/sensorgate/services/adapters/openaq"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestGoldenFlags")

// goldenCase is one recorded payload, parsed by its provider's parse function.
type goldenCase struct {
	name, file string
	parse      func([]byte) (observation.Batch, error)
}

// flagged is one value the tests or the provider did not pass.
type flagged struct {
	Time   string   `json:"time"`
	Param  string   `json:"parameter"`
	Value  float64  `json:"value"`
	Flag   int      `json:"flag"`
	Failed []string `json:"failed"`
}

// golden is what a payload gives once stored: per parameter the count of each flag, the
// values the payload marked missing (its fill values, never stored: flag 9 in the
// contract's terms), and every value flagged 3 or 4.
type golden struct {
	Counts  map[string]map[string]int `json:"counts"`
	Missing int                       `json:"missing_values"`
	Flagged []flagged                 `json:"flagged"`
}

// TestGoldenFlags ingests recorded payloads (testdata/providers) and one derived from a
// recorded file with known bad values (testdata/41002_stuck_and_spike.txt: WTMP stuck at
// 22.0 for 30 hours, one 40 °C air temperature) into a store, and compares the flags
// stored with the golden files in testdata/golden (go test -run TestGoldenFlags -update
// rewrites them).
func TestGoldenFlags(t *testing.T) {
	t.Parallel()
	providers := filepath.Join("..", "..", "..", "testdata", "providers")
	cases := []goldenCase{
		{"ndbc_41002_realtime2", filepath.Join(providers, "ndbc", "41002.txt"), func(b []byte) (observation.Batch, error) { return ndbc.ParseStdmet("41002", b) }},
		{"ndbc_41002_stuck_and_spike", filepath.Join("testdata", "41002_stuck_and_spike.txt"), func(b []byte) (observation.Batch, error) { return ndbc.ParseStdmet("41002", b) }},
		{"ndbc_tplm2_historical_2020", filepath.Join(providers, "ndbc", "tplm2h2020.txt"), func(b []byte) (observation.Batch, error) { return ndbc.ParseStdmet("TPLM2", b) }},
		{"coops_8723970_water_temperature", filepath.Join(providers, "coops", "datagetter_8723970_water_temperature_metric_20140927-20140928.json"),
			func(b []byte) (observation.Batch, error) {
				return coops.ParseDatagetter(coops.ProductWaterTemperature, "metric", b)
			}},
		{"openaq_v3_sensor_3_measurements", filepath.Join(providers, "openaq", "v3_sensors_3_measurements.json"),
			func(b []byte) (observation.Batch, error) { return openaq.ParseV3Measurements("v3-3", b) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			body, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			b, err := c.parse(body)
			if err != nil {
				t.Fatal(err)
			}
			got := ingestAndRead(t, b)
			path := filepath.Join("testdata", "golden", c.name+".json")
			out, _ := json.MarshalIndent(got, "", "  ")
			out = append(out, '\n')
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -run TestGoldenFlags -update writes it)", err)
			}
			if string(want) != string(out) {
				t.Fatalf("flags of %s differ from %s:\n%s", c.file, path, out)
			}
		})
	}
}

// ingestAndRead stores b in a fresh SQLite store (the tests run at ingest) and reads every
// value back.
func ingestAndRead(t *testing.T, b observation.Batch) golden {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{SQLitePath: filepath.Join(t.TempDir(), "g.db"), ServiceID: "golden"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Ingest(ctx, store.Batch{Provider: b.Provider, FetchedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Stations: b.Stations, Observations: b.Observations}); err != nil {
		t.Fatal(err)
	}
	g := golden{Counts: map[string]map[string]int{}, Missing: b.MissingValues, Flagged: []flagged{}}
	dec := store.NewMeasDecoder()
	for _, st := range b.Stations {
		err := s.Scan(ctx, st.ExternalID, store.ScanQuery{SkipIDs: true}, func(r store.Reading) error {
			ms, err := dec.Decode(nil, r.Measurements)
			if err != nil {
				return err
			}
			for _, m := range ms {
				q := m.Quality()
				if g.Counts[m.Parameter] == nil {
					g.Counts[m.Parameter] = map[string]int{}
				}
				g.Counts[m.Parameter][fmt.Sprint(q.Flag)]++
				if q.Flag == canon.FlagSuspect || q.Flag == canon.FlagFail {
					g.Flagged = append(g.Flagged, flagged{Time: contract.FormatTime(r.Time), Param: m.Parameter, Value: m.Value, Flag: q.Flag, Failed: q.Failed})
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.SliceStable(g.Flagged, func(i, j int) bool { return g.Flagged[i].Time < g.Flagged[j].Time })
	return g
}
