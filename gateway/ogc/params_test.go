package ogc

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// culprit is the parameter an invalid_parameter error names.
func culprit(t *testing.T, err error) string {
	t.Helper()
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Code != apierr.InvalidParameter {
		t.Fatalf("want an invalid_parameter error, got %v", err)
	}
	i := strings.Index(ae.Message, `"`)
	j := strings.Index(ae.Message[i+1:], `"`)
	return ae.Message[i+1 : i+1+j]
}

func TestDatetime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in           string
		since, until string
		bad          bool
	}{
		{in: "", since: "2026-04-30T12:00:00Z", until: "2026-05-01T12:00:00Z"},
		{in: "2026-04-01T00:00:00Z/2026-04-02T00:00:00Z", since: "2026-04-01T00:00:00Z", until: "2026-04-02T00:00:00Z"},
		{in: "2026-04-01T00:00:00+02:00/..", since: "2026-03-31T22:00:00Z", until: "2026-05-01T12:00:00Z"},
		{in: "../2026-04-02T00:00:00Z", since: "2025-04-01T00:00:00Z", until: "2026-04-02T00:00:00Z"},
		{in: "2026-04-01T00:00:00Z", since: "2026-04-01T00:00:00Z", until: "2026-04-01T00:00:00.001Z"},
		{in: "2024-01-01T00:00:00Z/2025-01-02T00:00:00Z", bad: true}, // 367 days
		{in: "2026-04-02T00:00:00Z/2026-04-01T00:00:00Z", bad: true},
		{in: "../..", bad: true},
		{in: "yesterday", bad: true},
		{in: "2026-04-01/2026-04-02", bad: true},
	} {
		since, until, err := datetime(c.in, now)
		if c.bad {
			if err == nil || culprit(t, err) != "datetime" {
				t.Errorf("%q: %v, want a 400 naming datetime", c.in, err)
			}
			continue
		}
		if err != nil || since.Format(time.RFC3339Nano) != c.since || until.Format(time.RFC3339Nano) != c.until {
			t.Errorf("%q: %v .. %v (%v), want %s .. %s", c.in, since, until, err, c.since, c.until)
		}
	}
}

func TestCoords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"POINT(-70.5 42.1)", "POINT", true},
		{"point(-70.5 42.1)", "POINT", true},
		{"POLYGON((0 0, 1 0, 1 1, 0 0))", "POLYGON", true},
		{"", "POINT", false},
		{"POINT(1)", "POINT", false},
		{"POINT(181 0)", "POINT", false},
		{"POINT(0 91)", "POINT", false},
		{"POLYGON((0 0, 1 0, 1 1, 0 0))", "POINT", false},
		{"POLYGON((0 0, 1 1))", "POLYGON", false},
		{"POLYGON((0 0, 1 0, 1 1, 0 1))", "POLYGON", false}, // not closed
		{"LINESTRING(0 0, 1 1)", "POLYGON", false},
		{"nonsense", "POLYGON", false},
	} {
		_, err := coords(url.Values{"coords": {c.in}}, c.want)
		if c.ok != (err == nil) {
			t.Errorf("%q as %s: %v", c.in, c.want, err)
		}
		if err != nil && culprit(t, err) != "coords" {
			t.Errorf("%q: names %q", c.in, culprit(t, err))
		}
	}
}

func TestWithinBBoxPaging(t *testing.T) {
	t.Parallel()
	km, err := within(url.Values{"within": {"10"}, "within-units": {"mi"}})
	if err != nil || km < 16.09 || km > 16.1 {
		t.Errorf("10 mi = %v km (%v)", km, err)
	}
	for _, v := range []url.Values{{"within": {"10"}}, {"within": {"0"}, "within-units": {"km"}}, {"within": {"x"}, "within-units": {"km"}},
		{"within": {"5"}, "within-units": {"furlong"}}, {"within": {"30000"}, "within-units": {"km"}}} {
		if _, err := within(v); err == nil || !strings.HasPrefix(culprit(t, err), "within") {
			t.Errorf("%v: %v", v, err)
		}
	}
	q := url.Values{}
	if err := bbox("-80,30,-60,45", q); err != nil || q.Get("min_lon") != "-80" || q.Get("max_lat") != "45" {
		t.Errorf("bbox: %v %v", q, err)
	}
	for _, b := range []string{"1,2,3", "a,b,c,d", "0,50,1,40", "-190,0,0,1", "0,0,1,2,3,4"} {
		if err := bbox(b, url.Values{}); err == nil || culprit(t, err) != "bbox" {
			t.Errorf("bbox %q: %v", b, err)
		}
	}
	if l, o, err := paging(url.Values{"limit": {"5000"}, "offset": {"7"}}); err != nil || l != MaxLimit || o != 7 {
		t.Errorf("paging: %d %d %v", l, o, err)
	}
	if err := checkParams(url.Values{"f": {"json"}, "bbox": {"1"}, "colour": {"x"}}, "bbox"); err == nil || culprit(t, err) != "colour" {
		t.Errorf("unknown parameter: %v", err)
	}
	if err := parametersOK(); err != nil {
		t.Error(err)
	}
}

func parametersOK() error {
	s := Service{ID: "ocean", Parameters: []string{"water_temperature_c", "wave_height_m"}}
	got, err := parameterNames(url.Values{"parameter-name": {"wave_height_m, water_temperature_c"}}, s)
	if err != nil || len(got) != 2 || got[0] != "wave_height_m" {
		return errors.New("parameter-name list not read")
	}
	if _, err := parameterNames(url.Values{"parameter-name": {"pm10_ug_per_m3"}}, s); err == nil || !strings.Contains(err.Error(), `"parameter-name"`) {
		return errors.New("a parameter of another collection accepted")
	}
	return nil
}
