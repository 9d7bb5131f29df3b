package sensorquery

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// The query parsers' fuzz targets (FuzzParseProjectQuery is in gateway/api). Seeds are in testdata/fuzz/<target>; `make test` runs
// each for a few seconds, `make fuzz` longer:
//
//	go test ./gateway/sensorquery -run '^$' -fuzz '^FuzzParseRawQuery$' -fuzztime 60s

// cleanText is what every accepted text value must be: valid UTF-8 without control
// characters.
func cleanText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// wantParamError fails unless err is an invalid_parameter *apierr.Error naming something.
func wantParamError(t *testing.T, raw string, err error) {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) || e.Code != apierr.InvalidParameter || !strings.HasPrefix(e.Message, "invalid parameter \"") {
		t.Fatalf("%q: error %v is not an invalid_parameter naming the parameter", raw, err)
	}
}

// ParseRawQuery parses a raw query by CheckRawQuery's rules (the same scanner) into the
// values it accepts: what the fuzz target compares with url.ParseQuery.
func ParseRawQuery(raw string) (url.Values, error) {
	v := url.Values{}
	err := scanRawQuery(raw, func(key, val string) bool {
		if _, dup := v[key]; dup {
			return false
		}
		v[key] = []string{val}
		return true
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

func FuzzParseRawQuery(f *testing.F) {
	for _, s := range []string{"", "a=1&b=2", "search=%00", "sensor_type=buoy;x", "status=a&status=b", "x=%ff", "&&=&a", "a=%3B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := ParseRawQuery(raw)
		if err != nil {
			wantParamError(t, raw, err)
			return
		}
		// Accepted: one clean value per parameter, and exactly what Go's parser reads
		// (nothing dropped, nothing added).
		std, serr := url.ParseQuery(raw)
		if serr != nil {
			t.Fatalf("%q accepted, but url.ParseQuery refuses it: %v", raw, serr)
		}
		if !reflect.DeepEqual(v, std) && !(len(v) == 0 && len(std) == 0) {
			t.Fatalf("%q: %v, url.ParseQuery %v", raw, v, std)
		}
		for k, vs := range v {
			if len(vs) != 1 || !cleanText(k) || !cleanText(vs[0]) {
				t.Fatalf("%q: accepted %q=%q", raw, k, vs)
			}
		}
	})
}
