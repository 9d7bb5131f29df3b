package canon

import (
	"math"
	"testing"

	"github.com/expr-lang/expr"
)

// evalFormula evaluates a rule's formula text with an expression engine, so that the text
// shown to users is checked against the conversion that runs.
func evalFormula(t *testing.T, formula string, x float64) float64 {
	t.Helper()
	prog, err := expr.Compile(formula, expr.Env(map[string]any{"x": 0.0}), expr.AsFloat64())
	if err != nil {
		t.Fatalf("formula %q: %v", formula, err)
	}
	out, err := expr.Run(prog, map[string]any{"x": x})
	if err != nil {
		t.Fatalf("formula %q at %v: %v", formula, x, err)
	}
	return out.(float64)
}

// TestRuleFormulasAreTheConversions evaluates every rule's formula text at several source
// values and compares it with the function Normalize applies.
func TestRuleFormulasAreTheConversions(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, r := range Rules() {
		if r.Name != Identity && names[r.Name] {
			t.Errorf("rule name %s used twice", r.Name)
		}
		names[r.Name] = true
		for _, x := range []float64{-40, -1.5, 0, 0.016, 1, 29.92, 73.3, 1013.25, 101870} {
			want := r.Apply(x)
			if got := evalFormula(t, r.Formula, x); math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("%s: formula %q at %v = %v, conversion gives %v", r.Name, r.Formula, x, got, want)
			}
		}
	}
	// The ozone rule names its reference temperature, with the 20 °C factor.
	r, ok := RuleFor(OzonePPB, "µg/m³")
	if !ok || r.Name != "ozone_ug_per_m3_to_ppb_20c" || r.Formula != "x / 1.9957" {
		t.Errorf("ozone rule = %+v", r)
	}
}

// TestLineage: the conversion of each measurement names its rule, and its formula applied to
// its source value gives the stored value (rounded as Normalize rounds).
func TestLineage(t *testing.T) {
	t.Parallel()
	mk := func(p string, v float64, u string) Measurement {
		m, err := Normalize(p, v, u)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ms := []Measurement{mk(AirTemperatureC, 71.6, "degF"), mk(AirPressureHPa, 30.38, "inHg"), mk(RelativeHumidityPercent, 49, "percent")}
	got := Lineage(ms, "ambient.record")
	want := []Conversion{
		{"fahrenheit_to_celsius", "(x - 32) * 5 / 9", "tempf", 71.6, "degF"},
		{"inhg_to_hpa", "x * 33.8638866667", "baromrelin", 30.38, "inHg"},
		{Identity, "x", "humidity", 49, "percent"},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("lineage %d = %+v, want %+v", i, got[i], want[i])
		}
		if v := round(evalFormula(t, got[i].Formula, got[i].SourceValue), 4); v != ms[i].Value {
			t.Errorf("%s applied to %v = %v, stored %v", got[i].Formula, got[i].SourceValue, v, ms[i].Value)
		}
	}
	// OpenAQ's AQI is computed from the reading's PM2.5.
	pm := mk(PM25, 12.3, "µg/m³")
	a := mk(AQI, 57, "aqi")
	l := Lineage([]Measurement{pm, a}, "openaq.v1.latest")
	if l[1].Rule != ComputedAQIPM25 || l[1].SourceField != "pm25" || l[1].SourceValue != 12.3 || l[1].SourceUnit != UgPerM3 {
		t.Errorf("computed AQI lineage = %+v", l[1])
	}
	if SourceField("coops.datagetter.water_temperature", WaterTemperatureC) != "v" || SourceField("nope", AQI) != "" {
		t.Error("source field lookup by prefix")
	}
}
