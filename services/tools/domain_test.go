package tools_test

import (
	"math"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/services/tools"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestSeaState(t *testing.T) {
	t.Parallel()
	cs := sdkSession(t, serve(t, "ocean", oceanFixture(t)...))

	var out tools.SeaState
	res := call(t, cs, "ocean.sea_state", nil, map[string]any{"sensor_external_id": "41002"}, &out)
	if res.IsError {
		t.Fatal(text(res))
	}
	checks := []struct {
		what string
		ok   bool
	}{
		{"latest reading 11:50, 600 s old, fresh", out.Latest.Timestamp == "2026-11-21T11:50:00.000Z" && out.Latest.AgeSeconds == 600 && !out.Latest.Stale},
		// Waves are hourly: the newest is at 10:50, 4200 s old, beyond 2*600 s.
		{"wave height from its own hour", out.WaveHeight != nil && out.WaveHeight.Value == 1.8 && out.WaveHeight.Unit == "m" &&
			out.WaveHeight.ObservedAt == "2026-11-21T10:50:00.000Z" && out.WaveHeight.AgeSeconds == 4200 && out.WaveHeight.Stale},
		{"wave height in feet", out.WaveHeightFt != nil && *out.WaveHeightFt == 5.9},
		{"Douglas 4 moderate", out.SeaState != nil && out.SeaState.Number == 4 && out.SeaState.Description == "moderate"},
		{"water temperature", out.WaterTemperature != nil && out.WaterTemperature.Value == 24.1 && out.WaterTemperature.Unit == "celsius"},
		{"wind 7 m/s from SW, Beaufort 4", out.Wind != nil && out.Wind.Speed.Value == 7 && out.Wind.Speed.Unit == "m/s" && out.Wind.From == "SW" &&
			out.Wind.Beaufort.Number == 4 && out.Wind.SpeedKnots == 13.6},
		{"pressure falling slowly 1.5 hPa / 3 h", out.Pressure != nil && out.Pressure.Value == 1010 && out.Pressure.Unit == "hPa" && out.Pressure.Trend != nil &&
			out.Pressure.Trend.Tendency == "falling_slowly" && out.Pressure.Trend.Change3hHPa == -1.5 && out.Pressure.Trend.SpanMinutes == 180},
		{"nothing missing", len(out.Missing) == 0},
		{"provenance", out.Provenance.SourceID == "41002" && out.Provenance.Provider == "ndbc" && out.Provenance.SensorID == out.Station.SensorID},
		{"text names the sea state and trend", strings.Contains(text(res), "Moderate sea") && strings.Contains(text(res), "falling slowly")},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: got %+v\n%s", c.what, out, text(res))
		}
	}

	// TPLM2 has no waves and no air temperature; its pressure is steady.
	var tp tools.SeaState
	res = call(t, cs, "ocean.sea_state", map[string]any{"station_id": "tplm2"}, nil, &tp)
	if res.IsError {
		t.Fatal(text(res))
	}
	if tp.WaveHeight != nil || tp.SeaState != nil || strings.Join(tp.Missing, ",") != "air_temperature_c,wave_height_m" ||
		tp.Pressure == nil || tp.Pressure.Trend == nil || tp.Pressure.Trend.Tendency != "steady" || tp.Wind.From != "N" {
		t.Errorf("TPLM2 sea state = %+v", tp)
	}

	for _, c := range []struct{ args, meta map[string]any }{
		{map[string]any{"station_id": "NOPE"}, nil},
		{nil, map[string]any{"sensor_external_id": "NOREAD"}},
	} {
		res := call(t, cs, "ocean.sea_state", c.args, c.meta, nil)
		if !res.IsError {
			t.Errorf("%v %v: want an error result, got %s", c.args, c.meta, text(res))
		}
	}
}

