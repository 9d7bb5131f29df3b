package airnow

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/aqi"
	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

func obsOf(t *testing.T, b observation.Batch, id string) observation.Observation {
	t.Helper()
	for _, o := range b.Observations {
		if o.StationID == id {
			return o
		}
	}
	t.Fatalf("no observation of %s", id)
	return observation.Observation{}
}

func TestParseDataGolden(t *testing.T) {
	t.Parallel()
	data := adaptertest.Testdata(t, "airnow_data_monitors_pm25_first12.json")
	b, err := Adapter().Parse(observation.Payload{Format: FormatData, Body: data})
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, b)
	// Harmac's RawConcentration is -999: one missing_sentinel, and its reading keeps the
	// reported AQI only.
	if len(b.Observations) != 12 || len(b.Rejections) != 1 || b.Rejections[0].Reason != batch.ReasonMissingSentinel ||
		b.Rejections[0].Field != "RawConcentration" || len(b.Stations) != 12 {
		t.Fatalf("observations %d, stations %d, rejections %v; want 12, 12, one missing_sentinel", len(b.Observations), len(b.Stations), adaptertest.Reasons(b))
	}
	at := time.Date(2026, 9, 12, 20, 0, 0, 0, time.UTC)
	tests := []struct {
		id       string
		pm25     float64 // RawConcentration; -1: none
		aqi      float64
		lat, lon float64
	}{
		{"840530090015", 3.6, 18, 48.366058, -124.610046}, // Neah Bay: Value (NowCast) 3.2, RawConcentration 3.6, AQI 18
		{"124000102103", -1, 51, 49.114165, -123.850165},  // Harmac: Value 9.1, RawConcentration -999, AQI 51
		{"124000100304", 8.0, 46, 48.441942, -123.363165}, // Victoria Topaz: Value 8.3, RawConcentration 8.0
		{"840410570002", 2.2, 14, 45.454722, -123.82},     // Tillamook: Value 2.6, RawConcentration 2.2
	}
	for _, tt := range tests {
		o := obsOf(t, b, tt.id)
		pm, ok := adaptertest.Value(o, canon.PM25)
		if !ok {
			pm = -1
		}
		a, _ := adaptertest.Value(o, canon.AQI)
		if !o.Time.Equal(at) || pm != tt.pm25 || a != tt.aqi || (tt.lat != 0 && (*o.Lat != tt.lat || *o.Lon != tt.lon)) {
			t.Errorf("%s: %s pm25 %v aqi %v at %v,%v; want %v %v", tt.id, o.Time, pm, a, *o.Lat, *o.Lon, tt.pm25, tt.aqi)
		}
		if ok && (o.Measurements[0].UnitOriginal != "UG/M3" || o.Measurements[0].SourceField != "RawConcentration") {
			t.Errorf("%s unit_original %q field %q", tt.id, o.Measurements[0].UnitOriginal, o.Measurements[0].SourceField)
		}
	}
	// AirNow's own AQI of every record is the NowCast AQI: it agrees with package aqi's
	// 2024 PM2.5 breakpoints applied to Value (the NowCast), not to RawConcentration.
	for _, o := range b.Observations {
		var raw struct {
			Results []struct{ Value float64 } `json:"results"`
		}
		if err := json.Unmarshal(o.Raw, &raw); err != nil || len(raw.Results) != 1 {
			t.Fatalf("raw %s: %v", o.Raw, err)
		}
		a, _ := adaptertest.Value(o, canon.AQI)
		if got, err := aqi.FromPM25(raw.Results[0].Value); err != nil || float64(got) != a {
			t.Errorf("%s: aqi.FromPM25(%v) = %d, AirNow says %v", o.StationID, raw.Results[0].Value, got, a)
		}
	}
	var raw struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(obsOf(t, b, "124000102103").Raw, &raw); err != nil || len(raw.Results) != 1 || raw.Results[0]["RawConcentration"] != -999.0 || raw.Results[0]["SiteName"] != "Harmac Cedar Woodbank" {
		t.Errorf("raw = %s (%v)", obsOf(t, b, "124000102103").Raw, err)
	}
	for _, s := range b.Stations {
		if s.ExternalID == "124000102103" && (s.Name != "Harmac Cedar Woodbank" || s.Description != "British Columbia Ministry of Environment" || s.Latitude == nil) {
			t.Errorf("station = %+v", s)
		}
	}
}

func TestParseObservationsGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file     string
		obs      int
		id       string
		at       time.Time
		aqi      float64
		category string
		name     string
	}{
		// Three sites, one pollutant each, 14:00 PDT = 21:00 UTC.
		{"airnow_observation_current_LA_2026-09-12.json", 3, "840060374010", time.Date(2026, 9, 12, 21, 0, 0, 0, time.UTC), 56, "Moderate", "North Holywood"},
		// One site, three pollutants (ozone 44, PM2.5 37, PM10 11) at 15:00 PST = 23:00 UTC: AQI is the highest.
		{"airnow_observation_current_latlong_LA_2020.json", 1, "840060371103", time.Date(2020, 12, 20, 23, 0, 0, 0, time.UTC), 44, "Good", "Los Angeles - N. Main Street"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			b, err := Adapter().Parse(observation.Payload{Format: FormatObservation, Body: adaptertest.Testdata(t, tt.file)})
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.CheckBatch(t, b)
			if len(b.Observations) != tt.obs || len(b.Rejections) != 0 {
				t.Fatalf("observations %d, rejections %v; want %d, none", len(b.Observations), adaptertest.Reasons(b), tt.obs)
			}
			o := obsOf(t, b, tt.id)
			a, ok := adaptertest.Value(o, canon.AQI)
			if !o.Time.Equal(tt.at) || !ok || a != tt.aqi || len(o.Measurements) != 1 {
				t.Errorf("%s at %s: %+v; want aqi %v at %s", tt.id, o.Time, o.Measurements, tt.aqi, tt.at)
			}
			if c, err := aqi.CategoryOf(int(a)); err != nil || c.Name != tt.category || !strings.Contains(string(o.Raw), `"aqiCategoryName":"`+tt.category+`"`) {
				t.Errorf("category of %v = %+v, raw %s", a, c, o.Raw)
			}
			for _, s := range b.Stations {
				if s.ExternalID == tt.id && s.Name != tt.name {
					t.Errorf("station name %q, want %q", s.Name, tt.name)
				}
			}
		})
	}
}

func TestParseBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		format  string
		body    string
		err     bool
		obs     int
		reasons map[string]int
	}{
		{name: "empty", format: FormatData, body: "", err: true},
		{name: "api error", format: FormatData, body: `{"WebServiceError":[{"Message":"Invalid request: API key is invalid"}]}`, err: true},
		{name: "object", format: FormatObservation, body: `{"a":1}`, err: true},
		{name: "data records", format: FormatData, body: `[
			{"UTC":"2026-09-12T20:00","Parameter":"PM2.5","Unit":"UG/M3","Value":3.1,"RawConcentration":-999.0,"AQI":-999,"IntlAQSCode":"840530090015"},
			{"UTC":"2026-09-12T20:00","Parameter":"OZONE","Unit":"PPB","Value":40,"RawConcentration":41,"AQI":38,"IntlAQSCode":"840530090016"},
			{"UTC":"2026-09-12T20:00","Parameter":"CO","Unit":"PPM","Value":0.3,"RawConcentration":0.3,"AQI":3,"IntlAQSCode":"840530090016"},
			{"UTC":"2026-09-12T20:00","Parameter":"PM10","Unit":"UG/M3","Value":2,"RawConcentration":-3,"IntlAQSCode":"840530090016"},
			{"UTC":"noon","Parameter":"PM2.5","RawConcentration":3,"IntlAQSCode":"840530090017"},
			{"UTC":"2026-09-12T20:00","Parameter":"PM2.5","RawConcentration":3,"IntlAQSCode":""},
			{"UTC":"2026-09-12T20:00","Parameter":"PM2.5","RawConcentration":"x","IntlAQSCode":"840530090018"},
			{"UTC":"2026-09-12T21:00","Parameter":"PM2.5","Unit":"UG/M3","RawConcentration":40.0,"FullAQSCode":"530090019","Latitude":95,"Longitude":0}]`,
			obs: 2, reasons: map[string]int{batch.ReasonMissingSentinel: 2, batch.ReasonUnsupportedParam: 1, batch.ReasonNegative: 1, batch.ReasonBadTimestamp: 1, batch.ReasonMissingStation: 1, batch.ReasonMalformedRow: 1, batch.ReasonBadCoordinates: 1}},
		{name: "observation records", format: FormatObservation, body: `[
			{"DateObserved":"2026-09-12 ","HourObserved":14,"LocalTimeZone":"EST","ReportingArea":"Boston","StateCode":"MA","ParameterName":"O3","AQI":40,"Category":{"Number":1,"Name":"Good"}},
			{"DateObserved":"2026-09-12","HourObserved":14,"LocalTimeZone":"XYZ","ReportingArea":"Boston","StateCode":"MA","ParameterName":"PM2.5","AQI":40},
			{"DateObserved":"2026-09-12","HourObserved":25,"LocalTimeZone":"EST","ReportingArea":"Boston","StateCode":"MA","ParameterName":"PM2.5","AQI":40},
			{"DateObserved":"2026-09-12","HourObserved":14,"LocalTimeZone":"EST","ParameterName":"PM2.5","AQI":40},
			{"DateObserved":"2026-09-12","HourObserved":"14:00","LocalTimeZone":"EST","ReportingArea":"Boston","StateCode":"MA","ParameterName":"NO2","AQI":61}]`,
			obs: 1, reasons: map[string]int{batch.ReasonBadTimestamp: 2, batch.ReasonMissingStation: 1, batch.ReasonUnsupportedParam: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := Adapter().Parse(observation.Payload{Format: tt.format, Body: []byte(tt.body)})
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

func TestObservationAreaAndAQI(t *testing.T) {
	t.Parallel()
	b, err := ParseObservations([]byte(`[
		{"DateObserved":"2026-09-12 ","HourObserved":14,"LocalTimeZone":"EST","ReportingArea":"Boston","StateCode":"MA","ParameterName":"O3","AQI":40},
		{"DateObserved":"2026-09-12 ","HourObserved":14,"LocalTimeZone":"EST","ReportingArea":"Boston","StateCode":"MA","ParameterName":"NO2","AQI":61}]`))
	if err != nil {
		t.Fatal(err)
	}
	o := b.Observations[0]
	a, _ := adaptertest.Value(o, canon.AQI)
	// NO2 has no canonical id, but its AQI 61 is the overall AQI.
	if o.StationID != "AREA:MA:Boston" || a != 61 || !o.Time.Equal(time.Date(2026, 9, 12, 19, 0, 0, 0, time.UTC)) {
		t.Errorf("observation = %+v", o)
	}
}

func TestComputedAQIWhenAbsent(t *testing.T) {
	t.Parallel()
	b, err := ParseData([]byte(`[{"UTC":"2026-09-12T20:00","Parameter":"PM2.5","Unit":"UG/M3","Value":30.1,"RawConcentration":35.5,"IntlAQSCode":"840530090015"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := adaptertest.Value(b.Observations[0], canon.AQI); !ok || a != 101 {
		t.Errorf("computed AQI = %v (%v), want 101", a, ok)
	}
}
