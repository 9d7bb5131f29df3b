package metar

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

const (
	addsFile = "imperial_station/awc_adds_metars_washington_2018-01-11.json"
	textFile = "imperial_station/awc_metar_raw_text_washington_2018-01-11.txt"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		text string
		want Report
	}{
		// T group wins over the whole degrees: 1.0 / 0.7 °C, not 01/01.
		{"K1S5 111515Z AUTO 00000KT 5SM -RA OVC042 01/01 A2997 RMK AO2 P0001 T00100007",
			Report{Station: "K1S5", Day: 11, Hour: 15, Minute: 15, TempC: f(1.0), DewC: f(0.7), TempField: "T group", WindSpeed: f(0), WindUnit: "kt", VisSM: f(5), AltimInHg: f(29.97)}},
		// M negatives, fraction after a whole number, T group negatives (1 = minus).
		{"KEAT 111515Z AUTO 00000KT 1 1/2SM -SN BR BKN004 OVC018 M01/M01 A2997 RMK AO2 P0001 T10061006",
			Report{Station: "KEAT", Day: 11, Hour: 15, Minute: 15, TempC: f(-0.6), DewC: f(-0.6), TempField: "T group", WindSpeed: f(0), WindUnit: "kt", VisSM: f(1.5), AltimInHg: f(29.97)}},
		// VRB: a speed, no direction; the body temperature group without T group.
		{"KCLS 111455Z AUTO VRB03KT 5SM -RA 08/07 A2981 RMK AO2 P0001",
			Report{Station: "KCLS", Day: 11, Hour: 14, Minute: 55, TempC: f(8), DewC: f(7), TempField: "TT/DD", WindSpeed: f(3), WindUnit: "kt", Variable: true, VisSM: f(5), AltimInHg: f(29.81)}},
		// Gust, 3-hour tendency 58056: falling 5.6 hPa.
		{"KKLS 111456Z AUTO 16013G18KT 10SM RA OVC012 09/09 A2981 RMK AO2 PRESFR SLP100 P0007 60014 T00940089 58056",
			Report{Station: "KKLS", Day: 11, Hour: 14, Minute: 56, TempC: f(9.4), DewC: f(8.9), TempField: "T group", WindDirDeg: f(160), WindSpeed: f(13), WindGust: f(18), WindUnit: "kt", VisSM: f(10), AltimInHg: f(29.81), TendencyHPa: f(-5.6)}},
		// Outside the US: m/s wind, Q group hPa, a bounded visibility.
		{"METAR EGLL 311250Z 24008MPS P6SM 12/M02 Q1013",
			Report{Station: "EGLL", Day: 31, Hour: 12, Minute: 50, TempC: f(12), DewC: f(-2), TempField: "TT/DD", WindDirDeg: f(240), WindSpeed: f(8), WindUnit: "m/s", VisSM: f(6), VisBounded: true, AltimHPa: f(1013)}},
	}
	for _, tt := range tests {
		got, err := Decode(tt.text)
		if err != nil {
			t.Fatalf("%s: %v", tt.text, err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(tt.want)
		if string(g) != string(w) {
			t.Errorf("Decode(%q)\n got %s\nwant %s", tt.text, g, w)
		}
	}
	for _, bad := range []string{"", "k1yt 111516Z", "K1YT", "K1YT 1115Z 00000KT"} {
		if _, err := Decode(bad); err == nil {
			t.Errorf("Decode(%q): want an error", bad)
		}
	}
}

// TestADDSAgreesWithItsOwnDecoding checks the decoder against a second one: AWC decoded
// every recorded report itself (temp_c, dewpoint_c, wind_*, visibility_statute_mi,
// altim_in_hg). For all 89 records our values must equal AWC's after the same unit rule,
// except a VRB wind, to which AWC gives the direction 0.
func TestADDSAgreesWithItsOwnDecoding(t *testing.T) {
	t.Parallel()
	data := adaptertest.ProviderFile(t, addsFile)
	b, err := Adapter().Parse(observation.Payload{Format: FormatADDSJSON, Body: data})
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, b)
	if len(b.Observations) != 89 || len(b.Rejections) != 0 {
		t.Fatalf("observations %d, rejections %v; want 89, none", len(b.Observations), adaptertest.Reasons(b))
	}
	var doc struct {
		Data struct {
			METAR []map[string]any `json:"METAR"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	num := func(rec map[string]any, k string) (float64, bool) {
		s, ok := rec[k].(string)
		if !ok {
			return 0, false
		}
		v, err := strconv.ParseFloat(s, 64)
		return v, err == nil
	}
	conv := func(param string, v float64, unit string) float64 {
		m, err := canon.Normalize(param, v, unit)
		if err != nil {
			t.Fatalf("%s %v %s: %v", param, v, unit, err)
		}
		return m.Value
	}
	checks := []struct{ field, param, unit string }{
		{"temp_c", canon.AirTemperatureC, "degC"}, {"dewpoint_c", canon.DewPointC, "degC"},
		{"wind_speed_kt", canon.WindSpeedMS, "kt"}, {"wind_gust_kt", canon.WindGustMS, "kt"},
		{"visibility_statute_mi", canon.VisibilityM, "mi"}, {"altim_in_hg", canon.AirPressureHPa, "inHg"},
		{"wind_dir_degrees", canon.WindDirectionDeg, "deg"},
	}
	compared := 0
	for i, rec := range doc.Data.METAR {
		o := b.Observations[i]
		if o.StationID != rec["station_id"] {
			t.Fatalf("record %d is %v, observation %s", i, rec["station_id"], o.StationID)
		}
		for _, c := range checks {
			want, ok := num(rec, c.field)
			got, have := adaptertest.Value(o, c.param)
			if c.field == "wind_dir_degrees" && ok && want == 0 {
				// Calm or VRB: AWC writes 0, the report gives no direction.
				if have {
					t.Errorf("%s: direction %v for a calm or variable wind", o.StationID, got)
				}
				continue
			}
			if !ok {
				if have {
					t.Errorf("%s: %s = %v, AWC has none", o.StationID, c.param, got)
				}
				continue
			}
			// AWC's altim_in_hg is itself converted back from hPa (29.920275): compare at
			// the report's 0.01 inHg.
			if c.field == "altim_in_hg" {
				want = math.Round(want*100) / 100
			}
			tol := 1e-9
			if c.field == "visibility_statute_mi" {
				tol = 0.005 * 1609.344 // AWC rounds 1 3/8 SM to 1.38
			}
			if w := conv(c.param, want, c.unit); !have || math.Abs(got-w) > tol {
				t.Errorf("%s: %s = %v (%v), AWC %s %v -> %v", o.StationID, c.param, got, have, c.field, want, w)
			}
			compared++
		}
	}
	if compared < 89*4 {
		t.Errorf("only %d values compared", compared)
	}
}

// TestTextDatedFromReference: the raw text file names day, hour and minute only; the date
// in the file's name (2018-01-11) gives year and month. K1YT 111516Z is 2018-01-11 15:16Z;
// its A2992 is 29.92 inHg = 1013.2075 hPa, 20003KT 3 kt = 1.5433 m/s from 200°, 10SM =
// 16093.44 m, 01/M01 = 1 °C / -1 °C (no T group in that report).
func TestTextDatedFromReference(t *testing.T) {
	t.Parallel()
	ref := time.Date(2018, 1, 11, 0, 0, 0, 0, time.UTC)
	b, err := Adapter().Parse(observation.Payload{Format: FormatText, Body: adaptertest.ProviderFile(t, textFile), Reference: ref})
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, b)
	if len(b.Observations) != 89 || len(b.Rejections) != 0 {
		t.Fatalf("observations %d, rejections %v", len(b.Observations), adaptertest.Reasons(b))
	}
	o := b.Observations[0]
	want := map[string]float64{canon.AirPressureHPa: 1013.2075, canon.WindSpeedMS: 1.5433, canon.WindDirectionDeg: 200,
		canon.VisibilityM: 16093.44, canon.AirTemperatureC: 1, canon.DewPointC: -1}
	if o.StationID != "K1YT" || !o.Time.Equal(time.Date(2018, 1, 11, 15, 16, 0, 0, time.UTC)) || len(o.Measurements) != len(want) {
		t.Fatalf("first = %+v", o)
	}
	for _, m := range o.Measurements {
		if m.Value != want[m.Parameter] {
			t.Errorf("%s = %v, want %v", m.Parameter, m.Value, want[m.Parameter])
		}
	}
	// The text and the JSON give the same readings.
	j, err := ParseADDSJSON(adaptertest.ProviderFile(t, addsFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range b.Observations {
		a, c := b.Observations[i], j.Observations[i]
		ga, _ := json.Marshal(a.Measurements)
		gc, _ := json.Marshal(c.Measurements)
		if a.StationID != c.StationID || !a.Time.Equal(c.Time) || string(ga) != string(gc) {
			t.Errorf("line %d: text %s %s %s, JSON %s %s %s", i+1, a.StationID, a.Time, ga, c.StationID, c.Time, gc)
		}
	}
	// Without a reference the text cannot be dated.
	if _, err := Adapter().Parse(observation.Payload{Format: FormatText, Body: []byte("K1YT 111516Z 20003KT")}); err == nil {
		t.Error("no reference: want an error")
	}
}

func TestTimeIn(t *testing.T) {
	t.Parallel()
	ref := time.Date(2018, 3, 1, 2, 0, 0, 0, time.UTC)
	// The 28th read on 1 March is February's; the 1st is March's; 31 February does not exist.
	for _, tc := range []struct {
		day  int
		want time.Time
		err  bool
	}{{28, time.Date(2018, 2, 28, 12, 0, 0, 0, time.UTC), false}, {1, time.Date(2018, 3, 1, 12, 0, 0, 0, time.UTC), false}, {31, time.Time{}, true}} {
		got, err := Report{Station: "KXYZ", Day: tc.day, Hour: 12}.timeIn(ref)
		if (err != nil) != tc.err || !got.Equal(tc.want) {
			t.Errorf("day %d: %v, %v; want %v", tc.day, got, err, tc.want)
		}
	}
}

func TestBadPayloads(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `{}`, `[1]`, `{"data":{"METAR":"x"}}`} {
		if _, err := ParseADDSJSON([]byte(body)); err == nil {
			t.Errorf("%q: want an error", body)
		}
	}
	b, err := ParseADDSJSON([]byte(`{"data":{"METAR":[
		{"raw_text":"KAAA 111516Z 20003KT M1/4SM 01/M01 A2992","station_id":"KAAA","observation_time":"2018-01-11T15:16:00Z","latitude":"46","longitude":"-120"},
		{"raw_text":"KBBB 111516Z 20003KT 10SM 01/M01 A2992","station_id":"KBBB","observation_time":"2018-01-11T15:17:00Z"},
		{"raw_text":"garbage","station_id":"KCCC"},
		{"raw_text":"KDDD 111516Z 20003KT 10SM 99/M01 A9999","station_id":"KDDD","observation_time":"2018-01-11T15:16:00Z","latitude":"95","longitude":"0"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckCounts(t, b, 2, map[string]int{ReasonBoundedValue: 1, batch.ReasonBadTimestamp: 1, batch.ReasonMalformedRow: 1,
		"out_of_range": 2, batch.ReasonBadCoordinates: 1})
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("K1YT 111516Z AUTO 20003KT 10SM -RA OVC023 01/M01 A2992 RMK AO2 T00100007 58014"), true)
	f.Add(adaptertest.ProviderFile(f, textFile), true)
	f.Add(adaptertest.ProviderFile(f, addsFile), false)
	f.Add([]byte(`{"data":{"METAR":{"raw_text":"K1 1Z","observation_time":"x"}}}`), false)
	f.Fuzz(func(t *testing.T, data []byte, text bool) {
		var b observation.Batch
		var err error
		if text {
			b, err = ParseText(data, time.Date(2018, 1, 11, 0, 0, 0, 0, time.UTC))
		} else {
			b, err = ParseADDSJSON(data)
		}
		if err == nil {
			adaptertest.CheckBatch(t, b)
		}
	})
}
