package store

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/runtime/qc"
)

// The hand-written encoder must give the bytes encoding/json gives, or stored readings
// would change with the code path that wrote them.
func TestMeasEncoderMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	values := []float64{0, -0.5, 1, 12.3456, 1015.2, 1e-7, 3.2e-12, 1e21, 123456789.125, -273.15, math.SmallestNonzeroFloat64, 99999.9999, 0.1 + 0.2}
	units := []string{"degC", "µg/m³", "wmoUnit:km_h-1", `we"ird<&>`, "", "m/s"}
	e := newMeasEncoder()
	for i, v := range values {
		ms := []canon.Measurement{
			{Parameter: canon.PM25, Value: v, Unit: canon.UgPerM3, UnitOriginal: units[i%len(units)], ValueOriginal: -v},
			{Parameter: canon.AirTemperatureC, Value: v / 3, Unit: canon.Celsius, UnitOriginal: units[(i+1)%len(units)], ValueOriginal: v * 7},
		}
		want, _ := json.Marshal(ms)
		got, err := e.encode(nil, ms, nil)
		if err != nil || string(got) != string(want) {
			t.Fatalf("value %g:\n got %s (%v)\nwant %s", v, got, err, want)
		}
	}
	for _, ms := range [][]canon.Measurement{nil, {}} {
		got, _ := e.encode(nil, ms, nil)
		if string(got) != "[]" {
			t.Fatalf("empty: %s", got)
		}
	}
	if _, err := e.encode(nil, []canon.Measurement{{Value: math.NaN()}}, nil); err == nil {
		t.Fatal("NaN encoded without error")
	}
}

// The fast decoder must give what encoding/json gives, for the encoder's output and for
// any other valid JSON of measurements (which it hands to encoding/json).
func TestMeasDecoderMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	values := []float64{0, -0.5, 1, 12.3456, 1015.2, 1e-7, 3.2e-12, 1e21, 123456789.125, -273.15, math.SmallestNonzeroFloat64, 99999.9999, 0.1 + 0.2}
	units := []string{"degC", "µg/m³", "wmoUnit:km_h-1", `we"ird<&>`, "", "m/s", "tab\there"}
	e, d := newMeasEncoder(), NewMeasDecoder()
	var docs [][]byte
	for i, v := range values {
		ms := []canon.Measurement{
			{Parameter: canon.PM25, Value: v, Unit: canon.UgPerM3, UnitOriginal: units[i%len(units)], ValueOriginal: -v},
			{Parameter: canon.AirTemperatureC, Value: v / 3, Unit: canon.Celsius, UnitOriginal: units[(i+1)%len(units)], ValueOriginal: v * 7},
		}
		b, err := e.encode(nil, ms, nil)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	docs = append(docs, []byte(`[]`), []byte(` [ ] `),
		[]byte(`[{"value":2,"parameter":"pm25_ugm3","unit":"µg/m³","unit_original":"ug/m3","value_original":2}]`),
		[]byte(`[{"parameter":"pm25_ugm3","value":2, "unit":"u","unit_original":"u","value_original":2E1}]`),
		[]byte(`[{"parameter":"a\u00b5","value":1,"unit":"u","unit_original":"u","value_original":1}]`))
	var buf []canon.Measurement
	for _, b := range docs {
		var want []canon.Measurement
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		got, err := d.Decode(buf, b)
		if err != nil || len(got) != len(want) {
			t.Fatalf("%s: got %+v (%v), want %+v", b, got, err, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: measurement %d = %+v, want %+v", b, i, got[i], want[i])
			}
		}
		buf = got
	}
	for _, bad := range []string{`[`, `[{"parameter":"x","value":1,"unit":"u","unit_original":"u","value_original":1}`, `{}`, `[{"parameter":"x","value":1e999}]`} {
		if _, err := d.Decode(nil, []byte(bad)); err == nil {
			t.Errorf("%s decoded without error", bad)
		}
	}
}

