package synth

import (
	"fmt"
	"time"

	"github.com/sensorgate/sensorgate/services/observation"
)

// Simulator is an adapter's observation.Simulator declared as two functions of a validated
// World, so that building the world from a SimConfig, checking the window and naming the
// adapter in those errors are written once for every simulator.
type Simulator struct {
	// Name prefixes configuration and window errors (the adapter's package name).
	Name string
	// Stations writes the station metadata payload(s) of w's synthetic stations.
	Stations func(w World) ([]observation.Payload, error)
	// Window writes the payloads holding every synthetic reading with a timestamp in
	// [from, to); the window has been checked.
	Window func(w World, from, to time.Time) ([]observation.Payload, error)
}

var _ observation.Simulator = Simulator{}

// SimStations implements observation.Simulator.
func (s Simulator) SimStations(cfg observation.SimConfig) ([]observation.Payload, error) {
	w, err := NewWorld(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	return s.Stations(w)
}

// Simulate implements observation.Simulator.
func (s Simulator) Simulate(cfg observation.SimConfig, from, to time.Time) ([]observation.Payload, error) {
	w, err := NewWorld(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	if err := CheckWindow(from, to); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	return s.Window(w, from, to)
}

// Reporting returns the ticks at which station i reports (it is not quiet and its row is
// not a gap), newest first, as most providers write their rows.
func (w World) Reporting(i int, ticks []time.Time) []time.Time {
	out := make([]time.Time, 0, len(ticks))
	for k := len(ticks) - 1; k >= 0; k-- {
		if t := ticks[k]; !w.Quiet(i, t) && !w.Gap(i, t) {
			out = append(out, t)
		}
	}
	return out
}
