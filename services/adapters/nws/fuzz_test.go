package nws

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
)

func seeds(f *testing.F, fixtures, shared []string) {
	var all [][]byte
	for _, n := range fixtures {
		all = append(all, adaptertest.Testdata(f, n))
	}
	if dir := adaptertest.ProviderDir(); dir != "" {
		for _, n := range shared {
			if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
				all = append(all, b)
			}
		}
	}
	for _, s := range all {
		f.Add(s)
		f.Add(s[:len(s)/2])
		f.Add([]byte(strings.Replace(string(s), `"value": 2`, `"value": 1e308`, 1)))
		f.Add([]byte(strings.Replace(string(s), `"value": 2`, `"value": -1e308`, 1)))
		f.Add([]byte(strings.Replace(string(s), `"timestamp": "`, "\"timestamp\": \"\xff", 1)))
	}
	f.Add([]byte(`{"type":"Feature","properties":{"stationId":"K\u0000","timestamp":"2022-03-02T23:53:00+00:00","temperature":{"unitCode":"wmoUnit:degC","value":22.8}}}`))
	f.Add([]byte(`{"type":"FeatureCollection","features":[null,1,"x",{"type":"Feature"}]}`))
}

func FuzzParseObservations(f *testing.F) {
	seeds(f, []string{"KFLL_latest.json", "KCNK_observations_excerpt.json"}, []string{"nws/stations_KPWM_observation_2019-08-21.json"})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseObservations(data)
		if err != nil {
			return
		}
		adaptertest.CheckBatch(t, b)
	})
}

func FuzzParseStations(f *testing.F) {
	seeds(f, []string{"gridpoints_stations_excerpt.json"}, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseStations(data)
		if err != nil {
			return
		}
		adaptertest.CheckBatch(t, b)
	})
}
