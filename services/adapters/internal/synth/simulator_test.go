package synth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/services/observation"
)

func TestSimulatorChecksConfigAndWindowOnceForEveryAdapter(t *testing.T) {
	var gotWorld World
	s := Simulator{
		Name: "demo",
		Stations: func(w World) ([]observation.Payload, error) {
			gotWorld = w
			return []observation.Payload{{Format: "demo.stations"}}, nil
		},
		Window: func(w World, from, to time.Time) ([]observation.Payload, error) {
			return []observation.Payload{{Format: "demo.data", StationID: from.Format(time.RFC3339)}}, nil
		},
	}
	if ps, err := s.SimStations(observation.SimConfig{Seed: 3}); err != nil || len(ps) != 1 || gotWorld.Stations != 12 || gotWorld.GapRate != 0.02 {
		t.Fatalf("SimStations: %v, %v; world %+v (want the defaults applied)", ps, err, gotWorld.SimConfig)
	}
	if _, err := s.SimStations(observation.SimConfig{Stations: -1}); !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), "demo: ") {
		t.Fatalf("bad config: %v, want ErrConfig named demo", err)
	}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if ps, err := s.Simulate(observation.SimConfig{}, t0, t0.Add(time.Hour)); err != nil || len(ps) != 1 || ps[0].StationID != "2026-11-01T00:00:00Z" {
		t.Fatalf("Simulate: %v, %v", ps, err)
	}
	if _, err := s.Simulate(observation.SimConfig{}, t0, t0); !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), "demo: ") {
		t.Fatalf("empty window: %v, want ErrConfig named demo", err)
	}
}

func TestReportingDropsQuietAndGapTicksNewestFirst(t *testing.T) {
	w, err := NewWorld(observation.SimConfig{Seed: 9, Stations: 4, GapRate: 0.3, QuietFraction: 1,
		QuietAfter: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	ticks := Ticks(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC), time.Hour, 0)
	got := w.Reporting(1, ticks)
	var want []time.Time
	for k := len(ticks) - 1; k >= 0; k-- {
		if t := ticks[k]; !w.Quiet(1, t) && !w.Gap(1, t) {
			want = append(want, t)
		}
	}
	if len(got) == 0 || len(got) != len(want) || len(got) >= 12 {
		t.Fatalf("Reporting kept %d of %d ticks, want the %d before the station went quiet and not gapped", len(got), len(ticks), len(want))
	}
	for i := range got {
		if !got[i].Equal(want[i]) || (i > 0 && !got[i].Before(got[i-1])) {
			t.Fatalf("Reporting[%d] = %s, want %s, newest first", i, got[i], want[i])
		}
	}
}
