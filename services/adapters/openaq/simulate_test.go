package openaq

import (
	"bytes"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

func TestSimulate(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(7 * 24 * time.Hour)
	cfg := observation.SimConfig{Seed: 5, Stations: 32, QuietFraction: 0.25}
	a := Adapter()
	meta, err := a.Simulator.SimStations(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := a.Parse(meta[0])
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, sb)
	if len(sb.Stations) != 32 {
		t.Fatalf("stations = %d, want 32", len(sb.Stations))
	}
	ids := map[string]bool{}
	for _, s := range sb.Stations {
		ids[s.ExternalID] = true
		if len(s.DataTypes) != 4 { // aqi, ozone, pm10, pm2.5
			t.Errorf("%s data types %v", s.ExternalID, s.DataTypes)
		}
	}
	payloads, err := a.Simulator.Simulate(cfg, from, to)
	if err != nil {
		t.Fatal(err)
	}
	// QuietAfter zero: quiet monitors never report.
	if len(payloads) == 32 || len(payloads) < 16 {
		t.Errorf("payloads = %d, want a few quiet monitors out of 32", len(payloads))
	}
	var delhi, sydney []float64
	sentinels := 0
	for _, p := range payloads {
		b, err := a.Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		adaptertest.CheckBatch(t, b)
		if !ids[p.StationID] || len(b.Stations) != 1 || b.Stations[0].ExternalID != p.StationID {
			t.Fatalf("payload %s parsed as %+v", p.StationID, b.Stations)
		}
		r := adaptertest.Reasons(b)
		sentinels += r[batch.ReasonMissingSentinel]
		if r[batch.ReasonUnsupportedParam] == 0 {
			t.Errorf("%s: no2 records should be counted as unsupported", p.StationID)
		}
		for _, o := range b.Observations {
			v, ok := adaptertest.Value(o, canon.PM25)
			if !ok {
				continue
			}
			if _, ok := adaptertest.Value(o, canon.AQI); !ok {
				t.Fatalf("%s %s: PM2.5 without a computed AQI", p.StationID, o.Time)
			}
			switch p.StationID[:3] {
			case "IN:":
				delhi = append(delhi, v)
			case "AU:":
				sydney = append(sydney, v)
			}
		}
	}
	if sentinels == 0 {
		t.Error("no -99 sentinels simulated")
	}
	if mean(delhi) < 3*mean(sydney) {
		t.Errorf("mean PM2.5 Delhi %.1f vs Sydney %.1f: want Delhi far dirtier", mean(delhi), mean(sydney))
	}
	again, err := a.Simulator.Simulate(cfg, from, to)
	if err != nil {
		t.Fatal(err)
	}
	for i := range payloads {
		if !bytes.Equal(payloads[i].Body, again[i].Body) {
			t.Fatal("same config and window gave different bytes")
		}
	}
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// BenchmarkSimulate7Days: 7 days of 48 stations written, and written plus parsed back.
func BenchmarkSimulate7Days(b *testing.B) { adaptertest.BenchSimulate7Days(b, Adapter()) }
