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
	b, err := Adapter{}.Parse(observation.Payload{Format: FormatCurrent, Body: adaptertest.Testdata(t, "current_sample.json")})
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, b)
	if len(b.Observations) != 1 || len(b.Rejections) != 0 {
		t.Fatalf("observations %d, rejections %v", len(b.Observations), adaptertest.Reasons(b))
	}
	o := b.Observations[0]
	// ISS tx_id 1 (lsid 5271273): temp 73.3 °F, hum 42.7, wind 2-min avg 3.18 mph from 222°;
	// barometer (lsid 5271271): bar_sea_level 29.61 inHg; ts 1558741927.
	want := map[string]float64{canon.AirTemperatureC: 22.9444, canon.RelativeHumidityPercent: 42.7, canon.WindSpeedMS: 1.4216, canon.WindDirectionDeg: 222, canon.AirPressureHPa: 1002.7097}
	if o.StationID != "374964" || !o.Time.Equal(time.Unix(1558741927, 0)) || len(o.Measurements) != len(want) {
		t.Fatalf("observation = %+v", o)
	}
	for _, m := range o.Measurements {
		if m.Value != want[m.Parameter] {
			t.Errorf("%s = %v, want %v", m.Parameter, m.Value, want[m.Parameter])
		}
	}
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
