package nws

import (
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

func TestParseObservationsGolden(t *testing.T) {
	t.Parallel()
	type check struct {
		at      string
		values  map[string]float64
		missing []string
	}
	tests := []struct {
		name, file string
		shared     bool
		station    string
		obs        int
		lat, lon   float64
		checks     []check
		unitOrig   string
	}{
		{
			name: "KFLL latest, wmoUnit codes", file: "KFLL_latest.json", station: "KFLL", obs: 1, lat: 26.07, lon: -80.15, unitOrig: "wmoUnit:degC",
			checks: []check{{"2022-03-02T23:53:00Z", map[string]float64{
				canon.AirTemperatureC:         22.8,    // 22.800000000000001 degC (METAR T0228)
				canon.WindDirectionDeg:        20,      // 20 degree_(angle)
				canon.WindSpeedMS:             2.1,     // 7.56 km/h
				canon.AirPressureHPa:          1018.7,  // seaLevelPressure 101870 Pa
				canon.RelativeHumidityPercent: 75.7709, // 75.770935807607003 percent
			}, nil}},
		},
		{
			name: "KCNK observations excerpt, legacy unit codes", file: "KCNK_observations_excerpt.json", station: "KCNK", obs: 3, lat: 39.54, lon: -97.65, unitOrig: "unit:degC",
			checks: []check{
				{"2019-08-17T11:55:00Z", map[string]float64{canon.AirTemperatureC: 20, canon.WindDirectionDeg: 110, canon.WindSpeedMS: 2.1, canon.AirPressureHPa: 1008.1, canon.RelativeHumidityPercent: 87.1664}, nil},
				// windDirection null -> skipped
				{"2019-08-17T10:55:00Z", map[string]float64{canon.AirTemperatureC: 20.6, canon.WindSpeedMS: 1.5, canon.AirPressureHPa: 1007.0}, []string{canon.WindDirectionDeg}},
				// seaLevelPressure null -> barometricPressure 101120 Pa
				{"2019-08-17T09:04:00Z", map[string]float64{canon.AirTemperatureC: 21.1, canon.WindDirectionDeg: 230, canon.WindSpeedMS: 5.7, canon.AirPressureHPa: 1011.2}, nil},
			},
		},
		{
			name: "KCNK 60 observations", file: "nws/stations_KCNK_observations_first60.json", shared: true, station: "KCNK", obs: 60, lat: 39.54, lon: -97.65, unitOrig: "unit:degC",
			checks: []check{
				{"2019-08-17T08:52:00Z", map[string]float64{canon.AirTemperatureC: 22, canon.AirPressureHPa: 1012.2}, []string{canon.WindDirectionDeg, canon.WindSpeedMS}},
			},
		},
		{
			name: "KPWM single legacy feature", file: "nws/stations_KPWM_observation_2019-08-21.json", shared: true, station: "KPWM", obs: 1, unitOrig: "unit:degC",
			checks: []check{
				{"2019-08-21T09:51:00Z", map[string]float64{canon.AirTemperatureC: 15.6, canon.WindDirectionDeg: 0, canon.WindSpeedMS: 0, canon.AirPressureHPa: 1015.8, canon.RelativeHumidityPercent: 89.6211}, nil},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var data []byte
			if tt.shared {
				data = adaptertest.ProviderFile(t, tt.file)
			} else {
				data = adaptertest.Testdata(t, tt.file)
			}
			b, err := Adapter().Parse(observation.Payload{Format: FormatObservations, Body: data})
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.CheckBatch(t, b)
			if len(b.Observations) != tt.obs || len(b.Rejections) != 0 {
				t.Fatalf("observations = %d, rejections = %v; want %d, none", len(b.Observations), adaptertest.Reasons(b), tt.obs)
			}
			if len(b.Stations) != 1 || b.Stations[0].ExternalID != tt.station || b.Stations[0].SensorType != SensorType {
				t.Errorf("stations = %+v", b.Stations)
			}
			o0 := b.Observations[0]
			if o0.Measurements[0].UnitOriginal != tt.unitOrig {
				t.Errorf("unit_original = %q, want %q", o0.Measurements[0].UnitOriginal, tt.unitOrig)
			}
			if tt.lat != 0 && (o0.Lat == nil || *o0.Lat != tt.lat || *o0.Lon != tt.lon) {
				t.Errorf("position = %v,%v, want %v,%v", o0.Lat, o0.Lon, tt.lat, tt.lon)
			}
			for _, c := range tt.checks {
				at, _ := time.Parse(time.RFC3339, c.at)
				found := false
				for _, o := range b.Observations {
					if !o.Time.Equal(at) {
						continue
					}
					found = true
					for p, v := range c.values {
						if got, ok := adaptertest.Value(o, p); !ok || got != v {
							t.Errorf("%s %s = %v (present %v), want %v", c.at, p, got, ok, v)
						}
					}
					for _, p := range c.missing {
						if _, ok := adaptertest.Value(o, p); ok {
							t.Errorf("%s %s present, want skipped", c.at, p)
						}
					}
				}
				if !found {
					t.Errorf("no observation at %s", c.at)
				}
			}
		})
	}
}

func TestParseObservationsRaw(t *testing.T) {
	t.Parallel()
	b, err := ParseObservations(adaptertest.Testdata(t, "KCNK_observations_excerpt.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw := string(b.Observations[0].Raw)
	if !strings.HasPrefix(raw, `{"id":"https://api.weather.gov/stations/KCNK/observations/2019-08-17T11:55:00+00:00","type":"Feature"`) || !strings.Contains(raw, `"rawMessage":"KCNK 171155Z AUTO 11004KT`) {
		t.Errorf("raw = %.300s", raw)
	}
	if b.Observations[0].RawFormat != RawFormat {
		t.Errorf("raw format = %q", b.Observations[0].RawFormat)
	}
}

func TestParseObservationsQualityControl(t *testing.T) {
	t.Parallel()
	feature := func(qcT, qcSLP, qcBP string) string {
		return `{"type":"Feature","geometry":{"type":"Point","coordinates":[-80.15,26.07]},"properties":{"station":"https://api.weather.gov/stations/kfll","timestamp":"2022-03-02T23:53:00+00:00",
		"temperature":{"unitCode":"wmoUnit:degC","value":22.8,"qualityControl":"` + qcT + `"},
		"seaLevelPressure":{"unitCode":"wmoUnit:Pa","value":101870,"qualityControl":"` + qcSLP + `"},
		"barometricPressure":{"unitCode":"wmoUnit:Pa","value":101860,"qualityControl":"` + qcBP + `"}}}`
	}
	tests := []struct {
		name     string
		body     string
		temp     bool
		pressure float64 // 0 = none
		reasons  map[string]int
	}{
		{"all verified", feature("V", "V", "V"), true, 1018.7, nil},
		{"coarse, screened and no QC are kept", feature("C", "S", "Z"), true, 1018.7, nil},
		{"legacy qc: prefix", feature("qc:V", "qc:C", "qc:V"), true, 1018.7, nil},
		{"X temperature dropped", feature("X", "V", "V"), false, 1018.7, map[string]int{batch.ReasonQualityControl: 1}},
		{"Q sea-level pressure falls back to barometric", feature("V", "Q", "V"), true, 1018.6, map[string]int{batch.ReasonQualityControl: 1}},
		{"both pressures bad", feature("V", "qc:X", "B"), true, 0, map[string]int{batch.ReasonQualityControl: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := ParseObservations([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.CheckBatch(t, b)
			o := b.Observations[0]
			if o.StationID != "KFLL" {
				t.Errorf("station = %q, want KFLL (from the station URL, upper-cased)", o.StationID)
			}
			if _, ok := adaptertest.Value(o, canon.AirTemperatureC); ok != tt.temp {
				t.Errorf("temperature present = %v, want %v", ok, tt.temp)
			}
			p, ok := adaptertest.Value(o, canon.AirPressureHPa)
			if (tt.pressure == 0) == ok || (ok && p != tt.pressure) {
				t.Errorf("pressure = %v (present %v), want %v", p, ok, tt.pressure)
			}
			got := adaptertest.Reasons(b)
			if len(got) != len(tt.reasons) {
				t.Errorf("rejections = %v, want %v", got, tt.reasons)
			}
			for r, n := range tt.reasons {
				if got[r] != n {
					t.Errorf("rejections[%s] = %d, want %d", r, got[r], n)
				}
			}
		})
	}
}

func TestParseObservationsBadInput(t *testing.T) {
	t.Parallel()
	good := `{"type":"Feature","properties":{"stationId":"KFLL","timestamp":"2022-03-02T23:53:00+00:00","temperature":{"unitCode":"wmoUnit:degC","value":22.8}}}`
	tests := []struct {
		name    string
		body    string
		err     bool
		obs     int
		reasons map[string]int
	}{
		{name: "empty", body: "", err: true},
		{name: "not json", body: "<html>", err: true},
		{name: "problem document", body: `{"type":"https://api.weather.gov/problems/NotFound","title":"Not Found","status":404}`, err: true},
		{name: "feature collection of mixed features", body: `{"type":"FeatureCollection","features":[` + good + `,
			{"type":"Feature","properties":{"stationId":"KFLL","timestamp":"yesterday","temperature":{"unitCode":"wmoUnit:degC","value":20}}},
			{"type":"Feature","properties":{"timestamp":"2022-03-02T22:53:00+00:00","temperature":{"unitCode":"wmoUnit:degC","value":20}}},
			{"type":"Feature","properties":{"stationId":"KFLL","timestamp":"2022-03-02T21:53:00+00:00","temperature":{"unitCode":"wmoUnit:degC","value":"warm"}}},
			{"type":"Feature","properties":{"stationId":"KFLL","timestamp":"2022-03-02T20:53:00+00:00","temperature":{"unitCode":"wmoUnit:degC","value":99.5},"windSpeed":{"unitCode":"wmoUnit:furlong_fortnight-1","value":3},"relativeHumidity":{"unitCode":"wmoUnit:percent","value":55}}},
			{"type":"Feature","properties":{"stationId":"KFLL","timestamp":"2022-03-02T19:53:00+00:00","temperature":{"unitCode":"wmoUnit:degC","value":null}}},
			` + good + `]}`, obs: 2, reasons: map[string]int{batch.ReasonBadTimestamp: 1, batch.ReasonMissingStation: 1, batch.ReasonMalformedRow: 1, "out_of_range": 1, "unknown_unit": 1, batch.ReasonNoMeasurements: 1, batch.ReasonDuplicate: 1}},
		{name: "bad geometry", body: `{"type":"Feature","geometry":{"type":"Point","coordinates":[200,95]},"properties":{"stationId":"KFLL","timestamp":"2022-03-02T23:53:00+00:00","temperature":{"unitCode":"wmoUnit:degC","value":22.8}}}`, obs: 1, reasons: map[string]int{batch.ReasonBadCoordinates: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := ParseObservations([]byte(tt.body))
			if tt.err {
				if err == nil {
					t.Fatalf("want an error, got %+v", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.CheckCounts(t, b, tt.obs, tt.reasons)
		})
	}
}

func TestParseStations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file     string
		shared   bool
		n        int
		id, name string
		lat, lon float64
	}{
		{"gridpoints_stations_excerpt.json", false, 3, "KCMH", "John Glenn Columbus International Airport", 39.9906999, -82.87691},
		{"nws/gridpoints_stations_pynws.json", true, 41, "KCMH", "John Glenn Columbus International Airport", 39.9906999, -82.87691},
		{"nws/gridpoints_stations_KPWM_area_2019.json", true, 41, "KPWM", "Portland, Portland International Jetport", 43.64222, -70.30444},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			var data []byte
			if tt.shared {
				data = adaptertest.ProviderFile(t, tt.file)
			} else {
				data = adaptertest.Testdata(t, tt.file)
			}
			b, err := Adapter().Parse(observation.Payload{Format: FormatStations, Body: data})
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.CheckBatch(t, b)
			if len(b.Stations) != tt.n || len(b.Rejections) != 0 {
				t.Fatalf("stations = %d, rejections %v; want %d", len(b.Stations), b.Rejections, tt.n)
			}
			s := b.Stations[0]
			if s.ExternalID != tt.id || s.Name != tt.name || *s.Latitude != tt.lat || *s.Longitude != tt.lon || s.ReportingIntervalS != 3600 || len(s.DataTypes) != 5 {
				t.Errorf("first station = %+v", s)
			}
		})
	}
}

func TestParseStationsBad(t *testing.T) {
	t.Parallel()
	b, err := ParseStations([]byte(`{"type":"FeatureCollection","features":[
		{"geometry":{"type":"Point","coordinates":[-82.8,39.9]},"properties":{"stationIdentifier":"kcmh","name":"A"}},
		{"geometry":{"type":"Point","coordinates":[-82.8]},"properties":{"stationIdentifier":"KOSU"}},
		{"properties":{"stationIdentifier":"KTZR"}},
		{"geometry":{"type":"Point","coordinates":[-82.8,39.9]},"properties":{"stationIdentifier":""}},
		{"geometry":{"type":"Point","coordinates":[-82.8,39.9]},"properties":{"stationIdentifier":7}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := adaptertest.Reasons(b)
	if len(b.Stations) != 1 || b.Stations[0].ExternalID != "KCMH" || got[batch.ReasonBadCoordinates] != 2 || got[batch.ReasonMissingStation] != 1 || got[batch.ReasonBadStationMetadata] != 1 {
		t.Errorf("stations = %+v, rejections = %v", b.Stations, got)
	}
	if _, err := ParseStations([]byte(`{"type":"Feature"}`)); err == nil {
		t.Error("a single Feature is not a station list; want an error")
	}
}
