package nws

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
	from := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(7 * 24 * time.Hour)
	cfg := observation.SimConfig{Seed: 3, Stations: 20, QuietFraction: 0.2, QuietAfter: from.Add(6 * 24 * time.Hour)}
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
	ids := map[string]bool{}
	for _, s := range sb.Stations {
		ids[s.ExternalID] = true
		// On land in the contiguous US.
		if *s.Latitude < 30 || *s.Latitude > 48 || *s.Longitude < -120 || *s.Longitude > -75 {
			t.Errorf("station %s at %v,%v", s.ExternalID, *s.Latitude, *s.Longitude)
		}
	}
	if len(ids) != 20 {
		t.Fatalf("distinct simulated stations = %d, want 20", len(ids))
	}
	payloads, err := a.Simulator.Simulate(cfg, from, to)
	if err != nil {
		t.Fatal(err)
	}
	quiet, nulls, qc, rows := 0, 0, 0, 0
	var temps []float64
	for _, p := range payloads {
		nulls += bytes.Count(p.Body, []byte(`"value":null`))
		b, err := a.Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		adaptertest.CheckBatch(t, b)
		if !ids[p.StationID] || b.Stations[0].ExternalID != p.StationID {
			t.Fatalf("payload of %s parsed as %+v", p.StationID, b.Stations)
		}
		for r := range adaptertest.Reasons(b) {
			if r != batch.ReasonQualityControl {
				t.Errorf("%s: unexpected rejection reason %s", p.StationID, r)
			}
		}
		qc += len(b.Rejections)
		last := time.Time{}
		for _, o := range b.Observations {
			rows++
			if o.Time.Minute() != 53 || o.Time.Before(from) || !o.Time.Before(to) {
				t.Fatalf("observation at %s: want :53 past the hour inside the window", o.Time)
			}
			if o.Time.After(last) {
				last = o.Time
			}
			if v, ok := adaptertest.Value(o, canon.AirTemperatureC); ok {
				temps = append(temps, v)
			}
		}
		if last.Before(cfg.QuietAfter) {
			quiet++
		}
	}
	if quiet == 0 || quiet > 10 || nulls == 0 || qc == 0 || rows < 2500 {
		t.Errorf("quiet stations %d, nulls %d, QC rejections %d, rows %d", quiet, nulls, qc, rows)
	}
	lo, hi := temps[0], temps[0]
	for _, v := range temps {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo < -5 || hi > 48 || hi-lo < 10 {
		t.Errorf("July temperatures span %v..%v °C: want a plausible summer range with a diurnal cycle", lo, hi)
	}
}

func TestSimulateDeterministic(t *testing.T) {
	t.Parallel()
	cfg := observation.SimConfig{Seed: 9, Stations: 3}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	a, err := Adapter().Simulator.Simulate(cfg, t0, t0.Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Adapter().Simulator.Simulate(cfg, t0, t0.Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if !bytes.Equal(a[i].Body, b[i].Body) {
			t.Fatal("same config and window gave different bytes")
		}
	}
	if _, err := Adapter().Simulator.Simulate(cfg, t0, t0); err == nil {
		t.Error("empty window: want an error")
	}
}

// BenchmarkSimulate7Days: 7 days of 48 stations written, and written plus parsed back.
func BenchmarkSimulate7Days(b *testing.B) { adaptertest.BenchSimulate7Days(b, Adapter()) }
