package tools_test

import (
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// benchStations x benchDays of 10-minute buoy readings (1,008 per station per week).
const (
	benchStations = 50
	benchDays     = 7
)

func benchFixture(b *testing.B) []store.Batch {
	var out []store.Batch
	n := benchDays * 24 * 6
	for s := range benchStations {
		id := fmt.Sprintf("B%04d", s)
		rows := make([]obs, 0, n)
		for i := range n {
			at := now.Add(-time.Duration(i+1) * 10 * time.Minute)
			v := map[string]float64{
				canon.WindSpeedMS: 5 + 3*math.Sin(float64(i)/20), canon.WindDirectionDeg: float64((i * 7) % 360),
				canon.WaterTemperatureC: 20 + math.Sin(float64(i)/144), canon.AirTemperatureC: 18 + 2*math.Sin(float64(i)/144),
				canon.AirPressureHPa: 1013 + 5*math.Sin(float64(i)/300),
			}
			if at.Minute() == 50 {
				v[canon.WaveHeightM] = 1.5 + math.Sin(float64(i)/50)
			}
			rows = append(rows, obs{at, v})
		}
		lat, lon := 30+float64(s)/10, -75+float64(s)/10
		out = append(out, batch(b, "ndbc", "ndbc-realtime", station(id, "Bench buoy "+id, "buoy", 600, &lat, &lon), rows))
	}
	return out
}

// BenchmarkToolCall measures tools/call over HTTP on loopback (the mcpserver scaffold in
// front of a SQLite store of 50 stations x 7 days of 10-minute readings = 50,400 readings),
// as the gateway sends it: one bare JSON POST per call. It reports p50 and p99 latency.
//
//	go test ./services/tools/ -run '^$' -bench ToolCall -benchtime 2000x
func BenchmarkToolCall(b *testing.B) {
	url := serve(b, "ocean", benchFixture(b)...)
	meta := map[string]any{"sensor_external_id": "B0025"}
	cases := []struct {
		name string
		tool string
		args map[string]any
	}{
		{"latest_observation", "ocean.latest_observation", map[string]any{}},
		{"observations_500", "ocean.observations", map[string]any{"limit": 500}},
		{"describe_station", "ocean.describe_station", map[string]any{}},
		{"list_stations_near", "ocean.list_stations", map[string]any{"latitude": 32.0, "longitude": -73.0, "radius_km": 300}},
		{"sea_state", "ocean.sea_state", map[string]any{}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			body := rpc(b, 1, "tools/call", map[string]any{"name": c.tool, "arguments": c.args, "_meta": meta})
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				status, _, r := barePost(b, url, body)
				lat = append(lat, time.Since(start))
				if status != 200 || r.Error != nil || len(r.Result) == 0 {
					b.Fatalf("%s: %d %+v", c.tool, status, r.Error)
				}
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
		})
	}
}
