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

func TestParseV3Sensors(t *testing.T) {
	t.Parallel()
	b, err := Adapter().Parse(observation.Payload{Format: FormatV3Sensors, StationID: V3StationID(2178), Body: adaptertest.Testdata(t, "v3_sensors.json")})
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, b)
	// 8 sensors: no, nox, no2, so2, co have no canonical id; pm25 3.9 µg/m³, pm10 17, o3 0.046 ppm.
	if len(b.Observations) != 1 || adaptertest.Reasons(b)[batch.ReasonUnsupportedParam] != 5 || len(b.Rejections) != 5 {
		t.Fatalf("observations %d, rejections %v", len(b.Observations), adaptertest.Reasons(b))
	}
	runChecks(t, b, []check{{"v3-2178", "2026-09-28T22:00:00Z", map[string]float64{canon.PM25: 3.9, canon.PM10: 17, canon.OzonePPB: 46, canon.AQI: 22}, map[string]string{canon.OzonePPB: "ppm"}}})
	if o := b.Observations[0]; *o.Lat != 35.1353 || *o.Lon != -106.584702 || strings.Count(string(o.Raw), `"parameter"`) != 8 {
		t.Errorf("position %v,%v raw %.100s", *o.Lat, *o.Lon, o.Raw)
	}
	b, err = ParseV3Sensors("v3-3", adaptertest.Testdata(t, "v3_locations_3_sensors.json"))
	if err != nil {
		t.Fatal(err)
	}
	runChecks(t, b, []check{{"v3-3", "2023-04-01T04:30:00Z", map[string]float64{canon.PM25: 1, canon.AQI: 6}, nil}})
}

func TestParseV3Measurements(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file   string
		shared bool
		obs    int
	}{
		{"v3_sensors_3_measurements_excerpt.json", false, 3},
		{"openaq/v3_sensors_3_measurements.json", true, 48},
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
			b, err := Adapter().Parse(observation.Payload{Format: FormatV3Measurements, StationID: "v3-3", Body: data})
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.CheckBatch(t, b)
			if len(b.Observations) != tt.obs || len(b.Rejections) != 0 {
				t.Fatalf("observations %d, rejections %v", len(b.Observations), adaptertest.Reasons(b))
			}
			// First record: 7.0 µg/m³ for 05:00-05:30Z, dated at the period's end.
			runChecks(t, b, []check{{"v3-3", "2023-03-07T05:30:00Z", map[string]float64{canon.PM25: 7, canon.AQI: 39}, nil}})
		})
	}
}

func TestParseV3Locations(t *testing.T) {
	t.Parallel()
	b, err := Adapter().Parse(observation.Payload{Format: FormatV3Locations, Body: adaptertest.Testdata(t, "v3_locations_limit100.json")})
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, b)
	if len(b.Stations) != 6 || len(b.Rejections) != 0 {
		t.Fatalf("stations %d, rejections %v", len(b.Stations), b.Rejections)
	}
	s := b.Stations[0]
	if s.ExternalID != "v3-1" || s.Name != "testing site 1" || *s.Latitude != -16.51516 || *s.Longitude != -151.76306 || strings.Join(s.DataTypes, ",") != "aqi,pm2_5_ug_per_m3" || !strings.Contains(s.Description, "French Polynesia") {
		t.Errorf("station = %+v", s)
	}
}

