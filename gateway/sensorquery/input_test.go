package sensorquery

import (
	"errors"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

func TestParseRawQuery(t *testing.T) {
	t.Parallel()
	ok := map[string]map[string]string{
		"":                            {},
		"a=1&&b=2&":                   {"a": "1", "b": "2"},
		"sensor_type=buoy%3Bx":        {"sensor_type": "buoy;x"},
		"search=caf%C3%A9+del+mar":    {"search": "café del mar"},
		"flag":                        {"flag": ""},
		"data_types=aqi,ozone_ppb&x=": {"data_types": "aqi,ozone_ppb", "x": ""},
	}
	for raw, want := range ok {
		v, err := ParseRawQuery(raw)
		if err != nil {
			t.Errorf("ParseRawQuery(%q): %v", raw, err)
			continue
		}
		if len(v) != len(want) {
			t.Errorf("ParseRawQuery(%q) = %v, want %v", raw, v, want)
		}
		for k, s := range want {
			if got := v[k]; len(got) != 1 || got[0] != s {
				t.Errorf("ParseRawQuery(%q)[%q] = %q, want %q", raw, k, got, s)
			}
		}
	}
	bad := map[string]string{
		"search=%00":                    "search",
		"search=a%00b":                  "search",
		"search=%ff":                    "search",
		"search=%C3":                    "search",
		"search=%0a":                    "search",
		"search=%7F":                    "search",
		"sensor_type=buoy;x":            "sensor_type",
		"a=1;b=2":                       "a",
		"status=a&status=b":             "status",
		"status=a&status=a":             "status",
		"search=%zz":                    "search",
		"se%00arch=x":                   "parameter name",
		"se%ffarch=x":                   "parameter name",
		"x;y=1":                         "x;y",
		strings.Repeat("p=1&", 0) + "q": "",
	}
	for raw, param := range bad {
		if param == "" {
			continue
		}
		_, err := ParseRawQuery(raw)
		wantInvalid(t, raw, err, param)
	}
	many := strings.Repeat("a=1&", 0)
	for i := range MaxQueryParams + 1 {
		many += "p" + strings.Repeat("x", i) + "=1&"
	}
	_, err := ParseRawQuery(many)
	wantInvalid(t, "65 parameters", err, "query")
}

func wantInvalid(t *testing.T, what string, err error, param string) {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) || e.Code != apierr.InvalidParameter || !strings.Contains(e.Message, `"`+param+`"`) {
		t.Errorf("%s: error %v, want invalid_parameter naming %q", what, err, param)
	}
}
