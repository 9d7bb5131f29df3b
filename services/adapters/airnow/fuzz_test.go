package airnow

import (
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
)

func seeds(f *testing.F) {
	for _, n := range []string{"airnow_data_monitors_pm25_first12.json", "airnow_observation_current_LA_2026-09-12.json", "airnow_observation_current_latlong_LA_2020.json"} {
		s := adaptertest.Testdata(f, n)
		f.Add(s)
		f.Add(s[:len(s)/2])
		f.Add([]byte(strings.Replace(string(s), `": 3`, `": 1e308`, 1)))
		f.Add([]byte(strings.Replace(string(s), `": 3`, `": -1e-300`, 1)))
		f.Add([]byte(strings.Replace(string(s), `"PM2.5"`, "\"PM\xff2.5\"", 1)))
	}
	f.Add([]byte(`[{"UTC":"2026-09-12T20:00","Parameter":"PM2.5","Value":1e400,"IntlAQSCode":"1"}]`))
	f.Add([]byte(`[null, 1, "x", [], {"HourObserved":{"a":1}}]`))
}

func FuzzParseData(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := ParseData(data); err == nil {
			adaptertest.CheckBatch(t, b)
		}
	})
}

func FuzzParseObservations(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := ParseObservations(data); err == nil {
			adaptertest.CheckBatch(t, b)
		}
	})
}