func TestParseV3Bad(t *testing.T) {
	t.Parallel()
	if _, err := ParseV3Measurements("", []byte(`{"results":[]}`)); err == nil {
		t.Error("no station id: want an error")
	}
	if _, err := ParseV3Sensors("v3-1", []byte(`{"message":"Unauthorized. A valid API key must be provided in the X-API-Key header."}`)); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("error body: %v", err)
	}
	b, err := ParseV3Measurements("v3-1", []byte(`{"results":[
		{"value":5,"parameter":{"name":"pm25","units":"µg/m³"},"flagInfo":{"hasFlags":true},"period":{"datetimeTo":{"utc":"2023-03-07T05:30:00Z"}}},
		{"value":null,"parameter":{"name":"pm25","units":"µg/m³"},"period":{"datetimeTo":{"utc":"2023-03-07T06:00:00Z"}}},
		{"value":-4.9,"parameter":{"name":"pm25","units":"µg/m³"},"period":{"datetimeTo":{"utc":"2023-03-07T06:30:00Z"}}},
		{"value":4,"parameter":{"name":"pm25","units":"µg/m³"},"period":{"datetimeTo":{"utc":"later"}}},
		{"value":4,"parameter":{"name":"pm25","units":"µg/m³"},"period":{"datetimeTo":{"utc":"2023-03-07T07:30:00Z"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := adaptertest.Reasons(b)
	if len(b.Observations) != 2 || r[batch.ReasonQualityControl] != 0 || r[batch.ReasonMissingSentinel] != 1 || r[batch.ReasonNegative] != 1 || r[batch.ReasonBadTimestamp] != 1 {
		t.Errorf("observations %d, rejections %v", len(b.Observations), r)
	}
	// OpenAQ's flag is kept on the value.
	if q := b.Observations[0].Measurements[0].Quality(); q.Flag != canon.FlagSuspect || len(q.Failed) != 1 || q.Failed[0] != canon.ProviderFlagged {
		t.Errorf("flagged record = %+v, want suspect provider_flagged", q)
	}
	if !b.Observations[1].Time.Equal(time.Date(2023, 3, 7, 7, 30, 0, 0, time.UTC)) || b.Observations[1].Measurements[0].QC != nil {
		t.Errorf("time %s, qc %+v", b.Observations[1].Time, b.Observations[1].Measurements[0].QC)
	}
}

func FuzzParseV3(f *testing.F) {
	f.Add(adaptertest.ProviderFile(f, "openaq/v3_parameters_2_latest.json"))
	for _, n := range []string{"v3_sensors.json", "v3_locations_limit100.json", "v3_locations_3_sensors.json", "v3_sensors_3_measurements_excerpt.json"} {
		s := adaptertest.Testdata(f, n)
		f.Add(s)
		f.Add(s[:len(s)/2])
		f.Add([]byte(strings.Replace(string(s), `"value":`, `"value":1e308,"x":`, 1)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte) (observation.Batch, error){
			ParseV3Locations,
			func(d []byte) (observation.Batch, error) { return ParseV3Sensors("v3-1", d) },
			func(d []byte) (observation.Batch, error) { return ParseV3Measurements("v3-1", d) },
			func(d []byte) (observation.Batch, error) { return ParseV3ParameterLatest("/v3/parameters/2/latest", d) },
		} {
			if b, err := parse(data); err == nil {
				adaptertest.CheckBatch(t, b)
			}
		}
	})
}

// TestV3ParameterLatest: the recorded /v3/parameters/2/latest page (PM2.5 at 7 testing-site
// locations): the first record, location 1, 8.15 µg/m³ at 2025-07-09 01:30Z, read by hand.
func TestV3ParameterLatest(t *testing.T) {
	t.Parallel()
	b, err := Adapter().Parse(observation.Payload{Format: FormatV3ParameterLatest, Path: "openaq/v3_parameters_2_latest.json",
		Body: adaptertest.ProviderFile(t, "openaq/v3_parameters_2_latest.json")})
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, b)
	if len(b.Observations) != 7 || b.Records != 7 {
		t.Fatalf("observations %d records %d, rejections %v", len(b.Observations), b.Records, adaptertest.Reasons(b))
	}
	o := b.Observations[0]
	if v, _ := adaptertest.Value(o, canon.PM25); o.StationID != "v3-1" || v != 8.15 || !o.Time.Equal(time.Date(2025, 7, 9, 1, 30, 0, 0, time.UTC)) {
		t.Errorf("first = %+v", o)
	}
	if _, err := ParseV3ParameterLatest("/v3/latest", []byte(`{"meta":{},"results":[]}`)); err == nil {
		t.Error("no parameter in the path: want an error")
	}
	b, err = ParseV3ParameterLatest("/v3/parameters/7/latest", adaptertest.ProviderFile(t, "openaq/v3_parameters_2_latest.json"))
	if err != nil || len(b.Observations) != 0 || adaptertest.Reasons(b)[batch.ReasonUnsupportedParam] != 7 {
		t.Errorf("unknown parameter id: %v, %v", adaptertest.Reasons(b), err)
	}
}
