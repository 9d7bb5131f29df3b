package app

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

type sensorPage struct {
	Sensors    []map[string]any    `json:"sensors"`
	Pagination contract.Pagination `json:"pagination"`
}

func (g *gateway) sensors(t *testing.T, path, query string) sensorPage {
	t.Helper()
	r := g.get(t, path+"?"+query, devKey)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s?%s: %d %s", path, query, r.status, r.body)
	}
	var p sensorPage
	r.json(t, &p)
	return p
}

func pageIDs(p sensorPage) []string {
	out := make([]string, len(p.Sensors))
	for i, s := range p.Sensors {
		out[i], _ = s["id"].(string)
	}
	return out
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s ...string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

var (
	fullFields = sorted("id", "external_id", "name", "description", "sensor_type", "status", "data_types",
		"deployment_date", "decommissioned_date", "latitude", "longitude", "provider_id", "provider_name",
		"provider_slug", "feed_id", "feed_name", "connected_service")
	minimalFields = sorted("id", "name", "latitude", "longitude", "sensor_type")
)

// TestGateway starts whole gateways through Run, on SQLite and on PostgreSQL, loads the
// catalog fixture with the admin command, and checks every catalog endpoint and rule over
// HTTP, with every exchange validated against the OpenAPI document.
func TestGateway(t *testing.T) {
	t.Parallel()
	for name, backend := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The services are unreachable on purpose: the catalog comes from the fixture only,
			// whatever else runs on this machine.
			e := backend(t).with("SENSORGATE_ENV", "development", "SYNC_INTERVAL", "0", "KEY_CACHE_TTL", "1s", "LOG_LEVEL", "warn",
				"SERVICE_URLS", "ocean=http://127.0.0.1:1,weather=http://127.0.0.1:1,airquality=http://127.0.0.1:1")
			if out := mustAdmin(t, e, "migrate"); !strings.Contains(out, "up to date") {
				t.Errorf("migrate said %q", out)
			}
			out := mustAdmin(t, e, "catalog", "import", fixturePath)
			for _, s := range []string{"ocean: 12 inserted", "weather: 10 inserted", "airquality: 8 inserted"} {
				if !strings.Contains(out, s) {
					t.Errorf("catalog import output lacks %q:\n%s", s, out)
				}
			}
			g := startGateway(t, e)
			ref := loadFixture(t)
			t.Run("probes", func(t *testing.T) { testProbes(t, g) })
			t.Run("errors", func(t *testing.T) { testRoutingErrors(t, g) })
			t.Run("keys", func(t *testing.T) { testKeys(t, g, e) })
			t.Run("sensor list", func(t *testing.T) { testSensorList(t, g, ref) })
			t.Run("map filters", func(t *testing.T) { testMapFilters(t, g, ref) })
			t.Run("bad parameters", func(t *testing.T) { testBadParameters(t, g) })
			t.Run("sensor", func(t *testing.T) { testSensor(t, g, ref) })
			t.Run("services", func(t *testing.T) { testServices(t, g) })
			t.Run("projects", func(t *testing.T) { testProjects(t, g, e) })
		})
	}
}

func testProbes(t *testing.T, g *gateway) {
	r := g.get(t, "/healthz", "")
	if r.status != http.StatusOK || r.object(t)["status"] != "ok" {
		t.Errorf("/healthz: %d %s", r.status, r.body)
	}
	r = g.get(t, "/readyz", "")
	if r.status != http.StatusOK {
		t.Fatalf("/readyz: %d %s", r.status, r.body)
	}
	var ready struct {
		Status string
		Checks map[string]string
	}
	r.json(t, &ready)
	if ready.Status != "ready" || ready.Checks["store"] != "ok" {
		t.Errorf("/readyz: %s", r.body)
	}
	if _, ok := ready.Checks["ratelimit"]; !ok {
		t.Errorf("/readyz has no ratelimit check: %s", r.body)
	}
	if r := g.get(t, "/metrics", ""); r.status != http.StatusOK || !strings.Contains(string(r.body), "sensorgate_http_request") {
		t.Errorf("/metrics: %d, has no sensorgate_http_request series", r.status)
	}
}

