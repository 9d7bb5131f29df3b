package contract

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// The query parsers' fuzz targets (seeds in testdata/fuzz/<target>; `make test` runs each
// for a few seconds, `make fuzz` longer):
//
//	go test ./pkg/contract -run '^$' -fuzz '^FuzzParseReadingsQuery$' -fuzztime 60s

var fuzzNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func wantParamError(t *testing.T, raw string, err error) {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) || e.Code != apierr.InvalidParameter || !strings.HasPrefix(e.Message, "invalid parameter \"") {
		t.Fatalf("%q: error %v is not an invalid_parameter naming the parameter", raw, err)
	}
}

func FuzzParseReadingsQuery(f *testing.F) {
	for _, s := range []string{"", "limit=500&page=2&sort=asc", "days=7", "since=2018-08-01&until=2018-08-02T00:00:00Z",
		"since=2018-08-02&until=2018-08-01", "parameter=wave_height_m,aqi", "data_format=raw", "days=NaN", "days=1e308", "limit=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, _ := url.ParseQuery(raw)
		q, err := ParseReadingsQuery(v, fuzzNow)
		if err != nil {
			wantParamError(t, raw, err)
			return
		}
		if q.Limit < 1 || q.Limit > MaxReadingsLimit || q.Page < 1 || q.Offset() < 0 {
			t.Fatalf("%q: limit %d page %d offset %d", raw, q.Limit, q.Page, q.Offset())
		}
		if q.Format != FormatCleaned && q.Format != FormatRaw {
			t.Fatalf("%q: format %q", raw, q.Format)
		}
		if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
			t.Fatalf("%q: until %s not after since %s", raw, q.Until, q.Since)
		}
		if !q.Since.IsZero() && q.Since.Before(fuzzNow.AddDate(-300, 0, 0)) {
			t.Fatalf("%q: since %s", raw, q.Since)
		}
	})
}

func FuzzParseLatestQuery(f *testing.F) {
	for _, s := range []string{"", "data_format=raw", "parameter=aqi", "parameter=nope", "data_format=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, _ := url.ParseQuery(raw)
		q, err := ParseLatestQuery(v, fuzzNow)
		if err != nil {
			wantParamError(t, raw, err)
			return
		}
		if q.Limit != 1 || (q.Format != FormatCleaned && q.Format != FormatRaw) {
			t.Fatalf("%q: %+v", raw, q)
		}
	})
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2018-08-01", "2018-08-01T15:10:00Z", "2018-08-01T15:10:00.123+02:00", "2018-08-01T15:10", "0000-01-01", "9999-12-31T23:59:59Z", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := ParseTime(s)
		if err != nil {
			return
		}
		if tm.Location() != time.UTC || tm.Year() < 1899 || tm.Year() > 2201 {
			t.Fatalf("%q: %s", s, tm)
		}
	})
}

// FuzzValidExternalID: an accepted id, escaped for a path, is one segment that decodes back
// to itself, so an id can never reach an upstream as more than one path segment (SSRF).
func FuzzValidExternalID(f *testing.F) {
	for _, s := range []string{"41002", "TPLM2", "a b+c:d", "..", "a/b", "%2e%2e", "a\x00b", "\xff", "ok-id_1.2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if ValidExternalID(id) != nil {
			return
		}
		p := LatestPath(id)
		seg := strings.TrimSuffix(strings.TrimPrefix(p, PathSensors+"/"), "/readings/latest")
		if strings.ContainsAny(seg, "/?#") || seg == "." || seg == ".." {
			t.Fatalf("%q escapes to %q", id, seg)
		}
		back, err := url.PathUnescape(seg)
		if err != nil || back != id {
			t.Fatalf("%q: escaped %q decodes to %q (%v)", id, seg, back, err)
		}
	})
}

func FuzzParseAggregateQuery(f *testing.F) {
	for _, s := range []string{"", "interval=1h&days=2", "interval=1d&since=2026-01-01&until=2026-02-01&tz=America/New_York",
		"interval=1mo&stats=mean,max&parameter=aqi", "interval=1h&days=3660", "tz=../../etc/passwd", "interval=0h", "stats=median"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, _ := url.ParseQuery(raw)
		q, err := ParseAggregateQuery(v, fuzzNow)
		if err != nil {
			wantParamError(t, raw, err)
			return
		}
		if q.Zone == nil || len(q.Stats) == 0 || !q.Until.After(q.Since) {
			t.Fatalf("%q: %+v", raw, q)
		}
		if len(q.Bounds) > 10_000 {
			t.Fatalf("%q: %d buckets", raw, len(q.Bounds))
		}
	})
}

func FuzzParsePosition(f *testing.F) {
	for _, s := range []string{"0", "1700000000000-3", "-", "1-", "18446744073709551615-18446744073709551615", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePosition(s)
		if err != nil {
			return
		}
		// An accepted position prints back to a form that parses to itself.
		back, err := ParsePosition(strconv.FormatUint(p.MS, 10) + "-" + strconv.FormatUint(p.Seq, 10))
		if err != nil || back != p {
			t.Fatalf("%q: %+v round-trips to %+v (%v)", s, p, back, err)
		}
	})
}
