package ndbc

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
	"github.com/sensorgate/sensorgate/services/observation"
)

func TestSimulate(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 11, 14, 0, 0, 0, 0, time.UTC)
	to := from.Add(7 * 24 * time.Hour)
	cfg := observation.SimConfig{Seed: 7, Stations: 24, QuietFraction: 0.25, QuietAfter: from.Add(5 * 24 * time.Hour)}
	a := Adapter()
	payloads, err := a.Simulator.Simulate(cfg, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(payloads) != 24 {
		t.Fatalf("payloads = %d, want one per station (24)", len(payloads))
	}
	meta, err := a.Simulator.SimStations(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := a.Parse(meta[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(sb.Stations) != 24 || len(sb.Rejections) != 0 {
		t.Fatalf("simulated stations = %d (rejections %v), want 24", len(sb.Stations), sb.Rejections)
	}
	known := map[string]string{}
	for _, s := range sb.Stations {
		known[s.ExternalID] = s.SensorType
		// Synthetic stations sit off the US coasts (or on them, for C-MAN), never inland.
		if *s.Latitude < 15 || *s.Latitude > 50 || *s.Longitude < -165 || *s.Longitude > -60 {
			t.Errorf("station %s at %v,%v is outside US waters", s.ExternalID, *s.Latitude, *s.Longitude)
		}
	}
	quietLate, mm, waves, rows := 0, 0, 0, 0
	for _, p := range payloads {
		mm += bytes.Count(p.Body, []byte(" MM"))
		b, err := a.Parse(p)
		if err != nil {
			t.Fatalf("%s: %v", p.StationID, err)
		}
		adaptertest.CheckBatch(t, b)
		if len(b.Rejections) != 0 {
			t.Errorf("%s: rejections %v", p.StationID, adaptertest.Reasons(b))
		}
		typ, ok := known[p.StationID]
		if !ok {
			t.Fatalf("payload station %s is not in the simulated station list", p.StationID)
		}
		wantInterval := 600
		if typ == SensorTypeFixed {
			wantInterval = 3600
		}
		if b.Stations[0].ReportingIntervalS != wantInterval {
			t.Errorf("%s (%s) interval = %d, want %d", p.StationID, typ, b.Stations[0].ReportingIntervalS, wantInterval)
		}
		last := time.Time{}
		for _, o := range b.Observations {
			rows++
			if o.Time.Before(from) || !o.Time.Before(to) {
				t.Fatalf("%s: observation at %s outside the window", p.StationID, o.Time)
			}
			if o.Time.After(last) {
				last = o.Time
			}
			if _, ok := adaptertest.Value(o, canon.WaveHeightM); ok {
				waves++
			}
		}
		if last.Before(cfg.QuietAfter) {
			quietLate++
		}
	}
	if quietLate == 0 || quietLate > 12 {
		t.Errorf("stations quiet after %s = %d, want some but not most", cfg.QuietAfter, quietLate)
	}
	if mm == 0 || waves == 0 || rows < 15000 {
		t.Errorf("MM markers = %d, wave values = %d, rows = %d: want gaps, waves and ~7 days of rows", mm, waves, rows)
	}
}

func TestSimulateDeterministicAndOverlapping(t *testing.T) {
	t.Parallel()
	cfg := observation.SimConfig{Seed: 42, Stations: 5}
	t0 := time.Date(2026, 1, 1, 0, 3, 0, 0, time.UTC)
	a := Adapter()
	p1, err := a.Simulator.Simulate(cfg, t0, t0.Add(6*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := a.Simulator.Simulate(cfg, t0, t0.Add(6*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	p3, err := a.Simulator.Simulate(cfg, t0.Add(3*time.Hour), t0.Add(9*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i := range p1 {
		if !bytes.Equal(p1[i].Body, p2[i].Body) {
			t.Fatalf("station %s: same config and window gave different bytes", p1[i].StationID)
		}
	}
	// Rows present in both windows are identical, line for line.
	lines := map[string]bool{}
	for _, p := range p1 {
		for _, l := range strings.Split(string(p.Body), "\n") {
			lines[p.StationID+l] = true
		}
	}
	shared := 0
	for _, p := range p3 {
		for _, l := range strings.Split(string(p.Body), "\n") {
			if strings.HasPrefix(l, "#") || l == "" {
				continue
			}
			ts, _ := time.Parse("2006 01 02 15 04", l[:16])
			if ts.Before(t0.Add(6 * time.Hour)) {
				shared++
				if !lines[p.StationID+l] {
					t.Errorf("%s: overlapping row differs: %q", p.StationID, l)
				}
			}
		}
	}
	if shared == 0 {
		t.Fatal("no overlapping rows compared")
	}
	// Rows land on the 10-minute grid even when the window starts off it.
	b, err := a.Parse(p1[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range b.Observations {
		if o.Time.Before(t0) || o.Time.Minute()%10 != 0 || o.Time.Second() != 0 {
			t.Errorf("buoy row at %s is off the 10-minute grid or before the window", o.Time)
		}
	}
}

func TestSimulateBadConfig(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tests := []struct {
		name     string
		cfg      observation.SimConfig
		from, to time.Time
	}{
		{"reversed window", observation.SimConfig{}, now, now.Add(-time.Hour)},
		{"zero window", observation.SimConfig{}, time.Time{}, now},
		{"too many stations", observation.SimConfig{Stations: 1 << 20}, now.Add(-time.Hour), now},
		{"negative stations", observation.SimConfig{Stations: -1}, now.Add(-time.Hour), now},
		{"fraction above one", observation.SimConfig{QuietFraction: 2}, now.Add(-time.Hour), now},
		{"window too long", observation.SimConfig{}, now.Add(-10000 * time.Hour), now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Adapter().Simulator.Simulate(tt.cfg, tt.from, tt.to); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

// BenchmarkSimulate7Days: 7 days of 48 stations written, and written plus parsed back.
func BenchmarkSimulate7Days(b *testing.B) { adaptertest.BenchSimulate7Days(b, Adapter()) }

// BenchmarkParseStdmet41002 measures parsing the recorded 1440-row realtime2 file.
func BenchmarkParseStdmet41002(b *testing.B) {
	data := adaptertest.ProviderFile(b, "ndbc/41002.txt")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseStdmet("41002", data); err != nil {
			b.Fatal(err)
		}
	}
}
