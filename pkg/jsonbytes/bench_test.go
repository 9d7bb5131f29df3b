package jsonbytes

import (
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkValid checks a page of readings as the export and latest paths do, so that a
// change to skipValue shows its cost:
//
//	go test -run '^$' -bench Valid -count 10 ./pkg/jsonbytes/
func BenchmarkValid(b *testing.B) {
	type m struct {
		Parameter string  `json:"parameter"`
		Value     float64 `json:"value"`
		Unit      string  `json:"unit"`
		QC        string  `json:"qc"`
	}
	type reading struct {
		Timestamp    time.Time      `json:"timestamp"`
		Measurements []m            `json:"measurements"`
		Raw          map[string]any `json:"raw"`
	}
	at := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	rs := make([]reading, 500)
	for i := range rs {
		rs[i] = reading{Timestamp: at.Add(time.Duration(i) * 10 * time.Minute),
			Measurements: []m{{"air_temperature_c", 12.5, "degC", "good"}, {"wind_speed_ms", 7.25, "m/s", "good"}, {"wave_height_m", 1.8, "m", "suspect"}},
			Raw:          map[string]any{"WDIR": 240, "WSPD": 7.2, "GST": 9.1, "WVHT": 1.8, "ATMP": 12.5, "list": []any{1, 2, 3}}}
	}
	page, err := json.Marshal(rs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		if !Valid(page) {
			b.Fatal("not valid")
		}
	}
}
