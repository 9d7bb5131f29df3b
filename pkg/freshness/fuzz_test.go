package freshness

import "testing"

// FuzzParseMaxAge: every max_age value parses to a duration in [0, MaxMaxAge] or an error
// wrapping ErrMaxAge, never a panic or an overflow.
func FuzzParseMaxAge(f *testing.F) {
	for _, s := range []string{"900", "PT15M", "P1DT6H", "PT90.5S", "P2W", "P1Y", "-1", "P99999999999999999999D", "PT", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseMaxAge(s)
		if err != nil {
			return
		}
		if d < 0 || d > MaxMaxAge {
			t.Fatalf("%q: %s", s, d)
		}
	})
}
