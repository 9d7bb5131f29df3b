package formats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestAppendNumberMatchesFloat: for the numbers the store writes (encoding/json's form of
// float64s) and for other spellings of numbers, AppendNumber writes what Float writes of
// the value ParseFloat reads.
func TestAppendNumberMatchesFloat(t *testing.T) {
	rand := rand.New(rand.NewPCG(3, 4))
	nums := []string{"0", "-0", "1", "-1", "0.5", "1013.25", "2.3", "100", "1000000", "123456789012345", "1234567890123456",
		"12345678901234567", "0.1", "0.30000000000000004", "0.000001", "0.0000001", "1e-7", "1E5", "1.5e+300", "-2.5e-10",
		"1.50", "01", "00", "+1", "1.", ".5", "-0.0", "0.0", "1.000", "0.1000000000000000055511151231257827", "999999999999999",
		"9999999999999999", "999999999999999.9", "0.000000000000000000001", "123456789012345678901234", "1e400", "-", "", "abc", "1-2"}
	for range 20000 {
		var v float64
		switch rand.IntN(4) {
		case 0: // sensor-like values, a few decimals
			v = math.Round(rand.Float64()*2000*100) / 100
		case 1: // the results of unit conversions: full precision
			v = rand.Float64() * 1000 / 3
		case 2: // any magnitude
			v = math.Float64frombits(rand.Uint64())
		default:
			v = float64(rand.IntN(100000)) / 10
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if rand.IntN(2) == 0 {
			v = -v
		}
		b, _ := json.Marshal(v)
		nums = append(nums, string(b), strconv.FormatFloat(v, 'g', -1, 64), strconv.FormatFloat(v, 'e', 3, 64))
	}
	for _, n := range nums {
		got, ok := AppendNumber([]byte("x,"), []byte(n))
		v, err := strconv.ParseFloat(n, 64)
		if (err == nil) != ok {
			t.Fatalf("%q: ok %v, ParseFloat error %v", n, ok, err)
		}
		if ok && string(got) != "x,"+Float(v) {
			t.Fatalf("%q: got %q, want %q", n, got[2:], Float(v))
		}
	}
}

func FuzzAppendNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "1013.25", "0.30000000000000004", "1e-7", "1.50", "123456789012345"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, n string) {
		got, ok := AppendNumber(nil, []byte(n))
		v, err := strconv.ParseFloat(n, 64)
		if (err == nil) != ok {
			t.Fatalf("%q: ok %v, ParseFloat error %v", n, ok, err)
		}
		if ok && string(got) != Float(v) {
			t.Fatalf("%q: got %q, want %q", n, got, Float(v))
		}
	})
}

func TestReadingRowKey(t *testing.T) {
	for row, want := range map[string]string{
		"s1,41001,2026-01-01T00:00:00.000Z,wave_height_m,1.5,m,1.5,m\n":           "s1,41001,2026-01-01T00:00:00.000Z",
		`s1,"ST,""1""",2026-01-01T00:00:00.000Z,wind_speed_ms,2,m/s,2,m/s` + "\n": `s1,"ST,""1""",2026-01-01T00:00:00.000Z`,
		"sensor_id,external_id\n": "sensor_id,external_id\n",
	} {
		if got := string(ReadingRowKey([]byte(row))); got != want {
			t.Errorf("ReadingRowKey(%q) = %q, want %q", row, got, want)
		}
	}
}
