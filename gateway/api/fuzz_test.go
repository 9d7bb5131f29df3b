package api

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// The query parsers' fuzz targets (FuzzParseSensorQuery is in sensorquery_test.go). Seeds are in testdata/fuzz/<target>; `make test` runs
// each for a few seconds, `make fuzz` longer:
//
//	go test ./gateway/api -run '^$' -fuzz '^FuzzParseRawQuery$' -fuzztime 60s

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

func FuzzParseProjectQuery(f *testing.F) {
	for _, s := range []string{"", "provider=noaa-ndbc&domain=ocean&temporal_pattern=periodic&feed_type=timeseries&search=water&page=1&limit=20",
		"domain=a&domain=b", "search=%c3%28", "limit=0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, _ := url.ParseQuery(raw)
		p, err := ParseProjectQuery(v)
		if err != nil {
			wantParamError(t, raw, err)
			return
		}
		if p.Page < 1 || p.Limit < 1 || p.Limit > MaxListLimit {
			t.Fatalf("%q: page %d limit %d", raw, p.Page, p.Limit)
		}
		for _, s := range []string{p.Provider, p.Domain, p.TemporalPattern, p.Search, p.FeedType} {
			if !cleanText(s) || len(s) > maxTextParam {
				t.Fatalf("%q: accepted text %q", raw, s)
			}
		}
	})
}
