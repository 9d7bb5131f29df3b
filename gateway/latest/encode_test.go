package latest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

func fptr(f float64) *float64 { return &f }
func iptr(i int64) *int64     { return &i }

// sampleAnswer has n items covering every field's forms: nulls, floats in both of
// encoding/json's notations, names needing escapes, measurements with whitespace.
func sampleAnswer(n int) Answer {
	names := []string{"Harbor Buoy 41002", `Quote "q" \ back`, "Caf\u00e9 <b>&</b>", "tab\there\u2028\u2029 \b\f\n\r\x01\x1f", "bad \xff utf8 \xe2\x80", "", "\U0001F30A wave"}
	floats := []float64{0, -0.5, 45.123456789, 1e-7, -3.2e-10, 1e21, 123456789012345678, 180}
	ans := Answer{Items: make([]Item, n), Warnings: []Warning{{ServiceID: "airquality", Code: "upstream_timeout", Message: "slow <svc>"}},
		MaxAgeSeconds: iptr(900), ServerTime: contract.Time{Time: time.Date(2026, 11, 25, 18, 0, 0, 123456789, time.UTC)},
		Pagination: contract.NewPagination(1, 1000, 2500)}
	for i := range ans.Items {
		it := Item{SensorID: fmt.Sprintf("0b8e%04d-0000-5000-8000-000000000000", i), ExternalID: fmt.Sprintf("ST%d", i),
			Name: names[i%len(names)], ServiceID: "ocean", ExpectedIntervalSeconds: 600, StaleAfterSeconds: 1200, Stale: i%3 == 0}
		if i%7 != 0 {
			it.Latitude, it.Longitude = fptr(floats[i%len(floats)]), fptr(floats[(i+3)%len(floats)])
		}
		switch i % 4 {
		case 0:
			it.Unavailable = true
		case 1:
			it.Measurements = json.RawMessage("[]")
		default:
			ts := contract.Time{Time: time.Date(2026, 11, 25, 17, 50, i%60, 0, time.FixedZone("x", 3600))}
			it.Timestamp, it.AgeSeconds = &ts, iptr(int64(600+i))
			it.Measurements = json.RawMessage(fmt.Sprintf(`[{"parameter":"water_temperature_c","value":%d.5,"unit":"degC"}, {"parameter": "wave_height_m", "value":1.2,"unit":"m","note":"a \" b\\ <&> \u2028     café"}]`, i))
		}
		ans.Items[i] = it
	}
	return ans
}

// TestAppendAnswerMatchesEncodingJSON: the fast encoder writes exactly json.Marshal's bytes.
func TestAppendAnswerMatchesEncodingJSON(t *testing.T) {
	for _, n := range []int{0, 1, 57} {
		ans := sampleAnswer(n)
		want, err := json.Marshal(ans)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendAnswer(nil, &ans)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d items:\n got %s\nwant %s", n, got, want)
		}
	}
	empty := Answer{}
	want, _ := json.Marshal(empty)
	if got, _ := appendAnswer(nil, &empty); !bytes.Equal(got, want) {
		t.Fatalf("zero answer: %s, want %s", got, want)
	}
	if got := appendOptFloat(nil, fptr(math.NaN())); string(got) != "null" {
		t.Errorf("NaN = %s", got)
	}
}

// BenchmarkAnswerEncode compares encoding/json and appendAnswer on a 1,000-item answer
// (allocations per answer are the figure that does not depend on machine load):
//
//	go test -run '^$' -bench AnswerEncode -benchmem ./gateway/latest/
func BenchmarkAnswerEncode(b *testing.B) {
	ans := sampleAnswer(1000)
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := json.Marshal(ans); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("appendAnswer", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := appendAnswer(make([]byte, 0, answerSize(&ans)), &ans); err != nil {
				b.Fatal(err)
			}
		}
	})
}
