package jsonbytes

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
)

var jsonSamples = []string{
	`[]`, `{}`, `null`, `true`, `false`, `0`, `-0`, `1.5e-7`, `-12.25E+3`, `"x"`,
	`[{"parameter":"air_temperature","value":12.3,"unit":"degC","unit_original":"degF","value_original":54.14}]`,
	` [ { "a" : 1 , "b" : [ true , null , "s p a c e" ] } ] `,
	"[\"<b>&amp;</b>\",\"\u2028\u2029\",\"tab\\t\\\"quote\\\\\",\"\\u00e9\\u2028\"]",
	"{\"k\":\"\xff\xfe invalid utf-8\"}",
	`{"nested":{"deep":[[[[1]]]],"e":""}}`,
	// invalid ones
	``, ` `, `[`, `]`, `[1,]`, `{"a":}`, `{"a" 1}`, `{a:1}`, `01`, `1.`, `.5`, `1e`, `-`, `+1`, `tru`, `nul`, `"abc`,
	"\"ctl\x01\"", `"\x"`, `"\u12g4"`, `[1 2]`, `{"a":1,}`, `1 2`, `[]]`, `NaN`, `"\`,
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonSamples {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, json.Valid says %v", s, got, want)
		}
	}
}

func TestAppendCompactMatchesMarshal(t *testing.T) {
	for _, s := range jsonSamples {
		if !json.Valid([]byte(s)) {
			continue
		}
		want, err := json.Marshal(json.RawMessage(s))
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendCompact([]byte("prefix"), []byte(s)); string(got) != "prefix"+string(want) {
			t.Errorf("AppendCompact(%q) = %q, json.Marshal gives %q", s, got[6:], want)
		}
	}
}

func TestAppendStringMatchesMarshal(t *testing.T) {
	for _, s := range []string{"", "plain", "<>&", "quote\" back\\ nl\n cr\r tab\t bs\b ff\f ctl\x01\x1f", "\u2028\u2029", "é ü 日本",
		"\xff bad \xc3", "end\xe2\x80"} {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, json.Marshal gives %s", s, got, want)
		}
	}
}

func TestAppendFloatMatchesMarshal(t *testing.T) {
	for _, f := range []float64{0, -0.0, 1, -1.5, 1e-7, 1e21, 123456789.125, 1e-6, 3.4e38, math.SmallestNonzeroFloat64} {
		want, _ := json.Marshal(f)
		if got := AppendFloat(nil, f); string(got) != string(want) {
			t.Errorf("AppendFloat(%v) = %s, json.Marshal gives %s", f, got, want)
		}
	}
	if got := AppendFloat(nil, math.NaN()); string(got) != "null" {
		t.Errorf("AppendFloat(NaN) = %s, want null", got)
	}
}

func TestStringListMatchesUnmarshal(t *testing.T) {
	for _, s := range []string{`[]`, `null`, `["a"]`, `["air_temperature","wind_speed"]`, `["a,b","c"]`, `[ "a" ]`,
		`["\u00e9"]`, `["é"]`, `["a",]`, `["a"`, `[1]`, `{}`, `""`, `["a""b"]`, `[""]`} {
		var want []string
		werr := json.Unmarshal([]byte(s), &want)
		got, err := StringList(s)
		if (err != nil) != (werr != nil) || err == nil && (!slices.Equal(got, want) || (got == nil) != (want == nil)) {
			t.Errorf("StringList(%q) = %q, %v; json.Unmarshal gives %q, %v", s, got, err, want, werr)
		}
	}
}

func FuzzJSONBytes(f *testing.F) {
	for _, s := range jsonSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valid := json.Valid(b)
		if got := Valid(b); got != valid {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, valid)
		}
		if valid {
			want, err := json.Marshal(json.RawMessage(b))
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendCompact(nil, b); string(got) != string(want) {
				t.Fatalf("AppendCompact(%q) = %q, json.Marshal gives %q", b, got, want)
			}
		}
		want, _ := json.Marshal(string(b))
		if got := AppendString(nil, string(b)); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, json.Marshal gives %s", b, got, want)
		}
		var wl []string
		werr := json.Unmarshal(b, &wl)
		gl, err := StringList(string(b))
		if (err != nil) != (werr != nil) || err == nil && !slices.Equal(gl, wl) {
			t.Fatalf("StringList(%q) = %q, %v; json.Unmarshal gives %q, %v", b, gl, err, wl, werr)
		}
	})
}
