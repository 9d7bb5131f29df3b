package davis

import (
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

func TestParseCurrentGolden(t *testing.T) {
	t.Parallel()
	b, err := Adapter().Parse(observation.Payload{Format: FormatCurrent, Body: adaptertest.Testdata(t, "current_sample.json")})
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, b)
	if len(b.Observations) != 2 || len(b.Rejections) != 0 || len(b.Stations) != 2 {
		t.Fatalf("observations %d, stations %d, rejections %v; want both suites", len(b.Observations), len(b.Stations), adaptertest.Reasons(b))
	}
	// Read off the sample by hand (°F -> (x-32)*5/9, mph -> x*0.44704, inHg -> x*33.8638866667,
	// rounded to 4 places): ISS tx_id 1 (lsid 5271273): temp 73.3, hum 42.7, dew_point 49.3,
	// wind_speed_last 4 from wind_dir_last 195, 2-min avg 3.18 from 222, hi of 10 min 6;
	// barometer (lsid 5271271) bar_sea_level 29.61; ISS tx_id 2 (lsid 5271399): temp 73.6,
	// hum 53.7, dew_point 55.8, last 3.37 from 233, 2-min avg 2.56 from 237, hi 5.37. ts 1558741927.
	wants := map[string]map[string]float64{
		"374964": {canon.AirTemperatureC: 22.9444, canon.RelativeHumidityPercent: 42.7, canon.DewPointC: 9.6111,
			canon.WindSpeedMS: 1.7882, canon.WindDirectionDeg: 195, canon.WindSpeedAvg2MinMS: 1.4216, canon.WindDirectionAvg2MinDeg: 222,
			canon.WindGustMS: 2.6822, canon.AirPressureHPa: 1002.7097},
		"374964-tx2": {canon.AirTemperatureC: 23.1111, canon.RelativeHumidityPercent: 53.7, canon.DewPointC: 13.2222,
			canon.WindSpeedMS: 1.5065, canon.WindDirectionDeg: 233, canon.WindSpeedAvg2MinMS: 1.1444, canon.WindDirectionAvg2MinDeg: 237,
			canon.WindGustMS: 2.4006},
	}
	for _, o := range b.Observations {
		want := wants[o.StationID]
		if want == nil || !o.Time.Equal(time.Unix(1558741927, 0)) || len(o.Measurements) != len(want) {
			t.Fatalf("observation = %+v", o)
		}
		for _, m := range o.Measurements {
			if m.Value != want[m.Parameter] {
				t.Errorf("%s %s = %v, want %v", o.StationID, m.Parameter, m.Value, want[m.Parameter])
			}
		}
	}
	o := b.Observations[0]
	if !strings.HasPrefix(string(o.Raw), `{"station_id":374964,"sensors":[`) {
		t.Errorf("raw = %.80s", o.Raw)
	}
}

func TestParseCurrentBad(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `[]`, `{"sensors":[]}`, `{"station_id":"../1","sensors":[]}`} {
		if _, err := ParseCurrent([]byte(body)); err == nil {
			t.Errorf("%q: want an error", body)
		}
	}
	b, err := ParseCurrent([]byte(`{"station_id":1,"sensors":[{"lsid":1,"data":[{"ts":1558741927,"temp":300,"hum":40}]},{"lsid":2,"data":["x"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := adaptertest.Reasons(b)
	if len(b.Observations) != 1 || r["out_of_range"] != 1 || r[batch.ReasonMalformedRow] != 1 {
		t.Errorf("observations %d, rejections %v", len(b.Observations), r)
	}
	b, err = ParseCurrent([]byte(`{"station_id":1,"sensors":[{"lsid":1,"data":[{"temp":70}]}]}`))
	if err != nil || len(b.Observations) != 0 || adaptertest.Reasons(b)[batch.ReasonBadTimestamp] != 1 {
		t.Errorf("no ts: %+v, %v", b, err)
	}
}

func FuzzParseCurrent(f *testing.F) {
	s := adaptertest.Testdata(f, "current_sample.json")
	f.Add(s)
	f.Add(s[:len(s)/2])
	f.Add([]byte(strings.Replace(string(s), `"temp": 73.3`, `"temp": 1e308`, 1)))
	f.Add([]byte(strings.Replace(string(s), `"ts": 1558741927`, `"ts": -1e300`, 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := ParseCurrent(data); err == nil {
			adaptertest.CheckBatch(t, b)
		}
	})
}
