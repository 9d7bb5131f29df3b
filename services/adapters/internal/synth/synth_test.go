package synth

import (
	"math"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/services/observation"
)

func TestTicks(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	tests := []struct {
		name            string
		from, to        time.Time
		cadence, offset time.Duration
		first           string
		n               int
	}{
		{"aligned start", at("2026-01-01T00:00:00Z"), at("2026-01-01T01:00:00Z"), 10 * time.Minute, 0, "2026-01-01T00:00:00Z", 6},
		{"unaligned start", at("2026-01-01T00:03:00Z"), at("2026-01-01T01:00:00Z"), 10 * time.Minute, 0, "2026-01-01T00:10:00Z", 5},
		{"offset :53", at("2026-01-01T00:00:00Z"), at("2026-01-01T03:00:00Z"), time.Hour, 53 * time.Minute, "2026-01-01T00:53:00Z", 3},
		{"end exclusive", at("2026-01-01T00:00:00Z"), at("2026-01-01T00:10:00Z"), 10 * time.Minute, 0, "2026-01-01T00:00:00Z", 1},
		{"empty", at("2026-01-01T00:01:00Z"), at("2026-01-01T00:09:00Z"), 10 * time.Minute, 0, "", 0},
	}
	for _, tt := range tests {
		got := Ticks(tt.from, tt.to, tt.cadence, tt.offset)
		if len(got) != tt.n || (tt.n > 0 && got[0].Format(time.RFC3339) != tt.first) {
			t.Errorf("%s: Ticks = %v, want %d from %s", tt.name, got, tt.n, tt.first)
		}
	}
}

func TestWorldDeterministicAndBounded(t *testing.T) {
	t.Parallel()
	w, err := NewWorld(observation.SimConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	w2, _ := NewWorld(observation.SimConfig{Seed: 2})
	at := time.Date(2026, 5, 5, 12, 34, 0, 0, time.UTC)
	if w.Unit(1, 2, 3) != w.Unit(1, 2, 3) || w.Unit(1, 2, 3) == w2.Unit(1, 2, 3) || w.Unit(1, 2, 3) == w.Unit(1, 2, 4) {
		t.Error("Unit must depend on seed and parts, and only on them")
	}
	sum, n := 0.0, 20000
	for i := range n {
		u := w.Unit(uint64(i))
		if u < 0 || u >= 1 {
			t.Fatalf("Unit = %v outside [0, 1)", u)
		}
		sum += u
		s := w.Smooth(i%7, Channel("x"), at.Add(time.Duration(i)*time.Minute), time.Hour)
		if s < -1 || s > 1 || math.IsNaN(s) {
			t.Fatalf("Smooth = %v", s)
		}
	}
	if m := sum / float64(n); m < 0.48 || m > 0.52 {
		t.Errorf("mean of Unit = %v, want about 0.5", m)
	}
	// Smooth drifts: a minute apart the values are close.
	a, b := w.Smooth(3, 9, at, 6*time.Hour), w.Smooth(3, 9, at.Add(time.Minute), 6*time.Hour)
	if math.Abs(a-b) > 0.02 {
		t.Errorf("Smooth jumps %v -> %v in a minute", a, b)
	}
	if d := Diurnal(time.Date(2026, 1, 1, 15, 0, 0, 0, time.UTC), 0, 15); d != 1 {
		t.Errorf("Diurnal at its peak = %v", d)
	}
}

func TestNewWorldDefaultsAndErrors(t *testing.T) {
	t.Parallel()
	w, err := NewWorld(observation.SimConfig{})
	if err != nil || w.Stations != 12 || w.GapRate != 0.02 || w.MissingRate != 0.03 {
		t.Errorf("defaults = %+v, %v", w, err)
	}
	w, err = NewWorld(observation.SimConfig{GapRate: -1, MissingRate: -1})
	if err != nil || w.GapRate != 0 || w.MissingRate != 0 {
		t.Errorf("negative rates mean none: %+v, %v", w, err)
	}
	for _, cfg := range []observation.SimConfig{{Stations: -1}, {Stations: MaxStations + 1}, {QuietFraction: 1.5}, {QuietFraction: -0.1}, {GapRate: math.NaN()}} {
		if _, err := NewWorld(cfg); err == nil {
			t.Errorf("NewWorld(%+v): want an error", cfg)
		}
	}
}

func TestQuiet(t *testing.T) {
	t.Parallel()
	after := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	w, _ := NewWorld(observation.SimConfig{Stations: 200, QuietFraction: 0.25, QuietAfter: after})
	quiet := 0
	for i := range 200 {
		if w.Quiet(i, after.Add(-time.Minute)) {
			t.Fatalf("station %d quiet before QuietAfter", i)
		}
		if w.Quiet(i, after) {
			quiet++
		}
	}
	if quiet < 30 || quiet > 70 {
		t.Errorf("quiet stations = %d of 200, want about 50", quiet)
	}
}
