package openaq

import (
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

type check struct {
	station string
	at      string
	values  map[string]float64
	units   map[string]string // parameter -> unit_original
}

func runChecks(t *testing.T, b observation.Batch, checks []check) {
	t.Helper()
	for _, c := range checks {
		at, _ := time.Parse(time.RFC3339, c.at)
		found := false
		for _, o := range b.Observations {
			if o.StationID != c.station || !o.Time.Equal(at) {
				continue
			}
			found = true
			if len(o.Measurements) != len(c.values) {
				t.Errorf("%s %s measurements = %+v, want %v", c.station, c.at, o.Measurements, c.values)
			}
			for _, m := range o.Measurements {
				if v, ok := c.values[m.Parameter]; !ok || v != m.Value {
					t.Errorf("%s %s %s = %v, want %v", c.station, c.at, m.Parameter, m.Value, v)
				}
				if u, ok := c.units[m.Parameter]; ok && u != m.UnitOriginal {
					t.Errorf("%s %s %s unit_original = %q, want %q", c.station, c.at, m.Parameter, m.UnitOriginal, u)
				}
			}
		}
		if !found {
			t.Errorf("no observation of %q at %s", c.station, c.at)
		}
	}
}

func TestParseGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, format string
		shared             bool
		obs, stations      int
		reasons            map[string]int
		checks             []check
	}{
		{
			name: "latest excerpt", file: "v1_latest_excerpt.json", format: FormatLatest, obs: 3, stations: 4,
			reasons: map[string]int{batch.ReasonUnsupportedParam: 5, batch.ReasonMissingSentinel: 1, batch.ReasonNegative: 1},
			checks: []check{
				// pm25 76, pm10 110 at 06:00; AQI of 76 µg/m³ = 49/69.9*(76-55.5)+151 = 165.4
				{"CN:淮河道", "2019-03-19T06:00:00Z", map[string]float64{canon.PM25: 76, canon.PM10: 110, canon.AQI: 165}, nil},
				// o3 191 µg/m³ at 07:00 = 191/1.9957 ppb (20 °C factor)
				{"CN:淮河道", "2019-03-19T07:00:00Z", map[string]float64{canon.OzonePPB: 95.7058}, map[string]string{canon.OzonePPB: "µg/m³"}},
				// o3 0.016 ppm -> 16 ppb
				{"US:16th and Whitmore", "2017-11-01T11:00:00Z", map[string]float64{canon.OzonePPB: 16}, map[string]string{canon.OzonePPB: "ppm"}},
			},
		},
		{
			name: "latest page", file: "openaq/v1_latest_limit100_page1.json", format: FormatLatest, shared: true, obs: 89, stations: 100,
			// 332 measurements: 149 no2/so2/co, one pm10 -99 (Stockholm; its no2 -99 counts as unsupported), one pm25 -4.2
			reasons: map[string]int{batch.ReasonUnsupportedParam: 149, batch.ReasonMissingSentinel: 1, batch.ReasonNegative: 1},
			checks: []check{
				{"US:1NL Navajo Lake", "2017-01-13T15:00:00Z", map[string]float64{canon.OzonePPB: 24}, map[string]string{canon.OzonePPB: "ppm"}},
			},
		},
		{
			name: "measurements Chennai", file: "v1_measurements_city_Chennai_limit10.json", format: FormatMeasurements, obs: 2, stations: 2,
			reasons: map[string]int{batch.ReasonUnsupportedParam: 6},
			checks: []check{
				// o3 0, pm25 23.84 -> AQI 49/26.3*(23.8-9.1)+51 = 78.4
				{"IN:Velachery Res. Area, Chennai - CPCB", "2020-11-08T11:30:00Z", map[string]float64{canon.OzonePPB: 0, canon.PM25: 23.84, canon.AQI: 78}, nil},
				{"IN:Manali Village, Chennai - TNPCB", "2020-11-08T10:00:00Z", map[string]float64{canon.OzonePPB: 20.2586, canon.PM10: 136.8}, nil},
			},
		},
		{
			name: "measurements ppm no2/so2 only", file: "v1_measurements_limit2_attribution_averagingPeriod.json", format: FormatMeasurements, obs: 0, stations: 1,
			reasons: map[string]int{batch.ReasonUnsupportedParam: 2},
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
			b, err := Adapter().Parse(observation.Payload{Format: tt.format, Body: data})
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.CheckBatch(t, b)
			if len(b.Observations) != tt.obs || len(b.Stations) != tt.stations {
				t.Errorf("observations = %d, stations = %d; want %d, %d", len(b.Observations), len(b.Stations), tt.obs, tt.stations)
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
			runChecks(t, b, tt.checks)
			for _, s := range b.Stations {
				if s.SensorType != SensorType || s.ReportingIntervalS != 3600 || s.ProviderSlug != ProviderSlug {
					t.Errorf("station %+v", s)
				}
			}
		})
	}
}

