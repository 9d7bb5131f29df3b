package canon

import (
	"errors"
	"testing"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		param string
		value float64
		unit  string
		want  float64
		err   error
	}{
		{AirTemperatureC, 22.8, "wmoUnit:degC", 22.8, nil},
		{AirTemperatureC, 41.0, "degF", 5, nil},
		{WindSpeedMS, 36, "wmoUnit:km_h-1", 10, nil},
		{WindSpeedMS, 10, "mph", 4.4704, nil},
		{WindSpeedMS, 10, "kt", 5.1444, nil},
		{AirPressureHPa, 101830, "wmoUnit:Pa", 1018.3, nil},
		{AirPressureHPa, 30.08, "inHg", 1018.6257, nil},
		{OzonePPB, 0.041, "ppm", 41, nil},
		{PM25, 12.3, "UG/M3", 12.3, nil},
		{PM25, 12.3, "µg/m³", 12.3, nil},
		{WindDirectionDeg, 140, "wmoUnit:degree_(angle)", 140, nil},
		{RelativeHumidityPercent, 80.5, "wmoUnit:percent", 80.5, nil},
		{PM25, -4.2, "µg/m³", 0, ErrOutOfRange},
		{AirTemperatureC, 999.0, "degC", 0, ErrOutOfRange},
		{AirTemperatureC, 20, "furlongs", 0, ErrUnknownUnit},
		{"snowfall", 1, "m", 0, ErrUnknownParameter},
	}
	for _, tt := range tests {
		got, err := Normalize(tt.param, tt.value, tt.unit)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("Normalize(%s, %v, %q) error = %v, want %v", tt.param, tt.value, tt.unit, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Normalize(%s, %v, %q): %v", tt.param, tt.value, tt.unit, err)
			continue
		}
		if got.Value != tt.want || got.UnitOriginal != tt.unit || got.ValueOriginal != tt.value {
			t.Errorf("Normalize(%s, %v, %q) = %+v, want value %v", tt.param, tt.value, tt.unit, got, tt.want)
		}
	}
}
