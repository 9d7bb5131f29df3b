package coops

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

func TestParseGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		shared     bool
		obs        int
		checks     map[string]float64 // "2006-01-02 15:04" -> water temperature
	}{
		{"excerpt", "8723970_excerpt.json", false, 5, map[string]float64{"2014-09-27 00:00": 30.1, "2014-09-28 23:54": 30.6}},
		// 480 six-minute records, one of them {"v":"", "f":"1,1,1"}.
		{"two days", "coops/datagetter_8723970_water_temperature_metric_20140927-20140928.json", true, 479, map[string]float64{"2014-09-27 12:00": 29.3, "2014-09-28 23:54": 30.6}},
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
			b, err := Adapter().Parse(observation.Payload{Format: FormatWaterTemperature, Body: data})
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.CheckBatch(t, b)
			r := adaptertest.Reasons(b)
			if len(b.Observations) != tt.obs || len(r) != 1 || r[batch.ReasonMissingSentinel] != 1 {
				t.Fatalf("observations %d, rejections %v; want %d and one missing", len(b.Observations), r, tt.obs)
			}
			for at, want := range tt.checks {
				ts, _ := time.Parse("2006-01-02 15:04", at)
				found := false
				for _, o := range b.Observations {
					if o.Time.Equal(ts) {
						found = true
						if v, ok := adaptertest.Value(o, canon.WaterTemperatureC); !ok || v != want || o.Measurements[0].UnitOriginal != "degC" {
							t.Errorf("%s: %+v, want %v", at, o.Measurements, want)
						}
					}
				}
				if !found {
					t.Errorf("no observation at %s", at)
				}
			}
			s := b.Stations[0]
			if len(b.Stations) != 1 || s.ExternalID != "8723970" || s.Name != "Vaca Key, Florida Bay" || *s.Latitude != 24.711 || *s.Longitude != -81.1065 || s.ReportingIntervalS != 360 || strings.Join(s.DataTypes, ",") != canon.WaterTemperatureC {
				t.Errorf("stations = %+v", b.Stations)
			}
			want := `{"metadata":{"id":"8723970","name":"Vaca Key, Florida Bay","lat":"24.7110","lon":"-81.1065"},"data":[{"t":"2014-09-27 00:00","v":"30.1","f":"0,0,0"}]}`
			if got := string(b.Observations[0].Raw); got != want {
				t.Errorf("raw = %s\nwant %s", got, want)
			}
		})
	}
}

func TestParseErrorBody(t *testing.T) {
	t.Parallel()
	_, err := Adapter().Parse(observation.Payload{Format: FormatAirTemperature, Body: adaptertest.Testdata(t, "error_no_data.json")})
	if !errors.Is(err, ErrAPI) || !strings.Contains(err.Error(), "No data was found") {
		t.Fatalf("error = %v, want ErrAPI with the message", err)
	}
}

func TestParseUnitsAndFlags(t *testing.T) {
	t.Parallel()
	body := `{"metadata":{"id":"8775244","name":"X","lat":"27.6","lon":"-97.2"},"data":[
		{"t":"2014-09-27 00:00","v":"86.0","f":"0,0,0"},
		{"t":"2014-09-27 00:06","v":"99.9","f":"1,0,0"},
		{"t":"2014-09-27 00:12","v":"abc","f":"0,0,0"},
		{"t":"27/09/2014","v":"80.0","f":"0,0,0"},
		{"t":"2014-09-27 00:24","v":"400.0","f":"0,0,0"},
		{"t":"2014-09-27 00:30","v":1,"f":"0,0,0"}]}`
	b, err := Adapter().Parse(observation.Payload{Format: FormatAirTemperature + ".english", Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, b)
	if len(b.Observations) != 2 {
		t.Fatalf("observations = %d, want 2", len(b.Observations))
	}
	m := b.Observations[0].Measurements[0]
	if m.Parameter != canon.AirTemperatureC || m.Value != 30 || m.UnitOriginal != "degF" || m.QC != nil {
		t.Errorf("86 degF = %+v, want 30 celsius, no provider mark", m)
	}
	// CO-OPS' maximum flag is kept as the value's quality, not a rejection.
	if q := b.Observations[1].Measurements[0].Quality(); q.Flag != canon.FlagSuspect || len(q.Failed) != 1 || q.Failed[0] != canon.ProviderRange {
		t.Errorf("99.9 degF flagged 1,0,0 = %+v, want suspect provider_range", q)
	}
	r := adaptertest.Reasons(b)
	for reason, n := range map[string]int{batch.ReasonQualityControl: 0, batch.ReasonBadNumber: 1, batch.ReasonBadTimestamp: 1, "out_of_range": 1, batch.ReasonMalformedRow: 1} {
		if r[reason] != n {
			t.Errorf("rejections[%s] = %d, want %d (all %v)", reason, r[reason], n, r)
		}
	}
	pb, err := Adapter().Parse(observation.Payload{Format: FormatAirPressure, Body: []byte(`{"metadata":{"id":"1","name":"Y","lat":"1","lon":"2"},"data":[{"t":"2014-09-27 00:00","v":"1013.2","f":"0,0,0"}]}`)})
	if err != nil || len(pb.Observations) != 1 || pb.Observations[0].Measurements[0].Value != 1013.2 {
		t.Errorf("air pressure: %+v, %v", pb, err)
	}
}

func TestParseBadPayloads(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, format, body string }{
		{"unknown product", "coops.water_level", `{}`},
		{"unknown units", "coops.water_temperature.imperial", `{}`},
		{"not json", FormatWaterTemperature, `<html>`},
		{"no metadata", FormatWaterTemperature, `{"data":[]}`},
		{"bad station id", FormatWaterTemperature, `{"metadata":{"id":"../x"},"data":[]}`},
		{"error", FormatWaterTemperature, `{"error":{"message":"Wrong Station ID"}}`},
	}
	for _, tt := range tests {
		if _, err := Adapter().Parse(observation.Payload{Format: tt.format, Body: []byte(tt.body)}); err == nil {
			t.Errorf("%s: want an error", tt.name)
		}
	}
}

func TestSimulate(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(3 * 24 * time.Hour)
	cfg := observation.SimConfig{Seed: 11, Stations: 12}
	a := Adapter()
	meta, err := a.Simulator.SimStations(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range meta {
		b, err := a.Parse(p)
		if err != nil || len(b.Stations) != 1 || b.Stations[0].ExternalID != p.StationID || b.Stations[0].Latitude == nil {
			t.Fatalf("station payload %s: %+v, %v", p.StationID, b, err)
		}
	}
	ps, err := a.Simulator.Simulate(cfg, from, to)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := a.Simulator.Simulate(cfg, from, to)
	missing := 0
	for i, p := range ps {
		if !bytes.Equal(p.Body, again[i].Body) {
			t.Fatal("not deterministic")
		}
		b, err := a.Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		adaptertest.CheckBatch(t, b)
		missing += adaptertest.Reasons(b)[batch.ReasonMissingSentinel]
		if len(b.Observations) < 600 || b.Stations[0].ReportingIntervalS != 360 {
			t.Errorf("%s: %d observations over 3 days of 6-minute data", p.StationID, len(b.Observations))
		}
	}
	if len(ps) != 12 || missing == 0 {
		t.Errorf("payloads %d, missing records %d", len(ps), missing)
	}
}
