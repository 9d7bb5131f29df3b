package contract

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func latestSample() LatestBatchResponse {
	ts := Time{Time: time.Date(2026, 11, 25, 21, 15, 0, 123e6, time.UTC)}
	fetched := Time{Time: ts.Add(90 * time.Second)}
	return LatestBatchResponse{ServiceID: "ocean", ServerTime: Time{Time: time.Date(2026, 11, 25, 22, 0, 0, 999999999, time.FixedZone("x", 3600))},
		Items: []LatestItem{
			{ExternalID: "41002", ReportingIntervalS: 600, Timestamp: &ts, FetchedAt: &fetched,
				Measurements: json.RawMessage(`[{"parameter":"air_temperature","value":21.5,"unit":"degC","unit_original":"degC","value_original":21.5}]`)},
			{ExternalID: "BR:São Paulo Synthetic Monitor 1", ReportingIntervalS: 0, Measurements: json.RawMessage(`[]`)},
			{ExternalID: "odd", ReportingIntervalS: -5, Timestamp: &ts, Measurements: json.RawMessage(" [ {\"unit\" : \"<m s-1>\u2028\"} ] ")},
			{ExternalID: "nil-meas", Measurements: nil},
		}}
}

func TestAppendLatestBatchMatchesMarshal(t *testing.T) {
	for _, r := range []LatestBatchResponse{latestSample(), {ServiceID: "x"}, {ServiceID: "x", Items: []LatestItem{}}} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendLatestBatch(nil, &r)
		if err != nil || string(got) != string(want) {
			t.Errorf("AppendLatestBatch = %s, %v\njson.Marshal gives %s", got, err, want)
		}
	}
	bad := latestSample()
	bad.Items[0].Measurements = json.RawMessage(`[{"a":}]`)
	if _, err := AppendLatestBatch(nil, &bad); err == nil {
		t.Error("invalid measurements: no error, json.Marshal fails")
	}
}

// checkDecode compares DecodeLatestBatch with json.Unmarshal on data.
func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	var want, got LatestBatchResponse
	werr := json.Unmarshal(data, &want)
	gerr := DecodeLatestBatch(data, &got)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("DecodeLatestBatch(%q) error %v, json.Unmarshal error %v", data, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(norm(got), norm(want)) {
		t.Fatalf("DecodeLatestBatch(%q)\n = %+v\njson.Unmarshal gives %+v", data, got, want)
	}
}

// norm makes decoded answers comparable with reflect.DeepEqual: times by instant and
// location name, raw values as strings (one is a slice of the input, the other a copy).
func norm(r LatestBatchResponse) any {
	type item struct {
		ID        string
		Interval  int
		TS, Fetch string
		Meas      string
		MeasNil   bool
	}
	ft := func(t *Time) string {
		if t == nil {
			return "<nil>"
		}
		return t.Format(time.RFC3339Nano) + " " + t.Location().String()
	}
	var items []item
	for _, it := range r.Items {
		items = append(items, item{it.ExternalID, it.ReportingIntervalS, ft(it.Timestamp), ft(it.FetchedAt), string(it.Measurements), it.Measurements == nil})
	}
	return []any{r.ServiceID, ft(&r.ServerTime), items, r.Items == nil}
}

