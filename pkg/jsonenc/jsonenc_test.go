package jsonenc

import (
	"encoding/json"
	"math"
	"testing"
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "<b>&amp;</b>", "tab\tnl\ncr\r\b\f\x00\x1f",
		"ünïcödé 日本", "bad \xff utf-8", "line\u2028para\u2029", "\x7f"} {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("a<b>&\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestAppendFloatMatchesEncodingJSON(t *testing.T) {
	for _, v := range []float64{0, -0.5, 1, 12.345678, 1e-7, -3.2e-12, 1e20, 1e21, 123456789e15, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		want, _ := json.Marshal(v)
		if got := AppendFloat(nil, &v); string(got) != string(want) {
			t.Errorf("AppendFloat(%v) = %s, want %s", v, got, want)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1)} {
		if got := AppendFloat(nil, &v); string(got) != "null" {
			t.Errorf("AppendFloat(%v) = %s, want null", v, got)
		}
	}
	if got := AppendFloat(nil, nil); string(got) != "null" {
		t.Errorf("AppendFloat(nil) = %s", got)
	}
}
