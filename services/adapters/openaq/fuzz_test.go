package openaq

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
)

func seeds(f *testing.F) {
	var all [][]byte
	for _, n := range []string{"v1_latest_excerpt.json", "v1_measurements_city_Chennai_limit10.json", "v1_measurements_limit2_attribution_averagingPeriod.json"} {
		all = append(all, adaptertest.Testdata(f, n))
	}
	if dir := adaptertest.ProviderDir(); dir != "" {
		if b, err := os.ReadFile(filepath.Join(dir, "openaq", "v1_latest_limit100_page1.json")); err == nil {
			all = append(all, b)
		}
	}
	for _, s := range all {
		f.Add(s)
		f.Add(s[:len(s)/2])
		f.Add([]byte(strings.Replace(string(s), `"value":`, `"value":1e308,"x":`, 1)))
		f.Add([]byte(strings.Replace(string(s), `"value":`, `"value":-1e-308,"x":`, 1)))
		f.Add([]byte(strings.Replace(string(s), `"location":"`, "\"location\":\"\xff\xfe", 1)))
	}
	f.Add([]byte(`{"results":[{"location":"A","parameter":"pm25","date":{"utc":"2020-11-08T10:00:00Z"},"value":NaN}]}`))
	f.Add([]byte(`{"results":[null,{},[],{"measurements":null}]}`))
}

func FuzzParseLatest(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := ParseLatest(data); err == nil {
			adaptertest.CheckBatch(t, b)
		}
	})
}

func FuzzParseMeasurements(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := ParseMeasurements(data); err == nil {
			adaptertest.CheckBatch(t, b)
		}
	})
}

func FuzzParseLocations(f *testing.F) {
	seeds(f)
	f.Add([]byte(`{"results":[{"location":"A","country":"IN","coordinates":{"latitude":1,"longitude":2},"parameters":["pm25","no2"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := ParseLocations(data); err == nil {
			adaptertest.CheckBatch(t, b)
		}
	})
}
