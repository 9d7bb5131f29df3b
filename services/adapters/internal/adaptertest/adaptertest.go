// Package adaptertest holds what every adapter's tests need: finding the shared recorded
// provider payloads (failing when they are absent: they are part of the repository) and checking the invariants
// every batch must keep.
package adaptertest

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/internal/providerdata"
	"github.com/sensorgate/sensorgate/services/observation"
)

// EnvProviderData overrides where the recorded provider payloads are.
const EnvProviderData = providerdata.EnvDir

// ProviderDir returns the shared providers folder, "" when absent (see providerdata.Dir).
func ProviderDir() string { return providerdata.Dir() }

// ProviderFile reads rel (e.g. "ndbc/41002.txt") from the recorded providers folder. The
// payloads are part of the repository, so a missing one fails the test (it never skips).
func ProviderFile(tb testing.TB, rel string) []byte {
	tb.Helper()
	dir := ProviderDir()
	if dir == "" {
		tb.Fatalf("recorded provider payloads not found (testdata/providers at the repository root, or %s); needed for %s", EnvProviderData, rel)
	}
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		tb.Fatalf("recorded provider payload %s: %v", rel, err)
	}
	return b
}

// Testdata reads a fixture from the package's testdata folder; it must exist.
func Testdata(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatalf("fixture: %v", err)
	}
	return b
}

// CheckBatch fails the test when b breaks an invariant: every measurement has a canonical
// id and unit and a finite value inside canon's range, every observation has a station, a
// time and a raw fragment that is a JSON object, every rejection a reason.
func CheckBatch(tb testing.TB, b observation.Batch) {
	tb.Helper()
	for i, o := range b.Observations {
		if u := o.Time.Unix(); o.StationID == "" || u < batch.MinUnix || u >= batch.MaxUnix {
			tb.Fatalf("observation %d has no station or time: %+v", i, o)
		}
		if len(o.Measurements) == 0 {
			tb.Fatalf("observation %d of %s has no measurements", i, o.StationID)
		}
		// One JSON object, its values undecoded: raw is the provider's payload as sent,
		// and valid JSON may hold numbers beyond float64 (1e999; found by FuzzParseV3),
		// which nothing downstream decodes as numbers.
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(o.Raw, &obj); err != nil || obj == nil {
			tb.Fatalf("observation %d of %s: raw is not a JSON object: %v (%q)", i, o.StationID, err, o.Raw)
		}
		if o.RawFormat == "" {
			tb.Fatalf("observation %d of %s has no raw format", i, o.StationID)
		}
		if (o.Lat == nil) != (o.Lon == nil) {
			tb.Fatalf("observation %d of %s has half a position", i, o.StationID)
		}
		if o.Lat != nil && (*o.Lat < -90 || *o.Lat > 90 || *o.Lon < -180 || *o.Lon > 180) {
			tb.Fatalf("observation %d of %s has position %v,%v out of range", i, o.StationID, *o.Lat, *o.Lon)
		}
		for _, m := range o.Measurements {
			p, ok := canon.Lookup(m.Parameter)
			if !ok {
				tb.Fatalf("observation %d of %s: unknown parameter %q", i, o.StationID, m.Parameter)
			}
			if sf := canon.SourceField(o.RawFormat, m.Parameter); sf == "" || (m.SourceField != "" && !canon.KnownSourceField(o.RawFormat, m.Parameter, m.SourceField)) {
				tb.Fatalf("observation %d of %s (%s): %s from field %q, but canon's lineage table says %q", i, o.StationID, o.RawFormat, m.Parameter, m.SourceField, sf)
			}
			// Lineage: the rule lineage=true names, applied to the source value, gives the
			// stored value (canon's tests check each rule's formula text against its function).
			for _, c := range canon.Lineage(o.Measurements, o.RawFormat) {
				if c.SourceField == "" || c.Rule == "" {
					tb.Fatalf("observation %d of %s (%s): lineage %+v names no field or rule", i, o.StationID, o.RawFormat, c)
				}
			}
			if r, ok := canon.RuleFor(m.Parameter, m.UnitOriginal); ok && canon.SourceField(o.RawFormat, m.Parameter) != "" {
				if v := math.Round(r.Apply(m.ValueOriginal)*1e4) / 1e4; v != m.Value {
					tb.Fatalf("observation %d of %s: %s rule %s(%v) = %v, stored %v", i, o.StationID, m.Parameter, r.Name, m.ValueOriginal, v, m.Value)
				}
			} else if c := canon.Lineage([]canon.Measurement{m}, o.RawFormat)[0]; c.Rule != canon.ComputedAQIPM25 {
				tb.Fatalf("observation %d of %s: %s has no conversion rule (%+v)", i, o.StationID, m.Parameter, c)
			}
			if m.Unit != p.Unit {
				tb.Fatalf("observation %d of %s: %s unit %q, want %q", i, o.StationID, m.Parameter, m.Unit, p.Unit)
			}
			if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || m.Value < p.Min || m.Value > p.Max {
				tb.Fatalf("observation %d of %s: %s = %v outside %v..%v", i, o.StationID, m.Parameter, m.Value, p.Min, p.Max)
			}
		}
	}
	for i, r := range b.Rejections {
		if r.Reason == "" {
			tb.Fatalf("rejection %d has no reason: %+v", i, r)
		}
	}
	for i, s := range b.Stations {
		if s.ExternalID == "" || s.ProviderSlug == "" || s.FeedSlug == "" {
			tb.Fatalf("station %d lacks id, provider or feed: %+v", i, s)
		}
	}
}

// Reasons counts rejections by reason.
func Reasons(b observation.Batch) map[string]int {
	out := map[string]int{}
	for _, r := range b.Rejections {
		out[r.Reason]++
	}
	return out
}

// Value returns the value of parameter in o, and whether o has it.
func Value(o observation.Observation, parameter string) (float64, bool) {
	for _, m := range o.Measurements {
		if m.Parameter == parameter {
			return m.Value, true
		}
	}
	return 0, false
}

// CheckCounts checks b's invariants (CheckBatch), then that it holds obs observations and
// exactly the rejections counted in reasons.
func CheckCounts(tb testing.TB, b observation.Batch, obs int, reasons map[string]int) {
	tb.Helper()
	CheckBatch(tb, b)
	if len(b.Observations) != obs {
		tb.Errorf("observations = %d, want %d", len(b.Observations), obs)
	}
	got := Reasons(b)
	if len(got) != len(reasons) {
		tb.Errorf("rejections = %v, want %v", got, reasons)
	}
	for r, n := range reasons {
		if got[r] != n {
			tb.Errorf("rejections[%s] = %d, want %d (all %v)", r, got[r], n, got)
		}
	}
}

// BenchSimulate7Days measures writing 7 days of 48 stations in a's native format, and
// writing plus parsing them back as the runtime does.
func BenchSimulate7Days(b *testing.B, a observation.Adapter) {
	cfg := observation.SimConfig{Seed: 1, Stations: 48}
	to := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	from := to.Add(-7 * 24 * time.Hour)
	b.Run("simulate", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.Simulator.Simulate(cfg, from, to); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("simulate+parse", func(b *testing.B) {
		for b.Loop() {
			ps, err := a.Simulator.Simulate(cfg, from, to)
			if err != nil {
				b.Fatal(err)
			}
			for _, p := range ps {
				if _, err := a.Parse(p); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
