package ogc_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/ogc"
	"github.com/sensorgate/sensorgate/gateway/openapi"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/covjson/covjsontest"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

const devKey = "sg_dev_ogc_test_key_0123456789abcdef0"

// bigStations is how many stations per provider the weather service simulates: with its
// two simulated providers (and its fixed stations), more than an EDR query's 1,000-sensor
// bound, which startStack checks.
const bigStations = 501

type reply struct {
	status int
	header http.Header
	body   []byte
}

func get(t *testing.T, u string) reply {
	t.Helper()
	return getKey(t, u, devKey)
}

// validating, when set, checks every exchange of get against the OpenAPI document.
var validating http.RoundTripper

func getKey(t *testing.T, u, key string) reply {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Minute, Transport: validating}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}
}

func decode[T any](t *testing.T, r reply, what string) T {
	t.Helper()
	var v T
	if r.status != 200 {
		t.Fatalf("%s: %d %.400s", what, r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("%s: %v: %.400s", what, err, r.body)
	}
	return v
}

type restSensor struct {
	ID               string   `json:"id"`
	ExternalID       string   `json:"external_id"`
	Latitude         *float64 `json:"latitude"`
	Longitude        *float64 `json:"longitude"`
	FeedID           *string  `json:"feed_id"`
	ConnectedService string   `json:"connected_service"`
}

type restList struct {
	Sensors    []restSensor        `json:"sensors"`
	Pagination contract.Pagination `json:"pagination"`
}

// restAll is every sensor GET /api/v1/sensors lists for query q, page by page.
func restAll(t *testing.T, api, q string) ([]restSensor, int) {
	t.Helper()
	var out []restSensor
	for page := 1; ; page++ {
		l := decode[restList](t, get(t, fmt.Sprintf("%s/sensors?limit=1000&page=%d&%s", api, page, q)), "REST list")
		out = append(out, l.Sensors...)
		if page >= l.Pagination.TotalPages {
			return out, l.Pagination.Total
		}
	}
}

type featureCollection struct {
	Type     string `json:"type"`
	Features []struct {
		ID       string `json:"id"`
		Geometry *struct {
			Coordinates [2]float64 `json:"coordinates"`
		} `json:"geometry"`
		Properties restSensor `json:"properties"`
	} `json:"features"`
	NumberMatched  int `json:"numberMatched"`
	NumberReturned int `json:"numberReturned"`
	Links          []struct{ Href, Rel string }
}

func (f featureCollection) ids() []string {
	out := make([]string, len(f.Features))
	for i, x := range f.Features {
		out[i] = x.ID
	}
	return out
}

func (f featureCollection) next() string {
	for _, l := range f.Links {
		if l.Rel == "next" {
			return l.Href
		}
	}
	return ""
}

func ids(ss []restSensor) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// stack is a gateway in front of the ocean and weather services, as processes.
type stack struct {
	gw, api, ogc string
	oceanSensors []restSensor
}

func startStack(t *testing.T) stack {
	t.Helper()
	dir := t.TempDir()
	gwBin := testenv.Build(t, dir, "gateway", "github.com/sensorgate/sensorgate/gateway/cmd/gateway")
	oceanBin := testenv.Build(t, dir, "ocean", "github.com/sensorgate/sensorgate/services/cmd/ocean")
	weatherBin := testenv.Build(t, dir, "weather", "github.com/sensorgate/sensorgate/services/cmd/weather")
	oceanAddr, weatherAddr, gwAddr := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	testenv.Start(t, oceanBin, "SERVICE_ADDR="+oceanAddr, "READINGS_SQLITE_PATH="+filepath.Join(dir, "ocean.db"),
		"SOURCE_MODE=simulate", "SIM_STATIONS=6", "SIM_DAYS=3", "SIM_SEED=5", "LOG_LEVEL=warn")
	testenv.Start(t, weatherBin, "SERVICE_ADDR="+weatherAddr, "READINGS_SQLITE_PATH="+filepath.Join(dir, "weather.db"),
		"SOURCE_MODE=simulate", "SIM_STATIONS="+strconv.Itoa(bigStations), "SIM_DAYS=1", "SIM_SEED=5", "LOG_LEVEL=warn")
	testenv.Start(t, gwBin, "GATEWAY_ADDR="+gwAddr, "DATABASE_URL="+testenv.Postgres(t), "SENSORGATE_ENV=development",
		"DEV_API_KEY="+devKey, "SERVICE_URLS=ocean=http://"+oceanAddr+",weather=http://"+weatherAddr,
		"SYNC_INTERVAL=2s", "PROBE_INTERVAL=1s", "LOG_LEVEL=warn", "OTEL_SDK_DISABLED=true", "RATE_LIMIT_PLANS=dev=100000000/h")
	s := stack{gw: "http://" + gwAddr}
	s.api, s.ogc = s.gw+"/api/v1", s.gw+"/api/v1/ogc"
	deadline := time.Now().Add(240 * time.Second)
	for {
		ready := true
		for _, u := range []string{"http://" + oceanAddr + "/readyz", "http://" + weatherAddr + "/readyz"} {
			resp, err := http.Get(u)
			if err != nil {
				ready = false
				continue
			}
			resp.Body.Close()
			ready = ready && resp.StatusCode == 200
		}
		if ready {
			req, _ := http.NewRequest("GET", s.api+"/sensors?limit=1", nil)
			req.Header.Set("x-api-key", devKey)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				var l restList
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				ready = json.Unmarshal(b, &l) == nil && l.Pagination.Total > 2*bigStations+6
			} else {
				ready = false
			}
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stack not ready after 240s")
		}
		time.Sleep(time.Second)
	}
	all, _ := restAll(t, s.api, "")
	weather := 0
	for _, x := range all {
		if x.ConnectedService == "ocean" && x.FeedID != nil && x.Latitude != nil {
			s.oceanSensors = append(s.oceanSensors, x)
		}
		if x.ConnectedService == "weather" {
			weather++
		}
	}
	if weather <= ogc.MaxSensors {
		t.Fatalf("want more than %d weather sensors for the bounds, got %d", ogc.MaxSensors, weather)
	}
	if len(s.oceanSensors) < 3 {
		t.Fatalf("want ocean sensors with a feed and a position, got %d", len(s.oceanSensors))
	}
	return s
}

