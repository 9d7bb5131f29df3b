package airnow

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
	a := Adapter()
	cfg := observation.SimConfig{Seed: 4, Stations: 20, QuietFraction: 0.2, QuietAfter: time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC)}
	meta, err := a.Simulator.SimStations(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := a.Parse(meta[0])
	if err != nil || len(sb.Stations) != 20 {
		t.Fatalf("stations %d, %v", len(sb.Stations), err)
	}
	from := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	ps, err := a.Simulator.Simulate(cfg, from, from.Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 48 {
		t.Fatalf("payloads = %d, want one per hour", len(ps))
	}
	firstSites, lastSites, missing := 0, 0, 0
	for k, p := range ps {
		b, err := a.Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		adaptertest.CheckBatch(t, b)
		missing += adaptertest.Reasons(b)[batch.ReasonMissingSentinel]
		for _, o := range b.Observations {
			if _, ok := adaptertest.Value(o, canon.AQI); !ok {
				t.Fatalf("%s: no AQI", o.StationID)
			}
		}
		switch k {
		case 0:
			firstSites = len(b.Stations)
		case len(ps) - 1:
			lastSites = len(b.Stations)
		}
	}
	if lastSites >= firstSites || missing == 0 {
		t.Errorf("sites first hour %d, last hour %d, missing values %d", firstSites, lastSites, missing)
	}
	again, _ := a.Simulator.Simulate(cfg, from, from.Add(48*time.Hour))
	for i := range ps {
		if !bytes.Equal(ps[i].Body, again[i].Body) {
			t.Fatal("not deterministic")
		}
	}
}
