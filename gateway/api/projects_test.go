package api

import (
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

func TestParseProjectQuery(t *testing.T) {
	t.Parallel()
	v, _ := url.ParseQuery("provider=noaa-ndbc&domain=ocean&temporal_pattern=periodic&search=Water&feed_type=timeseries&page=2&limit=5000")
	f, err := ParseProjectQuery(v)
	if err != nil {
		t.Fatal(err)
	}
	want := catalog.ProjectFilter{Provider: "noaa-ndbc", Domain: "ocean", TemporalPattern: "periodic", Search: "Water", FeedType: "timeseries", Page: 2, Limit: sensorquery.MaxListLimit}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got %+v\nwant %+v", f, want)
	}
	for _, q := range []string{"page=-1", "limit=x", "domain=" + strings.Repeat("d", 300)} {
		v, _ := url.ParseQuery(q)
		if _, err := ParseProjectQuery(v); apierr.From(err).Code != apierr.InvalidParameter {
			t.Errorf("%s: %v, want invalid_parameter", q, err)
		}
	}
}