// window is a fixed range in the past, so the simulator's new readings change nothing.
func window() (since, until time.Time) {
	until = time.Now().UTC().Add(-time.Hour).Truncate(time.Hour)
	return until.Add(-36 * time.Hour), until
}

func datetimeParam(since, until time.Time) string {
	return contract.FormatTime(since) + "/" + contract.FormatTime(until)
}

// restSeries is the REST readings of a sensor in the window, as "t|parameter" -> value.
func restSeries(t *testing.T, api, id string, since, until time.Time, extra string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for page := 1; ; page++ {
		u := fmt.Sprintf("%s/sensors/%s/readings?since=%s&until=%s&limit=500&sort=asc&page=%d%s", api, id,
			url.QueryEscape(contract.FormatTime(since)), url.QueryEscape(contract.FormatTime(until)), page, extra)
		r := decode[contract.ReadingsResponse](t, get(t, u), "REST readings")
		for _, rd := range r.Readings {
			for _, m := range rd.Measurements {
				out[contract.FormatTime(rd.Timestamp.Time)+"|"+m.Parameter] = m.Value
			}
		}
		if page >= r.Pagination.TotalPages {
			return out
		}
	}
}

type coverage struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Domain struct {
		DomainType string `json:"domainType"`
		Axes       map[string]struct {
			Values []any `json:"values"`
		} `json:"axes"`
	} `json:"domain"`
	Ranges map[string]struct {
		Values []*float64 `json:"values"`
	} `json:"ranges"`
}

// values flattens a coverage into "t|parameter" -> value (nulls left out).
func (c coverage) values() map[string]float64 {
	out := map[string]float64{}
	ts := c.Domain.Axes["t"].Values
	for p, r := range c.Ranges {
		for i, v := range r.Values {
			if v != nil {
				out[ts[i].(string)+"|"+p] = *v
			}
		}
	}
	return out
}

