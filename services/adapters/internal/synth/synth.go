// Package synth is the deterministic synthetic world behind the provider simulators:
// every value is a pure function of (seed, station, time, channel), so any window can be
// regenerated on any tick and overlapping windows agree row for row.
package synth

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"github.com/sensorgate/sensorgate/services/observation"
)

// Limits that keep a misconfigured simulator from eating the machine.
const (
	MaxStations = 5000
	MaxWindow   = 400 * 24 * time.Hour
)

// ErrConfig marks an unusable simulator configuration or window.
var ErrConfig = errors.New("invalid simulator configuration")

// World is a validated SimConfig with its defaults applied.
type World struct {
	observation.SimConfig
}

// NewWorld applies defaults and validates cfg.
func NewWorld(cfg observation.SimConfig) (World, error) {
	if cfg.Stations == 0 {
		cfg.Stations = 12
	}
	if cfg.Stations < 0 || cfg.Stations > MaxStations {
		return World{}, fmt.Errorf("%w: Stations = %d, want 1..%d", ErrConfig, cfg.Stations, MaxStations)
	}
	for name, v := range map[string]float64{"QuietFraction": cfg.QuietFraction, "GapRate": cfg.GapRate, "MissingRate": cfg.MissingRate} {
		if math.IsNaN(v) || v > 1 {
			return World{}, fmt.Errorf("%w: %s = %v, want a fraction in 0..1", ErrConfig, name, v)
		}
	}
	if cfg.QuietFraction < 0 {
		return World{}, fmt.Errorf("%w: QuietFraction = %v, want a fraction in 0..1", ErrConfig, cfg.QuietFraction)
	}
	switch {
	case cfg.GapRate == 0:
		cfg.GapRate = 0.02
	case cfg.GapRate < 0:
		cfg.GapRate = 0
	}
	switch {
	case cfg.MissingRate == 0:
		cfg.MissingRate = 0.03
	case cfg.MissingRate < 0:
		cfg.MissingRate = 0
	}
	return World{cfg}, nil
}

// CheckWindow validates a simulation window.
func CheckWindow(from, to time.Time) error {
	switch {
	case from.IsZero() || to.IsZero():
		return fmt.Errorf("%w: window [%v, %v) has a zero bound", ErrConfig, from, to)
	case !to.After(from):
		return fmt.Errorf("%w: window end %s is not after its start %s", ErrConfig, to.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339))
	case to.Sub(from) > MaxWindow:
		return fmt.Errorf("%w: window of %s is longer than %s", ErrConfig, to.Sub(from), MaxWindow)
	}
	return nil
}

// Ticks returns the times t = k*cadence + offset (k integer, since the Unix epoch) with
// from <= t < to, so every window sees the same grid.
func Ticks(from, to time.Time, cadence, offset time.Duration) []time.Time {
	if cadence <= 0 || !to.After(from) {
		return nil
	}
	c := int64(cadence)
	start := from.UnixNano() - int64(offset)
	k := start / c
	if k*c < start {
		k++
	}
	var out []time.Time
	for t := time.Unix(0, k*c+int64(offset)).UTC(); t.Before(to); t = t.Add(cadence) {
		out = append(out, t)
	}
	return out
}

// Channel names a random stream, so that two uses of noise for one station never agree.
func Channel(name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return h.Sum64()
}

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Hash is a well-mixed 64-bit function of the world's seed and parts.
func (w World) Hash(parts ...uint64) uint64 {
	h := mix(uint64(w.Seed))
	for _, p := range parts {
		h = mix(h ^ p)
	}
	return h
}

// Unit is a uniform number in [0, 1) determined by parts.
func (w World) Unit(parts ...uint64) float64 {
	return float64(w.Hash(parts...)>>11) / float64(1<<53)
}

