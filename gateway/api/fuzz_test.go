package api

import (
	"net/url"
	"testing"

	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// FuzzParseProjectQuery: every project query gives a filter or a 400 naming a parameter.
// Seeds are in testdata/fuzz/FuzzParseProjectQuery; the other query parsers' targets are
// in gateway/sensorquery.
func FuzzParseProjectQuery(f *testing.F) {
	for _, s := range []string{"", "provider=noaa-ndbc&domain=ocean&temporal_pattern=periodic&feed_type=timeseries&search=water&page=1&limit=20",
		"domain=a&domain=b", "search=%c3%28", "limit=0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, _ := url.ParseQuery(raw)
		p, err := ParseProjectQuery(v)
		if err != nil {
			if e := apierr.From(err); e.Code != apierr.InvalidParameter {
				t.Fatalf("%q: error %v is not an invalid_parameter", raw, err)
			}
			return
		}
		if p.Page < 1 || p.Limit < 1 || p.Limit > sensorquery.MaxListLimit {
			t.Fatalf("%q: page %d limit %d", raw, p.Page, p.Limit)
		}
		for _, s := range []string{p.Provider, p.Domain, p.TemporalPattern, p.Search, p.FeedType} {
			if sensorquery.CheckText("text", s) != nil || len(s) > sensorquery.MaxTextParam {
				t.Fatalf("%q: accepted text %q", raw, s)
			}
		}
	})
}