// covAnswer checks a CoverageJSON answer: status, media type and the schema.
func covAnswer(t *testing.T, r reply, what string) {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("%s: %d %.400s", what, r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/prs.coverage+json" {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
	if err := covjsontest.Validate(r.body); err != nil {
		t.Fatalf("%s: not valid CoverageJSON: %v\n%.600s", what, err, r.body)
	}
}

func sameValues(t *testing.T, what string, got, want map[string]float64) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: the REST readings are empty; nothing to compare", what)
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d values, REST has %d", what, len(got), len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s: %s = %v (present %v), REST %v", what, k, g, ok, w)
			return
		}
	}
}

// TestOGCAgainstRESTAndClients runs the gateway in front of the ocean service (6
// simulated buoys) and the weather service (501 simulated stations per provider, over 1,000 in all) as
// processes, and reads the OGC API as GIS tools do (every exchange of the test's own client
// checked against the OpenAPI document): the landing page, conformance and
// collections; the sensors as features, all and by bounding box and page, equal to the
// REST list; every EDR query's CoverageJSON valid under the CoverageJSON schema and
// equal in its values to the REST readings of the same sensor and window (qc= too); the
// bounds and the errors; then GDAL's ogrinfo and OWSLib.
func TestOGCAgainstRESTAndClients(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	s := startStack(t)
	since, until := window()
	dt := url.QueryEscape(datetimeParam(since, until))
	v, err := openapi.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	validating = v.Transport(t, nil)
	defer func() { validating = nil }()

	t.Run("landing and conformance", func(t *testing.T) {
		l := decode[struct {
			Links []struct{ Href, Rel, Type string }
		}](t, get(t, s.ogc), "landing")
		rels := map[string]string{}
		for _, x := range l.Links {
			rels[x.Rel] = x.Href
		}
		for _, rel := range []string{"self", "conformance", "data", "service-desc"} {
			if rels[rel] == "" {
				t.Errorf("landing: no %s link in %v", rel, l.Links)
			}
		}
		if r := getKey(t, rels["service-desc"], ""); r.status != 200 {
			t.Errorf("service-desc %s: %d", rels["service-desc"], r.status)
		}
		c := decode[struct{ ConformsTo []string }](t, get(t, s.ogc+"/conformance"), "conformance")
		for _, want := range []string{"ogcapi-features-1/1.0/conf/core", "ogcapi-features-1/1.0/conf/geojson",
			"ogcapi-edr-1/1.1/conf/core", "ogcapi-edr-1/1.1/conf/position", "ogcapi-edr-1/1.1/conf/radius",
			"ogcapi-edr-1/1.1/conf/area", "ogcapi-edr-1/1.1/conf/locations", "ogcapi-edr-1/1.1/conf/covjson", "ogcapi-edr-1/1.1/conf/geojson"} {
			if !slices.ContainsFunc(c.ConformsTo, func(s string) bool { return strings.HasSuffix(s, want) }) {
				t.Errorf("conformance lacks %s", want)
			}
		}
		if r := getKey(t, s.ogc, ""); r.status != 401 {
			t.Errorf("without a key: %d, want 401", r.status)
		}
	})

	t.Run("collections", func(t *testing.T) {
		type col struct {
			ID       string
			ItemType string
			Extent   struct {
				Spatial  struct{ BBox [][4]float64 }
				Temporal *struct{ Interval [][2]*string }
			}
			DataQueries    map[string]any `json:"data_queries"`
			ParameterNames map[string]struct {
				Unit             struct{ Symbol string }
				ObservedProperty struct{ Label map[string]string }
			} `json:"parameter_names"`
			OutputFormats []string `json:"output_formats"`
		}
		cs := decode[struct{ Collections []col }](t, get(t, s.ogc+"/collections"), "collections")
		byID := map[string]col{}
		for _, c := range cs.Collections {
			byID[c.ID] = c
		}
		if byID["sensors"].ItemType != "feature" {
			t.Errorf("sensors collection: %+v", byID["sensors"])
		}
		for _, id := range []string{"ocean", "weather"} {
			c, ok := byID[id]
			if !ok {
				t.Fatalf("no collection %s in %v", id, cs.Collections)
			}
			for _, q := range []string{"position", "radius", "area", "locations"} {
				if c.DataQueries[q] == nil {
					t.Errorf("%s: no data query %s", id, q)
				}
			}
			if len(c.ParameterNames) == 0 || c.Extent.Temporal == nil || len(c.Extent.Spatial.BBox) != 1 {
				t.Errorf("%s: parameters %v extent %+v", id, c.ParameterNames, c.Extent)
			}
			for p, d := range c.ParameterNames {
				if d.Unit.Symbol == "" || d.ObservedProperty.Label["en"] == "" {
					t.Errorf("%s: parameter %s: %+v", id, p, d)
				}
			}
		}
		if sym := byID["ocean"].ParameterNames["water_temperature_c"].Unit.Symbol; sym != "°C" {
			t.Errorf("ocean water_temperature_c symbol %q, want °C", sym)
		}
		// The ocean extent holds every ocean sensor.
		b := byID["ocean"].Extent.Spatial.BBox[0]
		for _, x := range s.oceanSensors {
			if *x.Longitude < b[0] || *x.Longitude > b[2] || *x.Latitude < b[1] || *x.Latitude > b[3] {
				t.Errorf("ocean sensor %s at %v,%v outside the extent %v", x.ID, *x.Longitude, *x.Latitude, b)
			}
		}
	})

	t.Run("features equal the REST list", func(t *testing.T) {
		rest, total := restAll(t, s.api, "")
		var got []string
		u := s.ogc + "/collections/sensors/items?limit=1000"
		matched := -1
		for u != "" {
			fc := decode[featureCollection](t, get(t, u), "items")
			if fc.Type != "FeatureCollection" || fc.NumberReturned != len(fc.Features) {
				t.Fatalf("items: type %q returned %d of %d", fc.Type, fc.NumberReturned, len(fc.Features))
			}
			matched = fc.NumberMatched
			got = append(got, fc.ids()...)
			u = fc.next()
		}
		if matched != total || !slices.Equal(got, ids(rest)) {
			t.Errorf("items: matched %d, %d ids; REST total %d, %d ids", matched, len(got), total, len(rest))
		}
		// An offset off the page grid: the REST list's slice.
		fc := decode[featureCollection](t, get(t, s.ogc+"/collections/sensors/items?limit=7&offset=3"), "items offset")
		if !slices.Equal(fc.ids(), ids(rest[3:10])) || fc.next() == "" {
			t.Errorf("offset 3 limit 7: %v, want %v", fc.ids(), ids(rest[3:10]))
		}
		// bbox and a REST filter, against the REST list's box.
		restBox, boxTotal := restAll(t, s.api, "min_lon=-180&min_lat=-90&max_lon=-80&max_lat=45&status=active")
		var boxIDs []string
		for u := s.ogc + "/collections/sensors/items?limit=1000&bbox=-180,-90,-80,45&status=active"; u != ""; {
			fc := decode[featureCollection](t, get(t, u), "items bbox")
			if fc.NumberMatched != boxTotal {
				t.Errorf("bbox: %d matched, REST %d", fc.NumberMatched, boxTotal)
			}
			boxIDs = append(boxIDs, fc.ids()...)
			u = fc.next()
		}
		if len(restBox) == 0 || !slices.Equal(boxIDs, ids(restBox)) {
			t.Errorf("bbox: %d ids, REST %d", len(boxIDs), len(restBox))
		}
		// One item by UUID and by external id; an unknown one is 404.
		one := s.oceanSensors[0]
		for _, ref := range []string{one.ID, one.ExternalID} {
			f := decode[struct {
				ID         string
				Properties restSensor
				Geometry   struct{ Coordinates [2]float64 }
			}](t, get(t, s.ogc+"/collections/sensors/items/"+url.PathEscape(ref)), "item")
			if f.ID != one.ID || f.Geometry.Coordinates != [2]float64{*one.Longitude, *one.Latitude} {
				t.Errorf("item %s: %+v", ref, f)
			}
		}
		if r := get(t, s.ogc+"/collections/sensors/items/00000000-0000-0000-0000-000000000000"); r.status != 404 {
			t.Errorf("unknown item: %d %s", r.status, r.body)
		}
	})

	t.Run("locations", func(t *testing.T) {
		var got []string
		u := s.ogc + "/collections/ocean/locations"
		for u != "" {
			fc := decode[featureCollection](t, get(t, u), "locations")
			got = append(got, fc.ids()...)
			u = fc.next()
		}
		all, _ := restAll(t, s.api, "")
		var want []string
		for _, x := range all {
			if x.ConnectedService == "ocean" {
				want = append(want, x.ID)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("ocean locations %v, REST ocean sensors %v", got, want)
		}
	})

	t.Run("location time series equals REST readings", func(t *testing.T) {
		for _, x := range s.oceanSensors[:3] {
			for _, ref := range []string{x.ID, x.ExternalID} {
				r := get(t, s.ogc+"/collections/ocean/locations/"+url.PathEscape(ref)+"?datetime="+dt)
				covAnswer(t, r, "location "+ref)
				var c coverage
				_ = json.Unmarshal(r.body, &c)
				if c.Type != "Coverage" || c.Domain.DomainType != "PointSeries" || c.ID != x.ID {
					t.Errorf("location %s: %s %s %s", ref, c.Type, c.Domain.DomainType, c.ID)
				}
				sameValues(t, "location "+ref, c.values(), restSeries(t, s.api, x.ID, since, until, ""))
			}
		}
		// One parameter and qc=good: REST's answer to the same.
		x := s.oceanSensors[0]
		r := get(t, s.ogc+"/collections/ocean/locations/"+x.ID+"?parameter-name=water_temperature_c&qc=good&datetime="+dt)
		covAnswer(t, r, "location one parameter")
		var c coverage
		_ = json.Unmarshal(r.body, &c)
		if len(c.Ranges) != 1 {
			t.Errorf("ranges %v, want water_temperature_c only", c.Ranges)
		}
		sameValues(t, "location qc=good", c.values(), restSeries(t, s.api, x.ID, since, until, "&parameter=water_temperature_c&qc=good"))
	})

	t.Run("position radius area equal REST readings", func(t *testing.T) {
		x := s.oceanSensors[1]
		pt := url.QueryEscape(fmt.Sprintf("POINT(%v %v)", *x.Longitude, *x.Latitude))
		check := func(what, u string, want []restSensor) {
			t.Helper()
			r := get(t, u)
			covAnswer(t, r, what)
			var cc struct {
				Type, DomainType string
				Coverages        []coverage
			}
			_ = json.Unmarshal(r.body, &cc)
			if cc.Type != "CoverageCollection" || cc.DomainType != "PointSeries" {
				t.Errorf("%s: %s %s", what, cc.Type, cc.DomainType)
			}
			var got []string
			for _, c := range cc.Coverages {
				got = append(got, c.ID)
				sameValues(t, what+" "+c.ID, c.values(), restSeries(t, s.api, c.ID, since, until, ""))
			}
			if w := ids(want); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(w))) {
				t.Errorf("%s: coverages %v, want %v", what, got, w)
			}
		}
		near := func(km float64) []restSensor {
			rs, _ := restAll(t, s.api, fmt.Sprintf("lat=%v&lon=%v&radius_km=%v", *x.Latitude, *x.Longitude, km))
			var out []restSensor
			for _, r := range rs {
				if r.ConnectedService == "ocean" && r.FeedID != nil {
					out = append(out, r)
				}
			}
			return out
		}
		check("position", s.ogc+"/collections/ocean/position?coords="+pt+"&datetime="+dt, near(1))
		check("radius km", s.ogc+"/collections/ocean/radius?coords="+pt+"&within=800&within-units=km&datetime="+dt, near(800))
		check("radius mi", s.ogc+"/collections/ocean/radius?coords="+pt+"&within=500&within-units=mi&datetime="+dt, near(500*1.609344))
		poly := url.QueryEscape("POLYGON((-180 -90, 180 -90, 180 90, -180 90, -180 -90))")
		check("area", s.ogc+"/collections/ocean/area?coords="+poly+"&datetime="+dt, s.oceanSensors)
	})

	t.Run("errors and bounds", func(t *testing.T) {
		world := url.QueryEscape("POLYGON((-180 -90, 180 -90, 180 90, -180 90, -180 -90))")
		for _, c := range []struct{ path, culprit string }{
			{"/collections/ocean/position?coords=POINT(1)", "coords"},
			{"/collections/ocean/position?coords=" + url.QueryEscape("POINT(200 10)"), "coords"},
			{"/collections/ocean/position?coords=" + world, "coords"},
			{"/collections/ocean/area?coords=" + url.QueryEscape("POLYGON((0 0, 1 1))"), "coords"},
			{"/collections/ocean/area?coords=nonsense", "coords"},
			{"/collections/ocean/position?coords=" + url.QueryEscape("POINT(0 0)") + "&parameter-name=pm2_5_ug_per_m3", "parameter-name"},
			{"/collections/ocean/position?coords=" + url.QueryEscape("POINT(0 0)") + "&parameter-name=bogus", "parameter-name"},
			{"/collections/ocean/radius?coords=" + url.QueryEscape("POINT(0 0)") + "&within=5&within-units=furlongs", "within-units"},
			{"/collections/ocean/radius?coords=" + url.QueryEscape("POINT(0 0)") + "&within=-1&within-units=km", "within"},
			{"/collections/ocean/locations/" + s.oceanSensors[0].ID + "?datetime=2020-01-01T00:00:00Z/2021-01-03T00:00:00Z", "datetime"},
			{"/collections/ocean/locations/" + s.oceanSensors[0].ID + "?datetime=yesterday", "datetime"},
			{"/collections/ocean/locations/" + s.oceanSensors[0].ID + "?qc=shiny", "qc"},
			{"/collections/ocean/locations/" + s.oceanSensors[0].ID + "?colour=blue", "colour"},
			{"/collections/sensors/items?bbox=1,2,3", "bbox"},
			{"/collections/sensors/items?limit=0", "limit"},
			{"/collections/sensors/items?offset=-1", "offset"},
			{"/collections/sensors/items?page=2", "page"},
			// Every weather station: more than an EDR query reads.
			{"/collections/weather/area?coords=" + world, "coords"},
		} {
			r := get(t, s.ogc+c.path)
			var e struct{ Error, Code string }
			if r.status != 400 || json.Unmarshal(r.body, &e) != nil || e.Code != "invalid_parameter" || !strings.Contains(e.Error, `"`+c.culprit+`"`) {
				t.Errorf("%s: %d %s, want 400 naming %q", c.path, r.status, r.body, c.culprit)
			}
		}
		for _, p := range []string{"/collections/nowhere", "/collections/nowhere/locations", "/collections/ocean/items",
			"/collections/weather/locations/" + s.oceanSensors[0].ID, "/collections/sensors/position?coords=POINT(0%200)"} {
			if r := get(t, s.ogc+p); r.status != 404 {
				t.Errorf("%s: %d %s, want 404", p, r.status, r.body)
			}
		}
	})

	t.Run("GDAL ogrinfo", func(t *testing.T) {
		if _, err := exec.LookPath("ogrinfo"); err != nil {
			t.Skip("ogrinfo not installed (Debian gdal-bin; scripts/prereqs.sh installs it)")
		}
		_, total := restAll(t, s.api, "")
		out := ogrinfo(t, s.ogc, "-so", "-ro")
		m := regexp.MustCompile(`Feature Count: (\d+)`).FindStringSubmatch(out)
		if m == nil || m[1] != strconv.Itoa(total) {
			t.Errorf("ogrinfo feature count %v, REST total %d\n%s", m, total, out)
		}
		t.Logf("ogrinfo -so:\n%s", out)
		// A spatial filter: the same sensors as the REST box.
		restBox, _ := restAll(t, s.api, "min_lon=-100&min_lat=10&max_lon=-50&max_lat=50")
		out = ogrinfo(t, s.ogc, "-ro", "-spat", "-100", "10", "-50", "50")
		var got []string
		for _, m := range regexp.MustCompile(`(?m)^\s*id \(String\) = (\S+)`).FindAllStringSubmatch(out, -1) {
			got = append(got, m[1])
		}
		if len(restBox) == 0 || !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(ids(restBox)))) {
			t.Errorf("ogrinfo -spat: %d features %v..., REST box %d", len(got), head(got), len(restBox))
		}
	})

	t.Run("OWSLib", func(t *testing.T) {
		py := "/usr/bin/python3"
		if err := exec.Command(py, "-c", "import owslib.ogcapi.features").Run(); err != nil {
			t.Skip("OWSLib not installed (Debian python3-owslib; scripts/prereqs.sh installs it)")
		}
		x := s.oceanSensors[0]
		cmd := exec.Command(py, "testdata/owslib_read.py", s.ogc, devKey, "ocean", x.ExternalID, datetimeParam(since, until))
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("owslib: %v\n%s", err, stderr)
		}
		var got struct {
			Collections        []string `json:"collections"`
			FeatureCollections []string `json:"feature_collections"`
			ItemsMatched       int      `json:"items_matched"`
			ItemsIDs           []string `json:"items_ids"`
			Item               string   `json:"item"`
			BBoxIDs            []string `json:"bbox_ids"`
			EDR                struct {
				ID         string
				Queries    []string
				Parameters []string
			} `json:"edr_collection"`
			Coverage struct {
				Type, DomainType string
				T                []string
				Ranges           map[string][]*float64
			} `json:"coverage"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("owslib output: %v\n%s", err, out)
		}
		t.Logf("OWSLib read: %d collections, %d items, coverage of %d times", len(got.Collections), got.ItemsMatched, len(got.Coverage.T))
		rest, total := restAll(t, s.api, "")
		restBox, _ := restAll(t, s.api, "min_lon=-180&min_lat=0&max_lon=180&max_lat=90")
		if got.ItemsMatched != total || !slices.Equal(got.ItemsIDs, ids(rest)[:min(1000, len(rest))]) || got.Item != rest[0].ID {
			t.Errorf("owslib items: matched %d (REST %d), first item %s", got.ItemsMatched, total, got.Item)
		}
		if want := ids(restBox); !slices.Equal(got.BBoxIDs, want[:min(1000, len(want))]) {
			t.Errorf("owslib bbox: %d ids, REST %d", len(got.BBoxIDs), len(restBox))
		}
		if !slices.Equal(got.FeatureCollections, []string{"sensors"}) || !slices.Contains(got.Collections, "ocean") ||
			!slices.Equal(got.EDR.Queries, []string{"area", "locations", "position", "radius"}) {
			t.Errorf("owslib collections: %+v", got)
		}
		c := coverage{Type: got.Coverage.Type}
		c.Domain.Axes = map[string]struct {
			Values []any `json:"values"`
		}{"t": {Values: toAny(got.Coverage.T)}}
		c.Ranges = map[string]struct {
			Values []*float64 `json:"values"`
		}{}
		for p, v := range got.Coverage.Ranges {
			c.Ranges[p] = struct {
				Values []*float64 `json:"values"`
			}{v}
		}
		if got.Coverage.Type != "Coverage" || got.Coverage.DomainType != "PointSeries" {
			t.Errorf("owslib coverage %s %s", got.Coverage.Type, got.Coverage.DomainType)
		}
		sameValues(t, "owslib coverage", c.values(), restSeries(t, s.api, x.ID, since, until, ""))
	})
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func head(ss []string) []string { return ss[:min(3, len(ss))] }

// ogrinfo runs GDAL's ogrinfo on the sensors collection through the OGC API - Features
// driver, the key in GDAL_HTTP_HEADERS.
func ogrinfo(t *testing.T, base string, args ...string) string {
	t.Helper()
	cmd := exec.Command("ogrinfo", append(append([]string{}, args...), "OAPIF:"+base, "sensors")...)
	cmd.Env = append(os.Environ(), "GDAL_HTTP_HEADERS=x-api-key: "+devKey, "CPL_DEBUG=OFF", "GDAL_HTTP_TIMEOUT=120")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ogrinfo %v: %v\n%s", args, err, out)
	}
	return string(out)
}
