package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// TestCSVExportMatchesEncodingCSV: the export's CSV rows (appended by hand, numbers
// copied as stored when they are already the CSV's spelling) are byte for byte what
// encoding/csv wrote from the decoded measurements before (formats.CSVWriter.ReadingRows),
// for the store's JSON shape, for JSON of another shape (escapes, another key order,
// spaces), for numbers of every magnitude and precision, odd strings, and parameter=
// filters (each measurement once, also when a parameter is named twice, as on pages).
func TestCSVExportMatchesEncodingCSV(t *testing.T) {
	rand := rand.New(rand.NewPCG(7, 8))
	strs := []string{"m/s", "degC", "hPa", "a,b", `q"uote`, " lead", "ünit", "\u2003em", `\.`, "", "x\ny"}
	params := []string{canon.WindSpeedMS, canon.WaveHeightM, canon.AirPressureHPa, canon.AirTemperatureC}
	num := func() float64 {
		switch rand.IntN(4) {
		case 0:
			return math.Round(rand.Float64()*20000) / 100
		case 1:
			return rand.Float64() * 1000 / 3
		case 2:
			return math.Float64frombits(rand.Uint64() & 0x7fefffffffffffff)
		}
		return 0
	}
	var readings []store.Reading
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3000 {
		ms := make([]canon.Measurement, rand.IntN(7))
		for j := range ms {
			ms[j] = canon.Measurement{Parameter: params[rand.IntN(len(params))], Value: num(), Unit: strs[rand.IntN(len(strs))],
				UnitOriginal: strs[rand.IntN(len(strs))], ValueOriginal: -num()}
		}
		var b []byte
		switch i % 4 {
		case 0, 1: // the store's own shape (as its encoder writes it: encoding/json's bytes)
			b, _ = json.Marshal(ms)
		case 2: // JSON of another shape: indented
			b, _ = json.MarshalIndent(ms, "", " ")
		default: // numbers spelled otherwise
			var buf bytes.Buffer
			buf.WriteByte('[')
			for j, m := range ms {
				if j > 0 {
					buf.WriteByte(',')
				}
				p, _ := json.Marshal(m.Parameter)
				u, _ := json.Marshal(m.Unit)
				uo, _ := json.Marshal(m.UnitOriginal)
				fmt.Fprintf(&buf, `{"parameter":%s,"value":%s,"unit":%s,"unit_original":%s,"value_original":%s}`,
					p, []string{"1.50", "1e2", "-0.0", "0.50", "0.1000000000000000055", "12345678901234567"}[rand.IntN(6)], u, uo,
					formats.Float(m.ValueOriginal))
			}
			buf.WriteByte(']')
			b = buf.Bytes()
		}
		readings = append(readings, store.Reading{Time: t0.Add(time.Duration(i) * time.Minute), Measurements: b})
	}
	st := contract.Station{ExternalID: `ST,"1"`}
	for _, params := range [][]string{nil, {canon.WindSpeedMS}, {canon.WaveHeightM, canon.WaveHeightM, canon.AirPressureHPa}} {
		q := contract.ReadingsQuery{Parameters: params}
		var want bytes.Buffer
		c, err := formats.NewCSV(&want, formats.ReadingHeader)
		if err != nil {
			t.Fatal(err)
		}
		dec := store.NewMeasDecoder()
		for _, r := range readings {
			ms, err := dec.Decode(nil, r.Measurements)
			if err != nil {
				t.Fatal(err)
			}
			keep := ms
			if params != nil {
				keep = nil
				for _, m := range ms {
					if slices.Contains(params, m.Parameter) {
						keep = append(keep, m)
					}
				}
			}
			if err := c.ReadingRows("sensor-1", st.ExternalID, contract.FormatTime(r.Time), keep); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		e := newCSVExport(w, true, false)
		for _, r := range readings {
			if err := e.reading("sensor-1", st, r, q); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.flush(); err != nil {
			t.Fatal(err)
		}
		if got := w.Body.Bytes(); !bytes.Equal(got, want.Bytes()) {
			gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want.Bytes(), []byte("\n"))
			for i := range min(len(gl), len(wl)) {
				if !bytes.Equal(gl[i], wl[i]) {
					t.Fatalf("parameters %v, line %d:\n got %s\nwant %s", params, i+1, gl[i], wl[i])
				}
			}
			t.Fatalf("parameters %v: %d lines, want %d", params, len(gl), len(wl))
		}
	}
}