func TestCurrentConditions(t *testing.T) {
	t.Parallel()
	cs := sdkSession(t, serve(t, "weather", weatherFixture(t)...))
	cases := []struct {
		station   string
		feelsF    float64
		method    string
		stale     bool
		trend     string
		dewPointC float64
	}{
		// NWS heat index chart: 90 °F at 50 % feels like 95 °F (Rothfusz 94.6).
		// Dew points: Magnus (Alduchov-Eskridge) 20.5 and -23.7 °C; the NWS calculator says 20.8 and -23.6.
		{"KFLL", 94.6, "heat_index", false, "steady", 20.5},
		// NWS wind chill chart: 0 °F with 15 mph feels like -19 °F (formula -19.4).
		{"KPWM", -19.4, "wind_chill", false, "falling", -23.7},
		// 15 °C and no wind or humidity: the air temperature; 5 h old > 2*3600 s.
		{"KOLD", 59, "air_temperature", true, "", math.NaN()},
	}
	for _, c := range cases {
		t.Run(c.station, func(t *testing.T) {
			t.Parallel()
			var out tools.Conditions
			res := call(t, cs, "weather.current_conditions", map[string]any{"station_id": c.station}, nil, &out)
			if res.IsError {
				t.Fatal(text(res))
			}
			if out.Temperature == nil || out.FeelsLike == nil {
				t.Fatalf("no temperature or feels-like: %+v", out)
			}
			if out.FeelsLike.Method != c.method || !near(out.FeelsLike.Fahrenheit, c.feelsF, 0.15) || out.FeelsLike.Unit != "celsius" ||
				!near(out.FeelsLike.Value, (c.feelsF-32)*5/9, 0.1) {
				t.Errorf("feels like %+v, want %v °F by %s", out.FeelsLike, c.feelsF, c.method)
			}
			if out.Latest.Stale != c.stale || out.Temperature.Stale != c.stale {
				t.Errorf("stale = %v/%v, want %v (latest %+v)", out.Latest.Stale, out.Temperature.Stale, c.stale, out.Latest)
			}
			if c.trend != "" && (out.Pressure == nil || out.Pressure.Trend == nil || out.Pressure.Trend.Tendency != c.trend) {
				t.Errorf("pressure = %+v, want tendency %s", out.Pressure, c.trend)
			}
			if !math.IsNaN(c.dewPointC) && (out.DewPoint == nil || !near(out.DewPoint.Value, c.dewPointC, 0.05)) {
				t.Errorf("dew point = %+v, want %v", out.DewPoint, c.dewPointC)
			}
			if math.IsNaN(c.dewPointC) && strings.Join(out.Missing, ",") != "air_pressure_hpa,relative_humidity_percent,wind_direction_deg,wind_speed_ms" {
				t.Errorf("missing = %v", out.Missing)
			}
			if !strings.Contains(text(res), "feels like") {
				t.Errorf("text lacks the feels-like:\n%s", text(res))
			}
		})
	}
}

func TestAQI(t *testing.T) {
	t.Parallel()
	cs := sdkSession(t, serve(t, "airquality", airFixture(t)...))
	cases := []struct {
		station  string
		aqi      int
		category string
		method   string
		conc     float64
		hours    int
		wantErr  string
	}{
		// 2024 breakpoints 9.1-35.4 -> 51-100: (100-51)/(35.4-9.1)*(20-9.1)+51 = 71.3.
		{station: "LA-STEADY", aqi: 71, category: "Moderate", method: "pm2_5_nowcast", conc: 20, hours: 12},
		// w = 20/40 = 0.5; (40 + 0.5*20)/1.5 = 33.3; 49/26.3*(33.3-9.1)+51 = 96.1.
		{station: "LA-SPIKE", aqi: 96, category: "Moderate", method: "pm2_5_nowcast", conc: 33.3, hours: 2},
		// One of the three newest hours: the hourly value 12.3 -> 49/26.3*3.2+51 = 57.0.
		{station: "LA-GAP", aqi: 57, category: "Moderate", method: "pm2_5_latest_hour", conc: 12.3, hours: 1},
		{station: "AIRNOW-1", aqi: 42, category: "Good", method: "reported"},
		{station: "PM10-ONLY", wantErr: `station "PM10-ONLY" (PM10 sampler) reported neither PM2.5 nor an AQI`},
		{station: "NOWHERE", wantErr: `station "NOWHERE" (from station_id) not found in service "airquality"`},
	}
	for _, c := range cases {
		t.Run(c.station, func(t *testing.T) {
			t.Parallel()
			var out tools.AQIResult
			res := call(t, cs, "airquality.aqi", map[string]any{"station_id": c.station}, nil, &out)
			if c.wantErr != "" {
				if !res.IsError || !strings.Contains(text(res), c.wantErr) {
					t.Fatalf("isError=%v %q, want an error containing %q", res.IsError, text(res), c.wantErr)
				}
				return
			}
			if res.IsError {
				t.Fatal(text(res))
			}
			if out.AQI != c.aqi || out.Category != c.category || out.Method != c.method || out.HealthMessage == "" || out.Color == "" {
				t.Errorf("aqi %d %q %s (%q), want %d %q %s", out.AQI, out.Category, out.Method, out.HealthMessage, c.aqi, c.category, c.method)
			}
			if c.method != "reported" && (out.Concentration == nil || out.Concentration.Value != c.conc || out.Concentration.Unit != "µg/m³" || out.HoursUsed != c.hours) {
				t.Errorf("concentration %+v over %d hours, want %v µg/m³ over %d", out.Concentration, out.HoursUsed, c.conc, c.hours)
			}
			if !strings.Contains(text(res), out.Category) || !strings.Contains(text(res), out.HealthMessage[:20]) {
				t.Errorf("text lacks category or health message:\n%s", text(res))
			}
		})
	}

	var steady tools.AQIResult
	if res := call(t, cs, "airquality.aqi", nil, map[string]any{"sensor_external_id": "LA-STEADY"}, &steady); res.IsError {
		t.Fatal(text(res))
	}
	if steady.PM10 == nil || steady.PM10.Value != 35 || steady.Ozone == nil || steady.Ozone.Unit != "ppb" || steady.PM25.AgeSeconds != 3600 || steady.PM25.Stale {
		t.Errorf("pollutants = pm10 %+v ozone %+v pm2.5 %+v", steady.PM10, steady.Ozone, steady.PM25)
	}
}
