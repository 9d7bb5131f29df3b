package store

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/canon"
)

// The hand-written encoder must give the bytes encoding/json gives, or stored readings
// would change with the code path that wrote them.
func TestMeasEncoderMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	values := []float64{0, -0.5, 1, 12.3456, 1015.2, 1e-7, 3.2e-12, 1e21, 123456789.125, -273.15, math.SmallestNonzeroFloat64, 99999.9999, 0.1 + 0.2}
	units := []string{"degC", "µg/m³", "wmoUnit:km_h-1", `we"ird<&>`, "", "m/s"}
	e := newMeasEncoder()
	for i, v := range values {
		ms := []canon.Measurement{
			{Parameter: canon.PM25, Value: v, Unit: canon.UgPerM3, UnitOriginal: units[i%len(units)], ValueOriginal: -v},
			{Parameter: canon.AirTemperatureC, Value: v / 3, Unit: canon.Celsius, UnitOriginal: units[(i+1)%len(units)], ValueOriginal: v * 7},
		}
		want, _ := json.Marshal(ms)
		got, err := e.encode(nil, ms)
		if err != nil || string(got) != string(want) {
			t.Fatalf("value %g:\n got %s (%v)\nwant %s", v, got, err, want)
		}
	}
	for _, ms := range [][]canon.Measurement{nil, {}} {
		got, _ := e.encode(nil, ms)
		if string(got) != "[]" {
			t.Fatalf("empty: %s", got)
		}
	}
	if _, err := e.encode(nil, []canon.Measurement{{Value: math.NaN()}}); err == nil {
		t.Fatal("NaN encoded without error")
	}
}
