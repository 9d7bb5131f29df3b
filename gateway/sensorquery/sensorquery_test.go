package sensorquery

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

func TestParseSensorQuery(t *testing.T) {
	t.Parallel()
	def := catalog.SensorFilter{Page: 1, Limit: DefaultListLimit}
	with := func(f func(*Query)) Query {
		q := Query{Filter: def}
		f(&q)
		return q
	}
	cases := []struct {
		query string
		want  Query
	}{
		{"", with(func(*Query) {})},
		{"search=+Hatteras+&sensor_type=buoy&status=active&provider=noaa-ndbc", with(func(q *Query) {
			q.Filter.Search, q.Filter.SensorType, q.Filter.Status, q.Filter.Provider = "Hatteras", "buoy", "active", "noaa-ndbc"
		})},
		{"data_types=aqi,+ozone_ppb,,aqi", with(func(q *Query) { q.Filter.DataTypes = []string{"aqi", "ozone_ppb"} })},
		{"page=3&limit=50", with(func(q *Query) { q.Filter.Page, q.Filter.Limit = 3, 50 })},
		{"limit=1001", with(func(q *Query) { q.Filter.Limit = MaxListLimit })},
		{"limit=99999999999999999999999", with(func(q *Query) { q.Filter.Limit = MaxListLimit })},
		{"min_lat=-10&min_lon=170&max_lat=10&max_lon=-170", with(func(q *Query) {
			q.Filter.BBox = &catalog.BBox{MinLat: -10, MinLon: 170, MaxLat: 10, MaxLon: -170}
		})},
		{"lat=40&lon=-83", with(func(q *Query) { q.Filter.Near = &catalog.Near{Lat: 40, Lon: -83, RadiusKM: DefaultRadiusKM} })},
		{"lat=40&lon=-83&radius_km=7.5&sort=distance", with(func(q *Query) {
			q.Filter.Near = &catalog.Near{Lat: 40, Lon: -83, RadiusKM: 7.5}
			q.Filter.SortByDistance = true
		})},
		{"sort=name", with(func(*Query) {})},
		{"minimal=TRUE&fields=id,name", with(func(q *Query) { q.Minimal, q.Fields = true, []string{"id", "name"} })},
		{"minimal=0&fields=+name+,,id,name", with(func(q *Query) { q.Fields = []string{"name", "id"} })},
		// Empty values are absent.
		{"lat=&lon=&radius_km=&minimal=&page=&limit=&min_lat=", with(func(*Query) {})},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			t.Parallel()
			v, err := url.ParseQuery(c.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(v)
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.query, err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Parse(%q)\n got %+v\nwant %+v", c.query, got, c.want)
			}
		})
	}
}

func TestParseSensorQueryErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ query, param, mention string }{
		{"limit=abc", "limit", "positive integer"},
		{"limit=0", "limit", "positive integer"},
		{"limit=-1", "limit", "positive integer"},
		{"page=0", "page", "integer"},
		{"page=10000001", "page", "integer"},
		{"page=1.5", "page", "integer"},
		{"min_lat=1&min_lon=1&max_lat=2", "max_lon", "all four"},
		{"max_lon=3", "min_lat", "missing min_lat, min_lon, max_lat"},
		{"min_lat=95&min_lon=0&max_lat=96&max_lon=1", "min_lat", "-90 to 90"},
		{"min_lat=0&min_lon=-181&max_lat=1&max_lon=1", "min_lon", "-180 to 180"},
		{"min_lat=5&min_lon=0&max_lat=1&max_lon=1", "min_lat", "greater than max_lat"},
		{"min_lat=Inf&min_lon=0&max_lat=1&max_lon=1", "min_lat", "number"},
		{"min_lat=0&min_lon=0&max_lat=1&max_lon=NaN", "max_lon", "number"},
		{"lat=1", "lon", "go together"},
		{"lon=1", "lat", "go together"},
		{"lat=x&lon=1", "lat", "number"},
		{"radius_km=5", "radius_km", "center"},
		{"lat=1&lon=1&radius_km=0", "radius_km", "greater than 0"},
		{"lat=1&lon=1&radius_km=99999", "radius_km", "at most"},
		{"lat=1&lon=1&radius_km=NaN", "radius_km", "greater than 0"},
		{"lat=1&lon=1&min_lat=0&min_lon=0&max_lat=2&max_lon=2", "radius_km", "not both"},
		{"sort=distance", "sort", "radius"},
		{"sort=random", "sort", "name or distance"},
		{"minimal=yes", "minimal", "true, false, 1 or 0"},
		{"data_types=aqi,pm25", "data_types", "pm2_5_ug_per_m3"},
		{"search=" + strings.Repeat("a", 201), "search", "at most 200"},
		{"sensor_type=" + strings.Repeat("a", 201), "sensor_type", "at most"},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			t.Parallel()
			v, _ := url.ParseQuery(c.query)
			_, err := Parse(v)
			var e *apierr.Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%q) = %v, want an *apierr.Error", c.query, err)
			}
			if e.Code != apierr.InvalidParameter || e.Status() != 400 {
				t.Errorf("code %q status %d", e.Code, e.Status())
			}
			if !strings.Contains(e.Message, `"`+c.param+`"`) || !strings.Contains(e.Message, c.mention) {
				t.Errorf("message %q should name %q and say %q", e.Message, c.param, c.mention)
			}
		})
	}
}

