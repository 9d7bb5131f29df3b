package meteo

import (
	"math"
	"testing"
)

// Expected values are read from the NWS heat index chart and wind chill chart
// (https://www.weather.gov/safety/heat-index, https://www.weather.gov/safety/cold-wind-chill-chart),
// which print whole °F.
func TestHeatIndexF(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tF, rh, want float64
	}{
		{90, 50, 95},
		{96, 65, 121},
		{80, 40, 80},
		{100, 40, 109},
		{86, 90, 105}, // high-humidity adjustment range
		{70, 50, 69},  // simple formula below 80 °F
	}
	for _, c := range cases {
		got := HeatIndexF(c.tF, c.rh)
		if math.Abs(got-c.want) > 1.0 {
			t.Errorf("HeatIndexF(%v, %v) = %.2f, want %v ±1", c.tF, c.rh, got, c.want)
		}
	}
}

// The NWS adjustments: below 13 % humidity between 80 and 112 °F the regression is lowered,
// above 85 % between 80 and 87 °F raised, by the amounts of the NWS equation page.
func TestHeatIndexAdjustments(t *testing.T) {
	t.Parallel()
	rothfusz := func(t, r float64) float64 {
		return -42.379 + 2.04901523*t + 10.14333127*r - 0.22475541*t*r - 0.00683783*t*t -
			0.05481717*r*r + 0.00122874*t*t*r + 0.00085282*t*r*r - 0.00000199*t*t*r*r
	}
	cases := []struct {
		name         string
		tF, rh, diff float64
	}{
		{"dry", 104, 10, -0.75 * math.Sqrt(8.0/17)},
		{"humid", 85, 95, 1.0 * 0.4},
		{"neither", 95, 50, 0},
	}
	for _, c := range cases {
		got := HeatIndexF(c.tF, c.rh) - rothfusz(c.tF, c.rh)
		if math.Abs(got-c.diff) > 1e-9 {
			t.Errorf("%s: adjustment at (%v, %v) = %.4f, want %.4f", c.name, c.tF, c.rh, got, c.diff)
		}
	}
}

func TestWindChillF(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tF, mph, want float64
	}{
		{0, 15, -19},
		{30, 10, 21},
		{40, 5, 36},
		{-20, 60, -62},
		{10, 25, -11},
	}
	for _, c := range cases {
		got := WindChillF(c.tF, c.mph)
		if math.Abs(got-c.want) > 0.6 {
			t.Errorf("WindChillF(%v, %v) = %.2f, want %v", c.tF, c.mph, got, c.want)
		}
	}
}

func TestFeelsLikeC(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	cases := []struct {
		name         string
		tC, wind, rh float64
		want         float64
		method       string
	}{
		{"cold and windy uses wind chill", FToC(0), 15 * 0.44704, 50, FToC(-19.4), MethodWindChill},
		{"cold and calm is the air", FToC(30), 1, 50, FToC(30), MethodAirTemperature},
		{"cold wind unknown is the air", FToC(30), nan, 50, FToC(30), MethodAirTemperature},
		{"hot and humid uses heat index", FToC(90), 2, 50, FToC(94.6), MethodHeatIndex},
		{"hot humidity unknown is the air", FToC(90), 2, nan, FToC(90), MethodAirTemperature},
		{"mild is the air", 18, 10, 60, 18, MethodAirTemperature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, m := FeelsLikeC(c.tC, c.wind, c.rh)
			if m != c.method || math.Abs(got-c.want) > 0.2 {
				t.Errorf("FeelsLikeC(%v, %v, %v) = %.2f %s, want %.2f %s", c.tC, c.wind, c.rh, got, m, c.want, c.method)
			}
		})
	}
}

func TestDewPointC(t *testing.T) {
	t.Parallel()
	// Reference values from the NWS dew point calculator.
	cases := []struct{ tC, rh, want float64 }{
		{25, 60, 16.7},
		{10, 100, 10},
		{30, 30, 10.5},
		{0, 80, -3.0},
	}
	for _, c := range cases {
		if got := DewPointC(c.tC, c.rh); math.Abs(got-c.want) > 0.2 {
			t.Errorf("DewPointC(%v, %v) = %.2f, want %v", c.tC, c.rh, got, c.want)
		}
	}
}

func TestCardinal(t *testing.T) {
	t.Parallel()
	cases := map[float64]string{0: "N", 11.2: "N", 11.25: "NNE", 45: "NE", 90: "E", 180: "S", 247.5: "WSW", 348.75: "N", 359.9: "N", 360: "N", -90: "W"}
	for deg, want := range cases {
		if got := Cardinal(deg); got != want {
			t.Errorf("Cardinal(%v) = %s, want %s", deg, got, want)
		}
	}
}

func TestBeaufort(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ms   float64
		want int
		name string
	}{
		{0, 0, "calm"}, {0.49, 0, "calm"}, {0.5, 1, "light air"}, {3.3, 2, "light breeze"},
		{5.4, 3, "gentle breeze"}, {10.7, 5, "fresh breeze"}, {17.2, 8, "gale"}, {32.7, 12, "hurricane force"}, {60, 12, "hurricane force"},
	}
	for _, c := range cases {
		if got := Beaufort(c.ms); got.Number != c.want || got.Description != c.name {
			t.Errorf("Beaufort(%v) = %+v, want %d %s", c.ms, got, c.want, c.name)
		}
	}
}

func TestDouglasSeaState(t *testing.T) {
	t.Parallel()
	cases := []struct {
		h    float64
		want int
	}{
		{0, 0}, {0.05, 1}, {0.1, 1}, {0.3, 2}, {1.0, 3}, {1.25, 3}, {1.3, 4}, {3, 5}, {5, 6}, {7, 7}, {10, 8}, {15, 9},
	}
	for _, c := range cases {
		if got := DouglasSeaState(c.h); got.Number != c.want {
			t.Errorf("DouglasSeaState(%v) = %+v, want %d", c.h, got, c.want)
		}
	}
}

func TestPressureTendency(t *testing.T) {
	t.Parallel()
	cases := map[float64]string{
		0: "steady", 0.04: "steady", -0.04: "steady", 0.1: "rising_slowly", -1.5: "falling_slowly",
		2: "rising", -3.5: "falling", 4: "rising_quickly", -6: "falling_quickly", 6.1: "rising_very_rapidly", -9: "falling_very_rapidly",
	}
	for d, want := range cases {
		if got := PressureTendency(d); got != want {
			t.Errorf("PressureTendency(%v) = %s, want %s", d, got, want)
		}
	}
}

func TestConversions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		got, want float64
	}{
		{"CToF", CToF(100), 212},
		{"FToC", FToC(32), 0},
		{"MSToMPH", MSToMPH(0.44704), 1},
		{"MSToKnots", MSToKnots(1852.0 / 3600), 1},
		{"MSToKMH", MSToKMH(10), 36},
		{"MToFt", MToFt(0.3048), 1},
		{"Round", Round(1.23456, 2), 1.23},
	}
	for _, c := range cases {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}