// Normal is a standard normal number determined by parts.
func (w World) Normal(parts ...uint64) float64 {
	u1 := w.Unit(append(parts, 1)...)
	u2 := w.Unit(append(parts, 2)...)
	if u1 < 1e-12 {
		u1 = 1e-12
	}
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// Smooth is value noise in about [-1, 1] that drifts slowly: knots every period, cosine
// interpolation between them, so consecutive readings are correlated like weather.
func (w World) Smooth(station int, channel uint64, t time.Time, period time.Duration) float64 {
	p := int64(period)
	n := t.UnixNano()
	k := n / p
	if n < 0 && n%p != 0 {
		k--
	}
	f := float64(n-k*p) / float64(p)
	a := w.Unit(uint64(station), channel, uint64(k))*2 - 1
	b := w.Unit(uint64(station), channel, uint64(k+1))*2 - 1
	mu := (1 - math.Cos(f*math.Pi)) / 2
	return a*(1-mu) + b*mu
}

// Diurnal is a daily cycle in [-1, 1] peaking at local solar hour peak (lon in degrees
// east decides local solar time).
func Diurnal(t time.Time, lon, peak float64) float64 {
	u := t.UTC()
	hour := float64(u.Hour()) + float64(u.Minute())/60 + float64(u.Second())/3600 + lon/15
	return math.Cos(2 * math.Pi * (hour - peak) / 24)
}

// Seasonal is a yearly cycle in [-1, 1] peaking near the end of July (northern summer).
func Seasonal(t time.Time) float64 {
	return math.Cos(2 * math.Pi * (float64(t.UTC().YearDay()) - 205) / 365.25)
}

// Quiet reports whether station i stops reporting at t.
func (w World) Quiet(i int, t time.Time) bool {
	if w.QuietFraction <= 0 || w.Unit(uint64(i), Channel("quiet")) >= w.QuietFraction {
		return false
	}
	return w.QuietAfter.IsZero() || !t.Before(w.QuietAfter)
}

// Gap reports whether station i's whole row at t is absent.
func (w World) Gap(i int, t time.Time) bool {
	return w.Unit(uint64(i), Channel("gap"), uint64(t.UnixNano())) < w.GapRate
}

// Missing reports whether one value (channel) of station i at t is the missing marker.
func (w World) Missing(i int, channel uint64, t time.Time) bool {
	return w.Unit(uint64(i), channel, Channel("missing"), uint64(t.UnixNano())) < w.MissingRate
}

// Round rounds v to digits decimals.
func Round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// Place is a named anchor position that synthetic stations are scattered around.
type Place struct {
	Name     string
	Lat, Lon float64
}

// Scatter returns a position within about radiusKm of anchor, fixed by station i.
func (w World) Scatter(i int, anchor Place, radiusKm float64) (lat, lon float64) {
	r := radiusKm * math.Sqrt(w.Unit(uint64(i), Channel("scatter-r")))
	th := 2 * math.Pi * w.Unit(uint64(i), Channel("scatter-th"))
	lat = anchor.Lat + r/111.0*math.Sin(th)
	lon = anchor.Lon + r/(111.0*math.Cos(anchor.Lat*math.Pi/180))*math.Cos(th)
	return Round(lat, 4), Round(lon, 4)
}

// At is a Place literal.
func At(name string, lat, lon float64) Place { return Place{Name: name, Lat: lat, Lon: lon} }

// place is the anchor's position. A provider's anchor type embeds Place to carry its own
// values beside it (an agency, a typical level) and so is an anchor too.
func (p Place) place() Place { return p }

// anchor is a Place or a struct that embeds one.
type anchor interface{ place() Place }

// Spread makes the world's stations: station i is scattered within radiusKm of anchor
// i mod len(anchors), so a world with more stations than anchors cycles through them
// again, and station makes the provider's station of i, its anchor and its position.
func Spread[A anchor, S any](w World, anchors []A, radiusKm float64, station func(i int, a A, lat, lon float64) S) []S {
	out := make([]S, w.Stations)
	for i := range out {
		a := anchors[i%len(anchors)]
		lat, lon := w.Scatter(i, a.place(), radiusKm)
		out[i] = station(i, a, lat, lon)
	}
	return out
}