// FuzzParseSensorQuery proves that every query string gives a filter the store can run or a
// 400 naming a parameter: never a panic, never another kind of error, never a filter that
// breaks the documented bounds.
func FuzzParseSensorQuery(f *testing.F) {
	for _, s := range []string{
		"", "limit=5000&page=2", "min_lat=-90&min_lon=179&max_lat=90&max_lon=-179",
		"lat=0&lon=0&radius_km=20038&sort=distance", "data_types=aqi,ozone_ppb&fields=id,,name&minimal=1",
		"lat=1e308&lon=-0", "limit=+7", "page=0x10", "radius_km=1e-300&lat=0&lon=0", "search=%ff%fe",
		"min_lat=NaN", "fields=" + strings.Repeat("x,", 100),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return // not a query the HTTP server would hand over
		}
		q, err := Parse(v)
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) || e.Code != apierr.InvalidParameter || !strings.HasPrefix(e.Message, "invalid parameter \"") {
				t.Fatalf("Parse(%q) = %v, want a 400 naming a parameter", raw, err)
			}
			return
		}
		fl := q.Filter
		if fl.Page < 1 || fl.Page > MaxPage || fl.Limit < 1 || fl.Limit > MaxListLimit {
			t.Fatalf("%q: page %d limit %d out of bounds", raw, fl.Page, fl.Limit)
		}
		if fl.BBox != nil && fl.Near != nil {
			t.Fatalf("%q: bbox and radius together", raw)
		}
		if b := fl.BBox; b != nil && (b.MinLat > b.MaxLat || b.MinLat < -90 || b.MaxLat > 90 || b.MinLon < -180 || b.MaxLon > 180 || b.MaxLon < -180 || b.MinLon > 180) {
			t.Fatalf("%q: bad bbox %+v", raw, *b)
		}
		if n := fl.Near; n != nil && (n.RadiusKM <= 0 || n.RadiusKM > MaxRadiusKM || n.Lat < -90 || n.Lat > 90 || n.Lon < -180 || n.Lon > 180) {
			t.Fatalf("%q: bad radius filter %+v", raw, *n)
		}
		if fl.SortByDistance && fl.Near == nil {
			t.Fatalf("%q: sort by distance without a radius", raw)
		}
		if len(q.Fields) > maxListItems || len(fl.DataTypes) > maxListItems {
			t.Fatalf("%q: unbounded lists", raw)
		}
		// No text the store could choke on (a NUL is SQLSTATE 22021) gets through.
		for _, s := range append([]string{fl.Search, fl.SensorType, fl.Status, fl.Provider}, fl.DataTypes...) {
			if !cleanText(s) || len(s) > MaxTextParam {
				t.Fatalf("%q: accepted text %q", raw, s)
			}
		}
	})
}