func TestDecodeLatestBatchMatchesUnmarshal(t *testing.T) {
	r := latestSample()
	canonical, err := AppendLatestBatch(nil, &r)
	if err != nil {
		t.Fatal(err)
	}
	var fast LatestBatchResponse
	if _, ok := decodeLatestBatch(canonical); !ok {
		t.Fatalf("the canonical form %s is not read by the direct decoder", canonical)
	}
	checkDecode(t, canonical)
	if err := DecodeLatestBatch(canonical, &fast); err != nil || len(fast.Items) != 4 || string(fast.Items[2].Measurements) != `[{"unit":"\u003cm s-1\u003e\u2028"}]` {
		t.Errorf("decoded %+v, %v", fast, err)
	}
	s := string(canonical)
	for _, variant := range []string{
		s,
		strings.Replace(s, `"items":[`, `"items": [`, 1),
		strings.Replace(s, `"external_id":"odd"`, `"external_id":"odd\u003c&\u003e"`, 1),
		strings.Replace(s, `"reporting_interval_s":600`, `"reporting_interval_s":600.5`, 1),
		strings.Replace(s, `"reporting_interval_s":600`, `"reporting_interval_s":6e2`, 1),
		strings.Replace(s, `"reporting_interval_s":600`, `"reporting_interval_s":99999999999999999999`, 1),
		strings.Replace(s, `"external_id":"41002"`, `"external_id":"41\u0030\n02"`, 1),
		strings.Replace(s, `"external_id":"41002"`, `"external_id":"41002","extra":1`, 1),
		strings.Replace(s, `"timestamp":"2026-11-25T21:15:00.123Z"`, `"timestamp":"2026-11-25T22:15:00.123+01:00"`, 1),
		strings.Replace(s, `"timestamp":"2026-11-25T21:15:00.123Z"`, `"timestamp":"yesterday"`, 1),
		strings.Replace(s, `"timestamp":"2026-11-25T21:15:00.123Z"`, `"timestamp":""`, 1),
		strings.Replace(s, `"timestamp":"2026-11-25T21:15:00.123Z"`, `"timestamp":"null"`, 1),
		strings.Replace(s, `"server_time":"`, `"server_time":null,"x":"`, 1),
		strings.Replace(s, `"measurements":[]`, `"measurements":null`, 1),
		strings.Replace(s, `"measurements":[]`, `"measurements":[1,]`, 1),
		strings.Replace(s, `"measurements":[]`, `"measurements":{"a":[true,false,null,-0.5e3]}`, 1),
		strings.Replace(s, `"São`, "\"S\xffo", 1),
		s[:len(s)-1], s + " ", s + "x", `{"service_id":"a","server_time":"2026-01-01T00:00:00.000Z","items":[]}`,
		`{"service_id":"a","server_time":"2026-01-01T00:00:00.000Z","items":null}`, `{}`, `null`, ``,
	} {
		checkDecode(t, []byte(variant))
	}
}

func FuzzDecodeLatestBatch(f *testing.F) {
	r := latestSample()
	canonical, _ := AppendLatestBatch(nil, &r)
	f.Add(canonical)
	f.Add([]byte(`{"service_id":"a","server_time":"2026-01-01T00:00:00.000Z","items":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		var got LatestBatchResponse
		if DecodeLatestBatch(data, &got) == nil {
			// What decodes encodes as json.Marshal would.
			want, werr := json.Marshal(got)
			enc, err := AppendLatestBatch(nil, &got)
			if (err != nil) != (werr != nil) || err == nil && string(enc) != string(want) {
				t.Fatalf("AppendLatestBatch(%+v) = %s, %v; json.Marshal gives %s, %v", got, enc, err, want, werr)
			}
		}
	})
}

// benchBatch is a batched latest answer of n stations with six measurements each, the
// size of one service's part of a 1,000-sensor area latest.
func benchBatch(n int) LatestBatchResponse {
	meas := json.RawMessage(`[{"parameter":"air_temperature","value":21.5,"unit":"degC","unit_original":"degC","value_original":21.5},` +
		`{"parameter":"wind_speed","value":7.2,"unit":"m/s","unit_original":"kn","value_original":14},` +
		`{"parameter":"wind_direction","value":250,"unit":"deg","unit_original":"deg","value_original":250},` +
		`{"parameter":"air_pressure","value":1013.2,"unit":"hPa","unit_original":"hPa","value_original":1013.2},` +
		`{"parameter":"water_temperature","value":18.25,"unit":"degC","unit_original":"degC","value_original":18.25},` +
		`{"parameter":"wave_height","value":1.3,"unit":"m","unit_original":"m","value_original":1.3}]`)
	ts := Time{Time: time.Date(2026, 11, 25, 21, 10, 0, 0, time.UTC)}
	r := LatestBatchResponse{ServiceID: "ocean", ServerTime: ts}
	for i := range n {
		r.Items = append(r.Items, LatestItem{ExternalID: "SG" + strconv.Itoa(i), ReportingIntervalS: 600, Timestamp: &ts, FetchedAt: &ts, Measurements: meas})
	}
	return r
}

// go test -run '^$' -bench LatestBatch -benchmem ./pkg/contract/
func BenchmarkLatestBatch(b *testing.B) {
	r := benchBatch(340)
	data, _ := json.Marshal(r)
	b.Run("encode/json.Marshal", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(r)
		}
	})
	b.Run("encode/direct", func(b *testing.B) {
		for b.Loop() {
			_, _ = AppendLatestBatch(nil, &r)
		}
	})
	b.Run("decode/json.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var out LatestBatchResponse
			_ = json.Unmarshal(data, &out)
		}
	})
	b.Run("decode/direct", func(b *testing.B) {
		for b.Loop() {
			var out LatestBatchResponse
			_ = DecodeLatestBatch(data, &out)
		}
	})
}
