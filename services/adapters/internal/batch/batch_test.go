package batch

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

func TestBuilder(t *testing.T) {
	t.Parallel()
	b := New("p")
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	raw := json.RawMessage(`{}`)
	lat, lon, _ := Coord(10, 20)

	ms := b.Start("A", 1)
	ms.Add("T", canon.AirTemperatureC, 68, "degF")
	ms.Add("P", canon.AirPressureHPa, 2000, "hPa") // impossible
	ms.Emit(at, lat, lon, raw, "f")

	dup := b.Start("A", 2)
	dup.Add("T", canon.AirTemperatureC, 20, "degC")
	dup.Emit(at, nil, nil, raw, "f") // same station and time

	empty := b.Start("B", 3)
	empty.Emit(at, nil, nil, raw, "f")

	old := b.Start("C", 4)
	old.Add("T", canon.AirTemperatureC, 20, "degC")
	old.Emit(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), nil, nil, raw, "f")

	out := b.Finish(func(id string) contract.Station { return contract.Station{ProviderSlug: "p", FeedSlug: "f"} })
	if len(out.Observations) != 1 || out.Observations[0].Measurements[0].Value != 20 {
		t.Fatalf("observations = %+v", out.Observations)
	}
	reasons := map[string]int{}
	for _, r := range out.Rejections {
		reasons[r.Reason]++
	}
	want := map[string]int{"out_of_range": 1, ReasonDuplicate: 1, ReasonNoMeasurements: 1, ReasonBadTimestamp: 1}
	for r, n := range want {
		if reasons[r] != n {
			t.Errorf("rejections[%s] = %d, want %d (all %v)", r, reasons[r], n, reasons)
		}
	}
	// Only stations with a landed observation (or noted explicitly) get a record.
	if len(out.Stations) != 1 {
		t.Fatalf("stations = %+v", out.Stations)
	}
	a := out.Stations[0]
	if a.ExternalID != "A" || a.Status != "active" || strings.Join(a.DataTypes, ",") != canon.AirTemperatureC || *a.Latitude != 10 || !a.LastReadingAt.Equal(at) {
		t.Errorf("station A = %+v", a)
	}
	b2 := New("p")
	b2.Note("N", nil, nil)
	noted := b2.Finish(func(id string) contract.Station { return contract.Station{} })
	if len(noted.Stations) != 1 || noted.Stations[0].ExternalID != "N" || noted.Stations[0].LastReadingAt != nil || len(noted.Stations[0].DataTypes) != 0 {
		t.Errorf("noted station = %+v", noted.Stations)
	}
}

func TestCoord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lat, lon float64
		ok       bool
	}{
		{0, 0, true}, {90, 180, true}, {-90, -180, true}, {90.1, 0, false}, {0, 185.199922, false},
		{math.NaN(), 0, false}, {0, math.Inf(1), false},
	}
	for _, tt := range tests {
		la, lo, ok := Coord(tt.lat, tt.lon)
		if ok != tt.ok || (ok && (*la != tt.lat || *lo != tt.lon)) || (!ok && (la != nil || lo != nil)) {
			t.Errorf("Coord(%v, %v) = %v, %v, %v", tt.lat, tt.lon, la, lo, ok)
		}
	}
}

func TestInterval(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	every := func(d time.Duration, n int) []time.Time {
		var out []time.Time
		for i := n - 1; i >= 0; i-- { // newest first, as NDBC writes
			out = append(out, t0.Add(time.Duration(i)*d))
		}
		return out
	}
	tests := []struct {
		name  string
		times []time.Time
		want  int
	}{
		{"none", nil, 42},
		{"one", every(time.Hour, 1), 42},
		{"10 min", every(10*time.Minute, 20), 600},
		{"hourly with a gap", append(every(time.Hour, 10), t0.Add(-5*time.Hour)), 3600},
		{"same time twice", []time.Time{t0, t0}, 42},
	}
	for _, tt := range tests {
		if got := Interval(tt.times, 42); got != tt.want {
			t.Errorf("%s: Interval = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestMergeTypes(t *testing.T) {
	t.Parallel()
	got := MergeTypes([]string{canon.WaveHeightM, canon.AQI}, []string{canon.AQI, canon.AirTemperatureC, "bogus"})
	if strings.Join(got, ",") != "air_temperature_c,aqi,wave_height_m" {
		t.Errorf("MergeTypes = %v", got)
	}
}

func TestCompactRaw(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"a":1,"b":"x y"}`, `{"a":1,"b":"x y"}`},
		{"{\"a\": 1,\n \"b\": \"x \\\" y\"}", `{"a":1,"b":"x \" y"}`},
		{`{"a":"\\"}`, `{"a":"\\"}`},
	}
	for _, tt := range tests {
		got, err := CompactRaw([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("CompactRaw(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{`{"a": `, "{\"a\":\n"} {
		if _, err := CompactRaw([]byte(bad)); err == nil {
			t.Errorf("CompactRaw(%q): want an error", bad)
		}
	}
}

func TestRecordsDecodesCountsAndRejects(t *testing.T) {
	t.Parallel()
	b := New("p")
	raws := []json.RawMessage{json.RawMessage(`{"v":1}`), json.RawMessage(`{"v":"x"}`), json.RawMessage(`{"v":3}`)}
	var got []int
	for rec, r := range Records[struct{ V int }](b, "S", "row", raws) {
		if string(rec.Raw) != string(raws[rec.N-1]) {
			t.Fatalf("record %d carries %s", rec.N, rec.Raw)
		}
		got = append(got, r.V)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("decoded %v, want [1 3]", got)
	}
	out := b.Finish(func(string) contract.Station { return contract.Station{} })
	if out.Records != 3 || len(out.Rejections) != 1 {
		t.Fatalf("records %d, rejections %+v", out.Records, out.Rejections)
	}
	if r := out.Rejections[0]; r.StationID != "S" || r.Line != 2 || r.Reason != ReasonMalformedRow || !strings.HasPrefix(r.Detail, "row 2: ") {
		t.Fatalf("rejection %+v", r)
	}
	for range Records[struct{ V int }](b, "", "row", raws) {
		break // a loop that stops early stops the walk
	}
	if got := Truncate("abcdef", 3); got != "abc..." {
		t.Fatalf("Truncate = %q", got)
	}
}