func testRoutingErrors(t *testing.T, g *gateway) {
	wantError(t, g.get(t, "/api/v1/nothing-here", devKey), http.StatusNotFound, "not_found", "/api/v1/nothing-here")
	wantError(t, g.get(t, "/nope", ""), http.StatusNotFound, "not_found")
	// A trailing slash names the same resource (no redirect).
	if r := g.get(t, "/api/v1/sensors/?limit=1", devKey); r.status != http.StatusOK {
		t.Errorf("GET /api/v1/sensors/: %d %s", r.status, r.body)
	}
	for _, m := range []string{http.MethodPost, http.MethodDelete, http.MethodPut} {
		r := g.do(t, m, "/api/v1/sensors", devKey)
		wantError(t, r, http.StatusMethodNotAllowed, "method_not_allowed", m)
		if r.header.Get("Allow") != "GET" {
			t.Errorf("%s /api/v1/sensors: Allow %q, want GET", m, r.header.Get("Allow"))
		}
	}
	r := g.get(t, "/api/v1/sensors/types", devKey)
	if id := r.header.Get("X-Request-Id"); id == "" {
		t.Errorf("no X-Request-Id on a response")
	}
	r = g.do(t, http.MethodGet, "/api/v1/sensors/types", devKey, "X-Request-Id", "my-request-42")
	if id := r.header.Get("X-Request-Id"); id != "my-request-42" {
		t.Errorf("X-Request-Id %q, want the caller's", id)
	}
	// ETag: the same answer revalidates to 304.
	r = g.get(t, "/api/v1/sensors?limit=3", devKey)
	etag := r.header.Get("ETag")
	if etag == "" {
		t.Fatalf("no ETag on a catalog answer")
	}
	r = g.do(t, http.MethodGet, "/api/v1/sensors?limit=3", devKey, "If-None-Match", etag)
	if r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Errorf("If-None-Match with the current ETag: %d %q", r.status, r.body)
	}
	if r := g.do(t, http.MethodGet, "/api/v1/sensors?limit=4", devKey, "If-None-Match", etag); r.status != http.StatusOK {
		t.Errorf("If-None-Match with another answer's ETag: %d", r.status)
	}
}

