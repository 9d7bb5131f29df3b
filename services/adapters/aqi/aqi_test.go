package aqi

import (
	"errors"
	"math"
	"testing"
)

func TestFromPM25(t *testing.T) {
	t.Parallel()
	tests := []struct {
		c    float64
		want int
	}{
		{0, 0},
		{4.5, 25},    // 50/9*4.5
		{9.0, 50},    // top of Good
		{9.04, 50},   // truncated to 9.0
		{9.1, 51},    // bottom of Moderate
		{12.0, 56},   // 49/26.3*2.9+51 = 56.4
		{35.4, 100},  // top of Moderate
		{35.49, 100}, // truncated to 35.4
		{35.5, 101},
		{55.4, 150},
		{55.5, 151},
		{100, 182}, // 49/69.9*44.5+151 = 182.19
		{125.4, 200},
		{125.5, 201},
		{225.4, 300},
		{225.5, 301},
		{325.4, 500},
		{600, 500}, // beyond the AQI
	}
	for _, tt := range tests {
		got, err := FromPM25(tt.c)
		if err != nil {
			t.Fatalf("FromPM25(%v): %v", tt.c, err)
		}
		if got != tt.want {
			t.Errorf("FromPM25(%v) = %d, want %d", tt.c, got, tt.want)
		}
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	for _, c := range []float64{-0.1, math.NaN(), math.Inf(1)} {
		if _, err := FromPM25(c); !errors.Is(err, ErrInvalid) {
			t.Errorf("FromPM25(%v) error = %v, want ErrInvalid", c, err)
		}
	}
	if _, err := CategoryOf(-1); !errors.Is(err, ErrInvalid) {
		t.Errorf("CategoryOf(-1) error = %v", err)
	}
}

func TestCategoryOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		aqi  int
		name string
	}{
		{0, "Good"}, {50, "Good"}, {51, "Moderate"}, {100, "Moderate"}, {101, "Unhealthy for Sensitive Groups"},
		{150, "Unhealthy for Sensitive Groups"}, {151, "Unhealthy"}, {200, "Unhealthy"}, {201, "Very Unhealthy"},
		{300, "Very Unhealthy"}, {301, "Hazardous"}, {500, "Hazardous"}, {812, "Hazardous"},
	}
	for _, tt := range tests {
		c, err := CategoryOf(tt.aqi)
		if err != nil || c.Name != tt.name || c.HealthMessage == "" || c.Advice == "" {
			t.Errorf("CategoryOf(%d) = %+v, %v; want %s with messages", tt.aqi, c, err, tt.name)
		}
	}
	cs := Categories()
	for i := 1; i < len(cs); i++ {
		if cs[i].Low != cs[i-1].High+1 {
			t.Errorf("categories %s and %s leave a gap", cs[i-1].Name, cs[i].Name)
		}
	}
}
