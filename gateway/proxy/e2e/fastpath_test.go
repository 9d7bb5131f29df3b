package e2e

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// TestNativePathMatchesEngine sends one sequence of requests to two gateway processes on
// one catalog and one service, one answering the readings routes on its native fast path
// (package fastpath, the default) and one through the Gin engine (GATEWAY_FASTPATH=false),
// and requires the same answers: status, body and every header a client acts on, including
// the rate limit's as the key's small budget runs out.
func TestNativePathMatchesEngine(t *testing.T) {
	t.Parallel()
	ocean := startService(t, "ocean")
	db := testenv.Postgres(t)
	gw := func(extra ...string) gatewayEnv {
		return gatewayEnv{addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), databaseURL: db, env: "production",
			services: "ocean=" + ocean.url,
			extra:    append([]string{"RATE_LIMIT_PLANS=big=1000000/h,small=30/h", "READINGS_CACHE_TTL=60s"}, extra...)}
	}
	native, engine := gw(), gw("GATEWAY_FASTPATH=false")
	discover := createKey(t, native, "big") // also migrates the shared catalog
	key := createKey(t, native, "small")
	startProc(t, "gateway-native", bin(t, "gateway"), native.list())
	startProc(t, "gateway-engine", bin(t, "gateway"), engine.list())
	a, b := "http://"+native.addr, "http://"+engine.addr
	waitOK(t, a+"/healthz")
	waitOK(t, b+"/healthz")
	s := sensorOf(t, a, discover, "ocean")
	sensorOf(t, b, discover, "ocean")

	type request struct {
		name, path string
		hdr        []string
	}
	k := []string{"x-api-key", key}
	base := "/api/v1/sensors/" + s.ExternalID
	reqs := []request{
		{"latest by external id", base + "/readings/latest", k},
		{"latest by UUID", "/api/v1/sensors/" + s.ID + "/readings/latest", k},
		{"latest again (cached)", base + "/readings/latest", k},
		{"readings page", base + "/readings?limit=2", k},
		{"readings, same query spelled otherwise", base + "/readings?limit=2&unknown=1", k},
		{"readings descending", base + "/readings?limit=3&sort=desc", k},
		{"empty range", base + "/readings?since=2001-01-01T00:00:00Z&until=2001-01-02T00:00:00Z", k},
		{"latest with a parameter", base + "/readings/latest?parameter=wave_height", k},
		{"bad limit", base + "/readings?limit=abc", k},
		{"bad since", base + "/readings?since=yesterday", k},
		{"unknown sensor", "/api/v1/sensors/NO-SUCH-SENSOR/readings/latest", k},
		{"unknown UUID", "/api/v1/sensors/00000000-0000-5000-8000-000000000000/readings", k},
		{"escaped slash in id", "/api/v1/sensors/a%2fb/readings", k},
		{"dot-dot id", "/api/v1/sensors/../readings", k},
		{"NUL in id", "/api/v1/sensors/a%00b/readings", k},
		{"trailing slash", base + "/readings/latest/", k},
		{"no key", base + "/readings/latest", nil},
		{"unknown key", base + "/readings/latest", []string{"x-api-key", "sg_live_nosuchkey"}},
		{"caller's request id", base + "/readings/latest", []string{"x-api-key", key, "X-Request-Id", "e2e-native-1"}},
	}
	for i := 0; i < 40; i++ { // past the budget of 30: 429s
		reqs = append(reqs, request{"budget " + strconv.Itoa(i), base + "/readings?limit=1", k})
	}

	compare := func(name string, ra, rb reply) {
		t.Helper()
		if ra.err != nil || rb.err != nil {
			t.Fatalf("%s: native %v, engine %v", name, ra.err, rb.err)
		}
		if ra.status != rb.status || string(ra.body) != string(rb.body) {
			t.Errorf("%s: native %d %s\nengine %d %s", name, ra.status, ra.body, rb.status, rb.body)
		}
		for _, h := range []string{"Content-Type", "Cache-Control", "Etag", "X-Ratelimit-Limit", "X-Ratelimit-Remaining"} {
			if ra.header.Get(h) != rb.header.Get(h) {
				t.Errorf("%s: %s native %q, engine %q", name, h, ra.header.Get(h), rb.header.Get(h))
			}
		}
		// Seconds rounded up from slightly different instants may differ by one.
		for _, h := range []string{"X-Ratelimit-Reset", "Retry-After"} {
			va, ea := strconv.Atoi(ra.header.Get(h))
			vb, eb := strconv.Atoi(rb.header.Get(h))
			if (ea == nil) != (eb == nil) || va-vb > 1 || vb-va > 1 {
				t.Errorf("%s: %s native %q, engine %q", name, h, ra.header.Get(h), rb.header.Get(h))
			}
		}
		if ra.header.Get("X-Request-Id") == "" || rb.header.Get("X-Request-Id") == "" {
			t.Errorf("%s: no X-Request-Id (native %q, engine %q)", name, ra.header.Get("X-Request-Id"), rb.header.Get("X-Request-Id"))
		}
	}
	var etag string
	statuses := map[int]int{}
	for _, r := range reqs {
		ra, rb := get(a+r.path, r.hdr...), get(b+r.path, r.hdr...)
		compare(r.name, ra, rb)
		statuses[ra.status]++
		if r.name == "latest by external id" {
			etag = ra.header.Get("Etag")
		}
		if r.name == "caller's request id" && (ra.header.Get("X-Request-Id") != "e2e-native-1" || rb.header.Get("X-Request-Id") != "e2e-native-1") {
			t.Errorf("request id not echoed: native %q, engine %q", ra.header.Get("X-Request-Id"), rb.header.Get("X-Request-Id"))
		}
	}
	// Conditional request, answered 304 by both, after the budget is spent: a 429 first.
	if etag == "" {
		t.Fatal("the first latest answer had no ETag")
	}
	ra, rb := get(a+base+"/readings/latest", "x-api-key", discover, "If-None-Match", etag), get(b+base+"/readings/latest", "x-api-key", discover, "If-None-Match", etag)
	compare("If-None-Match", ra, rb)
	if ra.status != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: %d, want 304", ra.status)
	}
	// The sequence must have exercised what it claims to: answers, client errors, 404s,
	// 401s and 429s.
	for _, st := range []int{200, 400, 401, 404, 429} {
		if statuses[st] == 0 {
			t.Errorf("no %d in the sequence (statuses %v)", st, statuses)
		}
	}
	t.Logf("statuses of %d requests, equal on both paths: %v", len(reqs), statuses)
}