func BenchmarkMeasDecode(b *testing.B) {
	ms := []canon.Measurement{
		{Parameter: canon.WindDirectionDeg, Value: 350, Unit: canon.Degrees, UnitOriginal: "degT", ValueOriginal: 350},
		{Parameter: canon.WindSpeedMS, Value: 6.2, Unit: canon.MetersPerSec, UnitOriginal: "m/s", ValueOriginal: 6.2},
		{Parameter: canon.WaveHeightM, Value: 1.4, Unit: "m", UnitOriginal: "m", ValueOriginal: 1.4},
		{Parameter: canon.AirPressureHPa, Value: 1015.2, Unit: "hPa", UnitOriginal: "hPa", ValueOriginal: 1015.2},
		{Parameter: canon.AirTemperatureC, Value: 21.3, Unit: canon.Celsius, UnitOriginal: "degC", ValueOriginal: 21.3},
		{Parameter: canon.WaterTemperatureC, Value: 24.1, Unit: canon.Celsius, UnitOriginal: "degC", ValueOriginal: 24.1},
	}
	doc, _ := newMeasEncoder().encode(nil, ms, nil)
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var out []canon.Measurement
			if err := json.Unmarshal(doc, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("MeasDecoder", func(b *testing.B) {
		b.ReportAllocs()
		d := NewMeasDecoder()
		var out []canon.Measurement
		for range b.N {
			var err error
			if out, err = d.Decode(out, doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Qualities round-trip through the encoder and both decoders exactly as encoding/json
// writes and reads them; readings stored before flags read back as not evaluated.
func TestQualityEncoding(t *testing.T) {
	t.Parallel()
	qcs := []*canon.QC{nil, {Flag: 1, Failed: []string{}}, {Flag: 4, Failed: []string{canon.TestSpike, canon.TestRateOfChange}},
		{Flag: 2, Failed: []string{canon.ProviderPreliminary}}}
	e, d := newMeasEncoder(), NewMeasDecoder()
	var ms []canon.Measurement
	for i, q := range qcs {
		ms = append(ms, canon.Measurement{Parameter: canon.WaterTemperatureC, Value: float64(i), Unit: canon.Celsius, UnitOriginal: "degC", ValueOriginal: float64(i), QC: q})
	}
	want, _ := json.Marshal(ms)
	got, err := e.encode(nil, ms, nil)
	if err != nil || string(got) != string(want) {
		t.Fatalf("encode:\n got %s (%v)\nwant %s", got, err, want)
	}
	for round := 0; round < 2; round++ { // the second round reads interned qualities
		back, err := d.Decode(nil, got)
		if err != nil || len(back) != len(ms) {
			t.Fatalf("decode: %v %v", back, err)
		}
		again, _ := json.Marshal(back)
		if string(again) != string(want) {
			t.Fatalf("decode round trip:\n got %s\nwant %s", again, want)
		}
	}
	raw, ok := DecodeRawMeasurements(nil, got)
	if !ok || len(raw) != 4 || raw[0].Flag != 2 || raw[0].Failed != nil || raw[2].Flag != 4 || string(raw[2].Failed) != `["spike","rate_of_change"]` {
		t.Fatalf("raw decode: %v %+v", ok, raw)
	}
	// withQC: an old reading gains flag 2 in every measurement, escapes and braces in
	// strings included; a reading with qualities is returned as it is.
	old := []byte(`[{"parameter":"a","value":1,"unit":"x\"}{","unit_original":"y","value_original":1},{"parameter":"b","value":2,"unit":"","unit_original":"","value_original":2}]`)
	up := withQC(old)
	var dec []canon.Measurement
	if err := json.Unmarshal(up, &dec); err != nil || len(dec) != 2 || dec[0].Unit != `x"}{` || dec[0].QC == nil || dec[0].QC.Flag != 2 || dec[1].QC == nil || dec[1].QC.Failed == nil {
		t.Fatalf("withQC(old) = %s (%v)", up, err)
	}
	if b := withQC(got); &b[0] != &got[0] {
		t.Fatal("withQC copied a reading that has qualities")
	}
	if b := withQC([]byte(`[]`)); string(b) != `[]` {
		t.Fatalf("withQC([]) = %s", b)
	}
}

// A row's verdicts are written as the qualities Mark leaves when the tests mark the
// measurement itself (qc.Verdict.Apply, on a copy of the provider's quality): the same
// bytes for every provider mark and every verdict, and the same flag for the rollups.
func TestEncodeVerdictsAsMarked(t *testing.T) {
	t.Parallel()
	providers := []*canon.QC{nil, {Flag: canon.FlagPass, Failed: []string{}}, {Flag: canon.FlagNotEvaluated, Failed: []string{canon.ProviderPreliminary}},
		{Flag: canon.FlagSuspect, Failed: []string{canon.ProviderFlagged}}, {Flag: canon.FlagFail, Failed: []string{canon.ProviderRange, canon.TestSpike}},
		{Flag: canon.FlagMissing, Failed: nil}}
	e := newMeasEncoder()
	for _, pq := range providers {
		for flag := uint8(0); flag <= canon.FlagFail; flag++ {
			for failed := uint8(0); failed < 16; failed++ {
				if failed != 0 && flag < canon.FlagSuspect {
					continue // a flagged test makes the verdict suspect at least (none ran: 0)
				}
				d := qc.Verdict{Flag: flag, Failed: failed}
				m := canon.Measurement{Parameter: canon.WaterTemperatureC, Value: 20, Unit: canon.Celsius, UnitOriginal: "degC", ValueOriginal: 20, QC: pq}
				marked := m
				if pq != nil {
					q := *pq
					q.Failed = slices.Clone(q.Failed)
					marked.QC = &q
				}
				d.Apply(&marked)
				if marked.QC == nil {
					marked.Mark(canon.FlagNotEvaluated, "") // what the store does when no test ran
				}
				want, _ := e.encode(nil, []canon.Measurement{marked}, nil)
				got, err := e.encode(nil, []canon.Measurement{m}, []qc.Verdict{d})
				if err != nil || string(got) != string(want) {
					t.Fatalf("provider %+v, verdict %+v:\n got %s\nwant %s", pq, d, got, want)
				}
				if q := quality(&m, d); q != marked.QC.Flag {
					t.Fatalf("provider %+v, verdict %+v: flag %d, want %d", pq, d, q, marked.QC.Flag)
				}
				if pq != nil && (m.QC != pq || !slices.Equal(pq.Failed, providers[slices.Index(providers, pq)].Failed)) {
					t.Fatal("the provider's quality was changed")
				}
			}
		}
	}
}