func testKeys(t *testing.T, g *gateway, e env) {
	wantError(t, g.get(t, "/api/v1/sensors", ""), http.StatusUnauthorized, "missing_api_key", "x-api-key")
	wantError(t, g.get(t, "/api/v1/sensors", "sg_dev_00000000000000000000000000000000"), http.StatusUnauthorized, "invalid_api_key")
	wantError(t, g.get(t, "/api/v1/sensors", strings.Repeat("k", 5000)), http.StatusUnauthorized, "invalid_api_key")
	// Authentication comes before parameter checks: a stranger learns nothing.
	wantError(t, g.get(t, "/api/v1/sensors?limit=abc", ""), http.StatusUnauthorized, "missing_api_key")

	created := mustAdmin(t, e, "keys", "create", "--owner", "alice", "--env", "production", "--plan", "pro")
	prod := keyLine(t, created)
	if !strings.HasPrefix(prod, "sg_live_") || len(prod) < len("sg_live_")+32 {
		t.Errorf("production key %q: want sg_live_ and at least 128 bits of hex", prod)
	}
	if n := strings.Count(created, prod); n != 1 {
		t.Errorf("keys create printed the key %d times", n)
	}
	bobOut := mustAdmin(t, e, "keys", "create", "--owner", "bob", "--env", "development")
	bob := keyLine(t, bobOut)
	list := mustAdmin(t, e, "keys", "list")
	for _, secret := range []string{prod, bob, devKey} {
		if strings.Contains(list, secret) {
			t.Errorf("keys list shows a whole key:\n%s", list)
		}
	}
	for _, want := range []string{"alice", "bob", "development", "production", "pro", prod[:16], bob[:15]} {
		if !strings.Contains(list, want) {
			t.Errorf("keys list lacks %q:\n%s", want, list)
		}
	}

	// A production key on a development gateway is refused like an unknown one.
	wantError(t, g.get(t, "/api/v1/sensors", prod), http.StatusUnauthorized, "invalid_api_key")
	r := g.get(t, "/api/v1/sensors/types", bob)
	if r.status != http.StatusOK {
		t.Fatalf("bob's development key: %d %s", r.status, r.body)
	}
	for _, h := range []string{"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"} {
		if r.header.Get(h) == "" {
			t.Errorf("authenticated answer lacks %s", h)
		}
	}
	if r.header.Get("x-ratelimit-limit") != "1000" {
		t.Errorf("development key limit %q, want 1000", r.header.Get("x-ratelimit-limit"))
	}

	// Revocation: the key was just used (and cached); it must stop working within
	// KEY_CACHE_TTL (1s here), with generous slack for a loaded machine.
	out := mustAdmin(t, e, "keys", "revoke", bob[:15])
	if !strings.Contains(out, "revoked") {
		t.Errorf("keys revoke said %q", out)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := g.get(t, "/api/v1/sensors/types", bob)
		if r.status == http.StatusUnauthorized {
			wantError(t, r, http.StatusUnauthorized, "invalid_api_key")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("revoked key still answers %d after 15s (KEY_CACHE_TTL 1s)", r.status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if list := mustAdmin(t, e, "keys", "list"); !strings.Contains(list, time.Now().UTC().Format("2006-01-02")) {
		t.Errorf("keys list does not show the revocation:\n%s", list)
	}
	if _, err := admin(t, e, "keys", "revoke", "sg_live_nosuchkey"); err == nil || !strings.Contains(err.Error(), "sg_live_nosuchkey") {
		t.Errorf("revoking an unknown key: %v", err)
	}
	if _, err := admin(t, e, "keys", "create", "--env", "production"); err == nil || !strings.Contains(err.Error(), "--owner") {
		t.Errorf("keys create without --owner: %v", err)
	}
	if _, err := admin(t, e, "keys", "create", "--owner", "x", "--env", "staging"); err == nil || !strings.Contains(err.Error(), "staging") {
		t.Errorf("keys create with a bad --env: %v", err)
	}
}

func testSensorList(t *testing.T, g *gateway, ref []refSensor) {
	all := refIDs(ref, func(refSensor) bool { return true })

	p := g.sensors(t, "/api/v1/sensors", "")
	if p.Pagination != (contract.Pagination{Page: 1, Limit: 20, Total: len(ref), TotalPages: (len(ref) + 19) / 20}) {
		t.Errorf("default pagination %+v", p.Pagination)
	}
	if got := pageIDs(p); !slices.Equal(got, all[:20]) {
		t.Errorf("first page is not the first 20 by name, then id:\n got %v\nwant %v", got, all[:20])
	}
	for _, s := range p.Sensors {
		if got := keysOf(s); !slices.Equal(got, fullFields) {
			t.Fatalf("sensor fields %v, want %v", got, fullFields)
		}
	}
	// Every page together is the whole catalog, once, in order.
	var paged []string
	for page := 1; page <= (len(ref)+6)/7; page++ {
		paged = append(paged, pageIDs(g.sensors(t, "/api/v1/sensors", fmtQuery("limit", 7, "page", page)))...)
	}
	if !slices.Equal(paged, all) {
		t.Errorf("pages of 7 do not add up to the catalog in order")
	}
	// Past the end: 200, empty, true total.
	p = g.sensors(t, "/api/v1/sensors", "page=99")
	if len(p.Sensors) != 0 || p.Pagination.Total != len(ref) || p.Pagination.Page != 99 || p.Sensors == nil {
		t.Errorf("page past the end: %+v (%d items)", p.Pagination, len(p.Sensors))
	}
	// A limit above the maximum is clamped and shown.
	if p := g.sensors(t, "/api/v1/sensors", "limit=5000"); p.Pagination.Limit != 1000 || len(p.Sensors) != len(ref) {
		t.Errorf("limit=5000: pagination %+v, %d items", p.Pagination, len(p.Sensors))
	}

	filters := []struct {
		query string
		keep  func(refSensor) bool
	}{
		{"sensor_type=buoy", func(s refSensor) bool { return s.Type == "buoy" }},
		{"status=maintenance", func(s refSensor) bool { return s.Status == "maintenance" }},
		{"status=inactive", func(s refSensor) bool { return s.Status == "inactive" }},
		{"provider=noaa-ndbc", func(s refSensor) bool { return s.ProviderSlug == "noaa-ndbc" }},
		{"provider=nobody", func(refSensor) bool { return false }},
		{"search=HATTERAS", func(s refSensor) bool { return strings.Contains(strings.ToLower(s.Name), "hatteras") }},
		{"search=columbus", func(s refSensor) bool {
			return strings.Contains(strings.ToLower(s.Name+s.Description), "columbus")
		}},
		// Provider name and external id are searched too.
		{"search=" + url.QueryEscape("Weather Service"), func(s refSensor) bool { return strings.Contains(s.ProviderName, "Weather Service") }},
		{"search=46071", func(s refSensor) bool { return strings.Contains(s.ExternalID+s.Name+s.Description, "46071") }},
		{"data_types=ozone_ppb", func(s refSensor) bool { return slices.Contains(s.DataTypes, "ozone_ppb") }},
		{"data_types=aqi,wave_height_m", func(s refSensor) bool {
			return slices.Contains(s.DataTypes, "aqi") || slices.Contains(s.DataTypes, "wave_height_m")
		}},
		{"sensor_type=buoy&status=active&data_types=air_temperature_c", func(s refSensor) bool {
			return s.Type == "buoy" && s.Status == "active" && slices.Contains(s.DataTypes, "air_temperature_c")
		}},
	}
	for _, f := range filters {
		want := refIDs(ref, f.keep)
		p := g.sensors(t, "/api/v1/sensors", f.query+"&limit=100")
		if got := pageIDs(p); !slices.Equal(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", f.query, got, want)
		}
		if p.Pagination.Total != len(want) {
			t.Errorf("%s: total %d, want %d", f.query, p.Pagination.Total, len(want))
		}
		// The registry takes the same filters.
		if got := pageIDs(g.sensors(t, "/api/v1/sensors/registry", f.query+"&limit=100")); !slices.Equal(got, want) {
			t.Errorf("registry %s:\n got %v\nwant %v", f.query, got, want)
		}
	}

	// Views: minimal, fields, both, and the registry view.
	for _, c := range []struct {
		path, query string
		want        []string
	}{
		{"/api/v1/sensors", "minimal=true", minimalFields},
		{"/api/v1/sensors", "minimal=1", minimalFields},
		{"/api/v1/sensors", "minimal=false", fullFields},
		{"/api/v1/sensors", "minimal=0", fullFields},
		{"/api/v1/sensors", "fields=name,id,bogus", sorted("id", "name")},
		{"/api/v1/sensors", "fields=" + url.QueryEscape(" status , provider_slug ,,status"), sorted("status", "provider_slug")},
		{"/api/v1/sensors", "fields=only_unknown", fullFields},
		{"/api/v1/sensors", "minimal=true&fields=id,status", minimalFields},
		{"/api/v1/sensors/registry", "", sorted("id", "external_id", "name", "sensor_type", "status", "data_types", "provider_slug", "feed_id", "connected_service", "latitude", "longitude")},
		{"/api/v1/sensors/registry", "minimal=true", minimalFields},
		{"/api/v1/sensors/registry", "fields=feed_id,description", sorted("feed_id")},
	} {
		p := g.sensors(t, c.path, c.query+"&search=hatteras")
		if len(p.Sensors) != 1 {
			t.Fatalf("%s?%s: %d items", c.path, c.query, len(p.Sensors))
		}
		if got := keysOf(p.Sensors[0]); !slices.Equal(got, c.want) {
			t.Errorf("%s?%s: fields %v, want %v", c.path, c.query, got, c.want)
		}
		if p.Pagination.Total != 1 {
			t.Errorf("%s?%s: the envelope changed: %+v", c.path, c.query, p.Pagination)
		}
	}
	// The registry omits the location of a sensor that has none.
	p = g.sensors(t, "/api/v1/sensors/registry", "search=1801593")
	if len(p.Sensors) != 1 {
		t.Fatalf("registry search=1801593: %d items", len(p.Sensors))
	}
	if _, ok := p.Sensors[0]["latitude"]; ok {
		t.Errorf("registry item of a sensor without location has latitude: %v", p.Sensors[0])
	}

	// Distinct types and statuses.
	var types, statuses []string
	g.get(t, "/api/v1/sensors/types", devKey).json(t, &types)
	g.get(t, "/api/v1/sensors/statuses", devKey).json(t, &statuses)
	wantTypes, wantStatuses := map[string]bool{}, map[string]bool{}
	for _, s := range ref {
		wantTypes[s.Type], wantStatuses[s.Status] = true, true
	}
	if got := sorted(types...); !slices.Equal(got, sorted(keysOfBool(wantTypes)...)) {
		t.Errorf("types %v, want %v", types, keysOfBool(wantTypes))
	}
	if got := sorted(statuses...); !slices.Equal(got, sorted(keysOfBool(wantStatuses)...)) {
		t.Errorf("statuses %v, want %v", statuses, keysOfBool(wantStatuses))
	}
}

func keysOfBool(m map[string]bool) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	return out
}

func testMapFilters(t *testing.T, g *gateway, ref []refSensor) {
	located := func(s refSensor) bool { return s.Lat != nil && s.Lon != nil }
	boxes := []struct {
		name                           string
		minLat, minLon, maxLat, maxLon float64
	}{
		{"US east coast", 24, -82, 45, -70},
		{"crossing the antimeridian", 50, 170, 60, -170},
		{"everything", -90, -180, 90, 180},
		{"a point", 31.759, -74.936, 31.759, -74.936},
		{"empty ocean", -60, 0, -50, 10},
	}
	for _, b := range boxes {
		want := refIDs(ref, func(s refSensor) bool {
			if !located(s) || *s.Lat < b.minLat || *s.Lat > b.maxLat {
				return false
			}
			if b.minLon <= b.maxLon {
				return *s.Lon >= b.minLon && *s.Lon <= b.maxLon
			}
			return *s.Lon >= b.minLon || *s.Lon <= b.maxLon
		})
		q := fmtQuery("min_lat", b.minLat, "min_lon", b.minLon, "max_lat", b.maxLat, "max_lon", b.maxLon, "limit", 100)
		if got := pageIDs(g.sensors(t, "/api/v1/sensors", q)); !slices.Equal(got, want) {
			t.Errorf("bbox %s:\n got %v\nwant %v", b.name, got, want)
		}
	}
	// The antimeridian box holds sensors on both sides of it.
	antimeridian := pageIDs(g.sensors(t, "/api/v1/sensors", "min_lat=50&min_lon=170&max_lat=60&max_lon=-170"))
	if len(antimeridian) < 2 {
		t.Errorf("the antimeridian box found %d sensors; the fixture has some on each side", len(antimeridian))
	}

	// Radius: 50 km by default, distance_km on each item, sort=distance orders by it.
	center := ref[slices.IndexFunc(ref, func(s refSensor) bool { return s.ExternalID == "KCMH" })]
	within := func(km float64) []string {
		var ws []refSensor
		for _, s := range ref {
			if located(s) && haversineKM(*center.Lat, *center.Lon, *s.Lat, *s.Lon) <= km {
				ws = append(ws, s)
			}
		}
		return refIDs(ws, func(refSensor) bool { return true })
	}
	q := fmtQuery("lat", *center.Lat, "lon", *center.Lon)
	p := g.sensors(t, "/api/v1/sensors", q)
	if got, want := pageIDs(p), within(50); !slices.Equal(got, want) || len(want) < 2 {
		t.Errorf("radius default 50 km:\n got %v\nwant %v", got, want)
	}
	for _, s := range p.Sensors {
		d, ok := s["distance_km"].(float64)
		if !ok || d < 0 || d > 50 {
			t.Errorf("item %v has distance_km %v", s["id"], s["distance_km"])
		}
	}
	p = g.sensors(t, "/api/v1/sensors", q+"&radius_km=200&sort=distance")
	if got, want := sorted(pageIDs(p)...), sorted(within(200)...); !slices.Equal(got, want) {
		t.Errorf("radius 200 km:\n got %v\nwant %v", got, want)
	}
	last := -1.0
	for _, s := range p.Sensors {
		d := s["distance_km"].(float64)
		if d < last {
			t.Errorf("sort=distance: %v after %v", d, last)
		}
		last = d
	}
	if p.Sensors[0]["id"] != center.ID || p.Sensors[0]["distance_km"].(float64) != 0 {
		t.Errorf("sort=distance: the center sensor is not first at 0 km: %v", p.Sensors[0])
	}
	// A radius around the antimeridian reaches across it.
	adak := ref[slices.IndexFunc(ref, func(s refSensor) bool { return s.ExternalID == "46071" })]
	q = fmtQuery("lat", *adak.Lat, "lon", *adak.Lon, "radius_km", 1000)
	if got, want := sorted(pageIDs(g.sensors(t, "/api/v1/sensors", q))...), sorted(refIDs(ref, func(s refSensor) bool {
		return located(s) && haversineKM(*adak.Lat, *adak.Lon, *s.Lat, *s.Lon) <= 1000
	})...); !slices.Equal(got, want) {
		t.Errorf("radius across the antimeridian:\n got %v\nwant %v", got, want)
	}
	// Map filters return only located sensors; without them the unlocated one is listed
	// with null coordinates.
	p = g.sensors(t, "/api/v1/sensors", "search=1801593")
	if len(p.Sensors) != 1 || p.Sensors[0]["latitude"] != nil || p.Sensors[0]["longitude"] != nil {
		t.Errorf("sensor without location: %v", p.Sensors)
	}
	if _, ok := p.Sensors[0]["latitude"]; !ok {
		t.Errorf("latitude must be present (null) on a full sensor without location")
	}
}

func testBadParameters(t *testing.T, g *gateway) {
	for _, q := range []struct{ query, param string }{
		{"limit=abc", "limit"},
		{"limit=0", "limit"},
		{"limit=-5", "limit"},
		{"page=0", "page"},
		{"page=x", "page"},
		{"min_lat=100&min_lon=0&max_lat=10&max_lon=10", "min_lat"},
		{"min_lat=10&min_lon=0&max_lat=0&max_lon=10", "min_lat"},
		{"min_lat=1&min_lon=2", "max_lat"},
		{"max_lon=nan&min_lat=1&min_lon=1&max_lat=2", "max_lon"},
		{"lat=10", "lon"},
		{"lon=10", "lat"},
		{"lat=91&lon=0", "lat"},
		{"lat=0&lon=181", "lon"},
		{"radius_km=10", "radius_km"},
		{"lat=1&lon=1&radius_km=0", "radius_km"},
		{"lat=1&lon=1&radius_km=-3", "radius_km"},
		{"lat=1&lon=1&min_lat=0&min_lon=0&max_lat=2&max_lon=2", "radius_km"},
		{"sort=distance", "sort"},
		{"sort=size", "sort"},
		{"minimal=yes", "minimal"},
		{"data_types=not_a_parameter", "data_types"},
		{"search=" + strings.Repeat("x", 300), "search"},
	} {
		for _, path := range []string{"/api/v1/sensors", "/api/v1/sensors/registry"} {
			r := g.get(t, path+"?"+q.query, devKey)
			wantError(t, r, http.StatusBadRequest, "invalid_parameter", `"`+q.param+`"`)
		}
	}
	wantError(t, g.get(t, "/api/v1/projects?limit=zero", devKey), http.StatusBadRequest, "invalid_parameter", `"limit"`)
}

func testSensor(t *testing.T, g *gateway, ref []refSensor) {
	s := ref[slices.IndexFunc(ref, func(s refSensor) bool { return s.ExternalID == "46086" })]
	for _, id := range []string{s.ID, s.ExternalID} {
		r := g.get(t, "/api/v1/sensors/"+id, devKey)
		if r.status != http.StatusOK {
			t.Fatalf("GET /sensors/%s: %d %s", id, r.status, r.body)
		}
		m := r.object(t)
		if got := keysOf(m); !slices.Equal(got, fullFields) {
			t.Errorf("fields %v", got)
		}
		if m["id"] != s.ID || m["external_id"] != s.ExternalID || m["connected_service"] != "ocean" ||
			m["status"] != "inactive" || m["decommissioned_date"] != "2024-06-30" || m["provider_slug"] != s.ProviderSlug {
			t.Errorf("sensor %s: %s", id, r.body)
		}
		if d, _ := m["deployment_date"].(string); len(d) != 10 {
			t.Errorf("deployment_date %v is not YYYY-MM-DD", m["deployment_date"])
		}
	}
	// An external id spelled in another ASCII case resolves when only one sensor has it.
	if r := g.get(t, "/api/v1/sensors/tplm2", devKey); r.status != http.StatusOK {
		t.Errorf("lower-case external id: %d", r.status)
	}
	wantError(t, g.get(t, "/api/v1/sensors/99999", devKey), http.StatusNotFound, "sensor_not_found", "99999")
	wantError(t, g.get(t, "/api/v1/sensors/00000000-0000-0000-0000-000000000000", devKey), http.StatusNotFound, "sensor_not_found")
	wantError(t, g.get(t, "/api/v1/sensors/"+strings.Repeat("9", 200), devKey), http.StatusBadRequest, "invalid_parameter", `"id"`)
	// A sensor's decommissioned_date is null while it is in service.
	m := g.get(t, "/api/v1/sensors/41002", devKey).object(t)
	if v, ok := m["decommissioned_date"]; !ok || v != nil {
		t.Errorf("decommissioned_date of an active sensor: %v (present %v)", v, ok)
	}
}

func testServices(t *testing.T, g *gateway) {
	var list []map[string]any
	r := g.get(t, "/api/v1/services", devKey)
	r.json(t, &list)
	if len(list) != 3 {
		t.Fatalf("services: %s", r.body)
	}
	var got []string
	for _, s := range list {
		got = append(got, s["id"].(string))
		if k := keysOf(s); !slices.Equal(k, sorted("id", "name", "description", "domain", "temporal_pattern", "port", "status")) {
			t.Errorf("service record fields %v", k)
		}
	}
	if !slices.Equal(sorted(got...), []string{"airquality", "ocean", "weather"}) {
		t.Errorf("services %v", got)
	}
	var meta struct {
		ID        string
		Port      int
		Providers []struct{ Slug, Name string }
		Feeds     []string
		Tools     []string
		Sensors   int `json:"sensor_count"`
	}
	g.get(t, "/api/v1/services/ocean", devKey).json(t, &meta)
	if meta.ID != "ocean" || meta.Port != 8081 || meta.Sensors != 12 || len(meta.Providers) != 2 || meta.Providers[0].Name == "" ||
		!slices.Equal(sorted(meta.Feeds...), []string{"coops-water-temperature", "ndbc-stdmet"}) || meta.Tools == nil {
		t.Errorf("service metadata: %+v", meta)
	}
	wantError(t, g.get(t, "/api/v1/services/tides", devKey), http.StatusNotFound, "not_found", "tides")
}

type projectPage struct {
	Projects []struct {
		ID, Slug, Visibility, Domain string
		Owner                        string `json:"owner_id"`
		Provider                     struct{ Slug, Name string }
		FeedType                     string `json:"feed_type"`
		SensorCount                  int    `json:"sensor_count"`
	}
	Pagination contract.Pagination
}

func slugs(p projectPage) []string {
	var out []string
	for _, x := range p.Projects {
		out = append(out, x.Slug)
	}
	return sorted(out...)
}

func testProjects(t *testing.T, g *gateway, e env) {
	get := func(key, path string) projectPage {
		t.Helper()
		r := g.get(t, path, key)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		var p projectPage
		r.json(t, &p)
		return p
	}
	public := []string{"airnow-monitors", "coops-water-temperature", "ndbc-stdmet", "nws-observations", "openaq-locations"}
	p := get(devKey, "/api/v1/projects")
	if got := slugs(p); !slices.Equal(got, sorted(append(public, "dev-sandbox")...)) || p.Pagination.Total != len(public)+1 {
		t.Errorf("projects seen by the development user: %v (%+v)", got, p.Pagination)
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"provider=noaa-ndbc", []string{"ndbc-stdmet"}},
		{"domain=ocean", []string{"coops-water-temperature", "ndbc-stdmet"}},
		{"temporal_pattern=periodic", public},
		{"search=water", []string{"coops-water-temperature"}},
	} {
		got := slugs(get(devKey, "/api/v1/projects?"+c.query))
		if !slices.Equal(got, sorted(c.want...)) {
			t.Errorf("projects?%s: %v, want %v", c.query, got, c.want)
		}
	}
	if p := get(devKey, "/api/v1/projects?limit=2&page=2"); len(p.Projects) != 2 || p.Pagination.Total != 6 || p.Pagination.TotalPages != 3 {
		t.Errorf("project paging: %+v", p.Pagination)
	}
	mine := get(devKey, "/api/v1/projects/my")
	if got := slugs(mine); !slices.Equal(got, []string{"dev-sandbox"}) || mine.Projects[0].Visibility != "private" {
		t.Errorf("/projects/my of the development user: %v", got)
	}
	carol := keyLine(t, mustAdmin(t, e, "keys", "create", "--owner", "carol", "--env", "development"))
	if got := get(carol, "/api/v1/projects/my"); len(got.Projects) != 0 || got.Pagination.Total != 0 {
		t.Errorf("/projects/my of a user without projects: %v", slugs(got))
	}
	if got := slugs(get(carol, "/api/v1/projects")); !slices.Equal(got, sorted(public...)) {
		t.Errorf("another user sees %v, want only the public projects", got)
	}
	wantError(t, g.get(t, "/api/v1/projects/dev-sandbox", carol), http.StatusForbidden, "forbidden", "dev-sandbox")
	r := g.get(t, "/api/v1/projects/dev-sandbox", devKey)
	if r.status != http.StatusOK {
		t.Fatalf("owner reads its private project: %d %s", r.status, r.body)
	}
	id := r.object(t)["id"].(string)
	if r := g.get(t, "/api/v1/projects/"+id, devKey); r.status != http.StatusOK || r.object(t)["slug"] != "dev-sandbox" {
		t.Errorf("project by UUID: %d %s", r.status, r.body)
	}
	wantError(t, g.get(t, "/api/v1/projects/"+id, carol), http.StatusForbidden, "forbidden")
	r = g.get(t, "/api/v1/projects/ndbc-stdmet", carol)
	if r.status != http.StatusOK {
		t.Fatalf("public project: %d %s", r.status, r.body)
	}
	m := r.object(t)
	want := sorted("id", "slug", "name", "description", "provider", "domain", "temporal_pattern", "feed_type", "service_id", "sensor_count", "owner_id", "visibility", "created_at")
	if got := keysOf(m); !slices.Equal(got, want) {
		t.Errorf("project fields %v, want %v", got, want)
	}
	if m["service_id"] != "ocean" || m["visibility"] != "public" || m["sensor_count"].(float64) < 1 {
		t.Errorf("public project: %s", r.body)
	}
	wantError(t, g.get(t, "/api/v1/projects/no-such-project", devKey), http.StatusNotFound, "not_found", "no-such-project")
}