func TestParseRawAndStations(t *testing.T) {
	t.Parallel()
	b, err := ParseMeasurements(adaptertest.Testdata(t, "v1_measurements_city_Chennai_limit10.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw := string(b.Observations[0].Raw)
	if !strings.HasPrefix(raw, `{"results":[{"location":"Velachery Res. Area, Chennai - CPCB","parameter":"o3"`) || strings.Count(raw, `"location"`) != 5 {
		t.Errorf("raw = %s", raw)
	}
	s := b.Stations[0]
	if s.Name != "Velachery Res. Area, Chennai - CPCB" || s.Description != "OpenAQ location in Chennai, IN" || *s.Latitude != 13.0052189 || *s.Longitude != 80.2398125 {
		t.Errorf("station = %+v", s)
	}
	if strings.Join(s.DataTypes, ",") != "aqi,ozone_ppb,pm2_5_ug_per_m3" {
		t.Errorf("data types = %v", s.DataTypes)
	}
	lb, err := ParseLatest(adaptertest.Testdata(t, "v1_latest_excerpt.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range lb.Stations {
		if s.ExternalID == "SE:(Folkungagatan tillfälligt avstängd)" && s.Latitude != nil {
			t.Errorf("Stockholm location without coordinates got %v", *s.Latitude)
		}
	}
	if !strings.HasPrefix(string(lb.Observations[0].Raw), `{"location":" 淮河道","city":"天津市"`) {
		t.Errorf("latest raw = %.120s", lb.Observations[0].Raw)
	}
}

func TestStationID(t *testing.T) {
	t.Parallel()
	tests := []struct{ country, loc, want string }{
		{"CN", " 淮河道", "CN:淮河道"},
		{"in", "Velachery Res. Area,  Chennai - CPCB", "IN:Velachery Res. Area, Chennai - CPCB"},
		{"US", "A/B?C#D%E\\F\x01", "US:A-B-C-D-E-F-"},
		{"", "x", "x"},
		{"US", strings.Repeat("é", 100), "US:" + strings.Repeat("é", 62)},
	}
	for _, tt := range tests {
		if got := StationID(tt.country, tt.loc); got != tt.want {
			t.Errorf("StationID(%q, %q) = %q, want %q", tt.country, tt.loc, got, tt.want)
		}
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
		{name: "empty", format: FormatLatest, body: "", err: true},
		{name: "html", format: FormatMeasurements, body: "<html>", err: true},
		{name: "api error", format: FormatMeasurements, body: `{"statusCode":400,"error":"Bad Request","message":"child \"limit\" fails"}`, err: true},
		{name: "no results", format: FormatLatest, body: `{"meta":{}}`, err: true},
		{name: "bad records", format: FormatMeasurements, body: `{"results":[
			{"location":"A","parameter":"pm25","date":{"utc":"2020-11-08T10:00:00Z"},"value":"high","unit":"µg/m³","country":"IN"},
			{"location":"","parameter":"pm25","date":{"utc":"2020-11-08T10:00:00Z"},"value":1,"unit":"µg/m³","country":"IN"},
			{"location":"A","parameter":"pm25","date":{"utc":"yesterday"},"value":1,"unit":"µg/m³","country":"IN"},
			{"location":"A","parameter":"pm25","date":{"utc":"2020-11-08T10:00:00Z"},"value":5000,"unit":"µg/m³","country":"IN"},
			{"location":"A","parameter":"pm10","date":{"utc":"2020-11-08T10:00:00Z"},"value":20,"unit":"furlongs","country":"IN"},
			{"location":"A","parameter":"o3","date":{"utc":"2020-11-08T10:00:00Z"},"value":-999,"unit":"ppm","country":"IN","coordinates":{"latitude":13,"longitude":185.2}},
			{"location":"A","parameter":"o3","date":{"utc":"2020-11-08T11:00:00Z"},"value":0.03,"unit":"ppm","country":"IN"},
			7]}`, obs: 1, reasons: map[string]int{batch.ReasonMalformedRow: 2, batch.ReasonMissingStation: 1, batch.ReasonBadTimestamp: 1, "out_of_range": 1, "unknown_unit": 1, batch.ReasonMissingSentinel: 1, batch.ReasonBadCoordinates: 1}},
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
