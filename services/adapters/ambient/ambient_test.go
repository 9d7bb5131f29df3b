package ambient

import (
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

func TestParseDeviceDataGolden(t *testing.T) {
	t.Parallel()
	b, err := Adapter().Parse(observation.Payload{Format: FormatDeviceData, StationID: "aa:bb:cc:dd:ee:ff", Body: adaptertest.Testdata(t, "ambient_device_details_response.json")})
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, b)
	if len(b.Observations) != 2 || len(b.Rejections) != 0 {
		t.Fatalf("observations %d, rejections %v", len(b.Observations), adaptertest.Reasons(b))
	}
	o := b.Observations[0]
	// dateutc 1547094300000, tempf 34, humidity 49, windspeedmph 1.6, winddir 344, baromrelin
	// 30.38, windgustmph 2.2, dewPoint 16.87 (read off the file by hand)
	want := map[string]float64{
		canon.WindGustMS:              0.9835,    // 2.2 * 0.44704
		canon.DewPointC:               -8.4056,   // (16.87-32)*5/9
		canon.AirTemperatureC:         1.1111,    // (34-32)*5/9
		canon.RelativeHumidityPercent: 49,        //
		canon.WindSpeedMS:             0.7153,    // 1.6 * 0.44704
		canon.WindDirectionDeg:        344,       //
		canon.AirPressureHPa:          1028.7849, // 30.38 * 33.8639
	}
	if o.StationID != "AA:BB:CC:DD:EE:FF" || !o.Time.Equal(time.Date(2019, 1, 10, 4, 25, 0, 0, time.UTC)) || len(o.Measurements) != len(want) {
		t.Fatalf("observation = %+v", o)
	}
	units := map[string]string{canon.AirTemperatureC: "degF", canon.WindSpeedMS: "mph", canon.AirPressureHPa: "inHg"}
	for _, m := range o.Measurements {
		if m.Value != want[m.Parameter] {
			t.Errorf("%s = %v, want %v", m.Parameter, m.Value, want[m.Parameter])
		}
		if u, ok := units[m.Parameter]; ok && m.UnitOriginal != u {
			t.Errorf("%s unit_original = %q, want %q", m.Parameter, m.UnitOriginal, u)
		}
	}
	if v, _ := adaptertest.Value(b.Observations[1], canon.WindSpeedMS); v != 0 || !b.Observations[1].Time.Equal(time.Date(2019, 1, 10, 4, 20, 0, 0, time.UTC)) {
		t.Errorf("second record = %+v", b.Observations[1])
	}
	if !strings.HasPrefix(string(o.Raw), `{"dateutc":1547094300000,"winddir":344,"windspeedmph":1.6`) {
		t.Errorf("raw = %s", o.Raw)
	}
	if s := b.Stations[0]; s.ExternalID != "AA:BB:CC:DD:EE:FF" || s.ReportingIntervalS != 300 || len(s.DataTypes) != 7 {
		t.Errorf("station = %+v", s)
	}
}

func TestParseDevicesGolden(t *testing.T) {
	t.Parallel()
	b, err := Adapter().Parse(observation.Payload{Format: FormatDevices, Body: adaptertest.Testdata(t, "ambient_device_details_open_response.json")})
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, b)
	if len(b.Observations) != 1 || len(b.Stations) != 1 || len(b.Rejections) != 0 {
		t.Fatalf("observations %d, stations %d, rejections %v", len(b.Observations), len(b.Stations), adaptertest.Reasons(b))
	}
	o := b.Observations[0]
	// lastData: dateutc 1699474320000, tempf 82.9, humidity 60, windspeedmph 8.72, winddir 11, baromrelin 29.586
	for p, want := range map[string]float64{canon.AirTemperatureC: 28.2778, canon.RelativeHumidityPercent: 60, canon.WindSpeedMS: 3.8982, canon.WindDirectionDeg: 11, canon.AirPressureHPa: 1001.897} {
		if v, ok := adaptertest.Value(o, p); !ok || v != want {
			t.Errorf("%s = %v, want %v", p, v, want)
		}
	}
	s := b.Stations[0]
	if !o.Time.Equal(time.Date(2023, 11, 8, 20, 12, 0, 0, time.UTC)) || s.ExternalID != "AA:AA:AA:AA:AA:AA" || s.Name != "Station A" || *s.Latitude != 32 || *s.Longitude != -97 || *o.Lat != 32 {
		t.Errorf("observation %s, station %+v", o.Time, s)
	}
}

func TestParseBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, format, station, body string
		err                         bool
		obs                         int
		reasons                     map[string]int
	}{
		{name: "no mac", format: FormatDeviceData, body: `[]`, err: true},
		{name: "object for device data", format: FormatDeviceData, station: "AA", body: `{"error":"apiKey required"}`, err: true},
		{name: "api error", format: FormatDevices, body: `{"error":"applicationKey-invalid"}`, err: true},
		{name: "not json", format: FormatDevices, body: `<html>`, err: true},
		{name: "records", format: FormatDeviceData, station: "AA:01", body: `[
			{"dateutc":1547094300000,"tempf":34,"humidity":140,"windspeedmph":"calm"},
			{"dateutc":1547094000000,"tempf":999,"humidity":50,"baromrelin":30.1},
			{"tempf":34},
			{"dateutc":1547093700000,"solarradiation":0},
			{"dateutc":1547094000000,"tempf":30}]`, obs: 1, reasons: map[string]int{batch.ReasonMalformedRow: 1, "out_of_range": 1, batch.ReasonBadTimestamp: 1, batch.ReasonNoMeasurements: 1, batch.ReasonDuplicate: 1}},
		{name: "devices", format: FormatDevices, body: `[{"macAddress":"","lastData":{"dateutc":1,"tempf":50}},{"macAddress":"aa:02","info":{"coords":{"coords":{"lat":100,"lon":0}}},"lastData":{"dateutc":1699474320000,"tempf":50}},{"macAddress":"aa:03"}]`,
			obs: 1, reasons: map[string]int{batch.ReasonMissingStation: 1, batch.ReasonBadCoordinates: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := Adapter().Parse(observation.Payload{Format: tt.format, StationID: tt.station, Body: []byte(tt.body)})
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

func TestSimulate(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	to := from.Add(2 * 24 * time.Hour)
	cfg := observation.SimConfig{Seed: 2, Stations: 10, QuietFraction: 0.3, QuietAfter: from.Add(24 * time.Hour)}
	a := Adapter()
	meta, err := a.Simulator.SimStations(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := a.Parse(meta[0])
	if err != nil || len(sb.Stations) != 10 {
		t.Fatalf("stations: %+v, %v", sb, err)
	}
	ids := map[string]bool{}
	for _, s := range sb.Stations {
		ids[s.ExternalID] = true
		if s.Latitude == nil || *s.Latitude < 25 || *s.Latitude > 50 {
			t.Errorf("station %+v", s)
		}
	}
	ps, err := a.Simulator.Simulate(cfg, from, to)
	if err != nil {
		t.Fatal(err)
	}
	quiet, partial := 0, 0
	for _, p := range ps {
		if !strings.Contains(string(p.Body), `"tempf":`) || strings.Contains(string(p.Body), `"tempc"`) {
			t.Fatal("simulated records must be imperial")
		}
		b, err := a.Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		adaptertest.CheckBatch(t, b)
		if !ids[p.StationID] || len(b.Rejections) != 0 {
			t.Errorf("%s: known %v, rejections %v", p.StationID, ids[p.StationID], adaptertest.Reasons(b))
		}
		last := time.Time{}
		for _, o := range b.Observations {
			if o.Time.After(last) {
				last = o.Time
			}
			if len(o.Measurements) < 5 {
				partial++
			}
			// Each device keeps its own upload minute of the five, on whole minutes.
			if o.Time.Second() != 0 || o.Time.Minute()%5 != b.Observations[0].Time.Minute()%5 {
				t.Fatalf("record at %s is off the device's 5-minute grid (first at %s)", o.Time, b.Observations[0].Time)
			}
		}
		if last.Before(cfg.QuietAfter) {
			quiet++
		}
	}
	if quiet == 0 || partial == 0 {
		t.Errorf("quiet stations %d, records with a sensor missing %d", quiet, partial)
	}
}
