package security

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

const internalToken = "security-suite-internal-token"

// stack is what every group runs against: two production gateway replicas (a, b) sharing
// PostgreSQL and Redis, a third (c) configured with a wrong internal token and its own
// Redis, a real ocean service demanding the token, and the hostile service.
type stack struct {
	a, b, c        gatewayEnv
	gwA            *testenv.Process
	ocean          string
	hostile        *hostile
	alice, bob     string // keys of plan default
	tiny           string // a key of plan tiny (5 requests an hour)
	revoked        string
	oceanID        string // external id of an ocean sensor
	privateProject catalog.Project
}

func startStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{hostile: startHostile(t)}
	oceanAddr := testenv.FreeAddr(t)
	ocean := startProc(t, "ocean", bin(t, "ocean"), []string{"SERVICE_ADDR=" + oceanAddr,
		"READINGS_SQLITE_PATH=" + t.TempDir() + "/ocean.db", "SIM_STATIONS=3", "SIM_DAYS=1", "LOG_LEVEL=warn",
		"OTEL_SDK_DISABLED=true", "INTERNAL_TOKEN=" + internalToken})
	s.ocean = "http://" + oceanAddr
	ocean.WaitReady(t, s.ocean+contract.PathReadyz, 90*time.Second)

	db, rds := testenv.Postgres(t), testenv.StartRedis(t).URL()
	services := "ocean=" + s.ocean + ",hostile=" + s.hostile.url
	s.a = gatewayEnv{addr: testenv.FreeAddr(t), databaseURL: db, redisURL: rds, services: services, token: internalToken}
	s.b, s.c = s.a, s.a
	s.b.addr = testenv.FreeAddr(t)
	s.c.addr, s.c.redisURL, s.c.token = testenv.FreeAddr(t), testenv.StartRedis(t).URL(), "not-the-token"
	s.c.extra = []string{"SYNC_INTERVAL=0"}

	admin(t, s.a, "migrate")
	s.alice, s.bob = createKey(t, s.a, "alice", "default"), createKey(t, s.a, "bob", "default")
	s.tiny, s.revoked = createKey(t, s.a, "tina", "tiny"), createKey(t, s.a, "rex", "default")
	admin(t, s.a, "keys", "revoke", auth.DisplayPrefix(s.revoked))

	// A private project of alice's (projects are made by the catalog, not over HTTP).
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{DatabaseURL: db, SkipMigrations: true})
	if err != nil {
		t.Fatal(err)
	}
	s.privateProject, err = st.CreateProject(ctx, catalog.Project{ID: uuid.New(), Slug: "alice-private", Name: "Alice secret survey",
		Description: "private notes of alice", Domain: "ocean", TemporalPattern: "periodic", FeedType: "timeseries",
		OwnerID: auth.OwnerID("alice"), Visibility: catalog.VisibilityPrivate})
	_ = st.Close()
	if err != nil {
		t.Fatal(err)
	}

	s.gwA = startProc(t, "gateway-a", bin(t, "gateway"), s.a.list())
	gwB := startProc(t, "gateway-b", bin(t, "gateway"), s.b.list())
	gwC := startProc(t, "gateway-c", bin(t, "gateway"), s.c.list())
	s.gwA.WaitReady(t, s.a.url()+"/readyz", 90*time.Second)
	gwB.WaitReady(t, s.b.url()+"/readyz", 90*time.Second)
	gwC.WaitReady(t, s.c.url()+"/readyz", 90*time.Second)
	// The catalog sync brings both services' sensors.
	deadline := time.Now().Add(90 * time.Second)
	for {
		var page struct {
			Sensors []struct {
				ExternalID string `json:"external_id"`
				Service    string `json:"connected_service"`
			}
		}
		r := do(http.MethodGet, s.a.url()+"/api/v1/sensors?limit=1000", nil, "x-api-key", s.alice)
		_ = json.Unmarshal(r.body, &page)
		hostileSeen := 0
		for _, x := range page.Sensors {
			if x.Service == "ocean" && s.oceanID == "" {
				s.oceanID = x.ExternalID
			}
			if x.Service == "hostile" {
				hostileSeen++
			}
		}
		if s.oceanID != "" && hostileSeen == len(hostileStations) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("catalog not synced within 90s: %d %s", r.status, r.body)
		}
		time.Sleep(300 * time.Millisecond)
	}
	return s
}

func randomKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "sg_live_" + hex.EncodeToString(b)
}

// TestOWASPAPITop10 walks the OWASP API Security Top 10 (2023) against real processes, one
// group per item. docs/security.md says what each group proves.
func TestOWASPAPITop10(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a whole stack")
	}
	s := startStack(t)
	t.Run("API1 object level authorization", func(t *testing.T) { api1(t, s) })
	t.Run("API2 authentication", func(t *testing.T) { api2(t, s) })
	t.Run("API3 object property level authorization", func(t *testing.T) { api3(t, s) })
	t.Run("API4 unrestricted resource consumption", func(t *testing.T) { api4(t, s) })
	t.Run("API5 function level authorization", func(t *testing.T) { api5(t, s) })
	t.Run("API6 sensitive business flows", func(t *testing.T) { api6(t, s) })
	t.Run("API7 server side request forgery", func(t *testing.T) { api7(t, s) })
	t.Run("API8 security misconfiguration", func(t *testing.T) { api8(t, s) })
	t.Run("API9 inventory", func(t *testing.T) { api9(t, s) })
	t.Run("API10 unsafe consumption of APIs", func(t *testing.T) { api10(t, s) })
	// Last, because it throttles this test's own address on replicas a and b.
	t.Run("API2 wrong-key throttle across replicas", func(t *testing.T) { api2Throttle(t, s) })
}

// API1: another owner's private project is reachable through no path that takes an id
// (by slug and by UUID, REST and MCP), and lists never show it.
func api1(t *testing.T, s *stack) {
	p := s.privateProject
	for _, ref := range []string{p.Slug, p.ID.String(), strings.ToUpper(p.Slug)} {
		r := do(http.MethodGet, s.a.url()+"/api/v1/projects/"+ref, nil, "x-api-key", s.bob)
		if r.status == http.StatusOK || strings.Contains(string(r.body), p.Description) {
			t.Errorf("bob reads alice's private project %s: %d %s", ref, r.status, r.body)
		}
		if r.status != http.StatusOK {
			r.envelope(t)
		}
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"project_info","arguments":{}}}`,
		} {
			r := do(http.MethodPost, s.a.url()+"/api/v1/projects/"+ref+"/mcp", []byte(body), "x-api-key", s.bob)
			if strings.Contains(string(r.body), p.Description) || strings.Contains(string(r.body), p.Name) ||
				(r.status == http.StatusOK && strings.Contains(string(r.body), `"result"`)) {
				t.Errorf("bob reaches alice's private project over MCP (%s): %d %s", ref, r.status, r.body)
			}
		}
	}
	for _, path := range []string{"/api/v1/projects?limit=1000", "/api/v1/projects/my", "/api/v1/projects?search=secret"} {
		r := do(http.MethodGet, s.a.url()+path, nil, "x-api-key", s.bob)
		if r.status != http.StatusOK || strings.Contains(string(r.body), p.Slug) {
			t.Errorf("bob's %s: %d, shows the private project: %v", path, r.status, strings.Contains(string(r.body), p.Slug))
		}
	}
	// The catalog MCP tools list projects too.
	r := do(http.MethodPost, s.a.url()+"/api/v1/catalog/mcp", []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}`), "x-api-key", s.bob)
	if strings.Contains(string(r.body), p.Slug) {
		t.Errorf("bob's catalog MCP list_projects shows the private project: %s", r.body)
	}
	// Its owner does see it: the refusals above are about ownership, not a broken route.
	if r := do(http.MethodGet, s.a.url()+"/api/v1/projects/"+p.Slug, nil, "x-api-key", s.alice); r.status != http.StatusOK {
		t.Errorf("alice's own private project: %d %s", r.status, r.body)
	}
}

// documentedRoutes are the /api/v1 operations of the OpenAPI document the gateway serves,
// with their path parameters filled in.
func documentedRoutes(t *testing.T, s *stack) [][2]string {
	t.Helper()
	r := do(http.MethodGet, s.a.url()+"/api/v1/openapi.json", nil)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil || len(doc.Paths) == 0 {
		t.Fatalf("openapi.json: %d %v", r.status, err)
	}
	var out [][2]string
	for p, ops := range doc.Paths {
		for m := range ops {
			m = strings.ToUpper(m)
			if m != http.MethodGet && m != http.MethodPost {
				continue
			}
			filled := strings.NewReplacer("{id}", s.oceanID, "{file}", "x.js").Replace(p)
			if strings.HasPrefix(p, "/api/v1/services/") {
				filled = strings.ReplaceAll(p, "{id}", "ocean")
			} else if strings.HasPrefix(p, "/api/v1/projects/") {
				filled = strings.ReplaceAll(p, "{id}", s.privateProject.Slug)
			}
			out = append(out, [2]string{m, filled})
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[1]+a[0], b[1]+b[0]) })
	return out
}

// API2: every documented /api/v1 route refuses a request without a key, with a revoked
// key (in x-api-key or as a Bearer token), and with a key in the query.
func api2(t *testing.T, s *stack) {
	routes := documentedRoutes(t, s)
	attacker := from("127.0.0.66")
	mcp := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	n := 0
	for _, rt := range routes {
		m, p := rt[0], rt[1]
		if !strings.HasPrefix(p, "/api/v1/") || p == "/api/v1/openapi.json" {
			continue
		}
		n++
		var body []byte
		if m == http.MethodPost {
			body = mcp
		}
		do(m, s.a.url()+p, body).wantError(t, m+" "+p+" without a key", 401, "missing_api_key")
		doWith(attacker, m, s.a.url()+p, body, "x-api-key", s.revoked).wantError(t, m+" "+p+" with a revoked key", 401, "invalid_api_key")
		sep := "?"
		if strings.Contains(p, "?") {
			sep = "&"
		}
		for _, q := range []string{"x-api-key=", "api_key=", "apikey=", "key="} {
			do(m, s.a.url()+p+sep+q+s.alice, body).wantError(t, m+" "+p+" with the key in the query ("+q+")", 401, "missing_api_key")
		}
		// A key is a Bearer credential too (docs/api-decisions.md, Wave 4 "OAuth 2.1"): a
		// revoked one is refused there as in x-api-key, and a valid one is not refused.
		doWith(attacker, m, s.a.url()+p, body, "Authorization", "Bearer "+s.revoked).wantError(t, m+" "+p+" with a revoked key as a bearer token", 401, "invalid_api_key")
		if r := do(m, s.a.url()+p, body, "Authorization", "Bearer "+s.alice); r.status == http.StatusUnauthorized {
			t.Errorf("%s %s with the key as a bearer token: %d %s, want it admitted", m, p, r.status, r.body)
		}
	}
	if n < 15 {
		t.Errorf("only %d documented /api/v1 routes found", n)
	}
	// Another environment's key shape and an over-long key are refused alike.
	doWith(attacker, http.MethodGet, s.a.url()+"/api/v1/sensors", nil, "x-api-key", strings.Repeat("k", 5000)).wantError(t, "5000-byte key", 401, "invalid_api_key")
}

// api2Throttle: wrong keys from one address are counted in Redis by every replica; past the
// limit both answer 429 with Retry-After, without a database lookup, while a key already
// in a replica's cache keeps working.
func api2Throttle(t *testing.T, s *stack) {
	attacker := from("127.0.0.77")
	var limited int
	for i := range 3 * auth.DefaultMissLimit {
		g := s.a
		if i%2 == 1 {
			g = s.b
		}
		r := doWith(attacker, http.MethodGet, g.url()+"/api/v1/sensors/types", nil, "x-api-key", randomKey())
		switch r.status {
		case http.StatusUnauthorized:
		case http.StatusTooManyRequests:
			limited++
			r.wantError(t, "throttled", 429, "rate_limited")
			if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
				t.Errorf("throttled answer's Retry-After %q", r.header.Get("Retry-After"))
			}
		default:
			t.Fatalf("random key %d: %d %s", i, r.status, r.body)
		}
	}
	// The two replicas together allowed DefaultMissLimit misses (one may race past).
	if want := 2*auth.DefaultMissLimit - 1; limited < want {
		t.Errorf("%d of %d random keys over two replicas were throttled, want at least %d", limited, 3*auth.DefaultMissLimit, want)
	}
	if r := doWith(attacker, http.MethodGet, s.a.url()+"/api/v1/sensors/types", nil, "x-api-key", s.alice); r.status != http.StatusOK {
		t.Errorf("alice's cached key from the throttled address: %d %s", r.status, r.body)
	}
	// Another address is not throttled: a key it never used before is looked up.
	if r := doWith(from("127.0.0.78"), http.MethodGet, s.b.url()+"/api/v1/sensors/types", nil, "x-api-key", s.revoked); r.status != http.StatusUnauthorized {
		t.Errorf("a revoked key from another address: %d %s, want 401", r.status, r.body)
	}
}

// sensorFields are the only properties a sensor item may have (docs/spec.md 2.1, plus
// distance_km with a radius filter).
var sensorFields = []string{"id", "external_id", "name", "description", "sensor_type", "status", "data_types",
	"deployment_date", "decommissioned_date", "latitude", "longitude", "provider_id", "provider_name",
	"provider_slug", "feed_id", "feed_name", "connected_service", "distance_km"}

// API3: fields= cannot reveal a column the API does not publish, and no record carries a
// key hash, an owner's secret or a service's internal address.
func api3(t *testing.T, s *stack) {
	hidden := "hash,key_hash,ext_key,service_url,internal_url,owner_id,password,prefix,content_hash,updated_at,created_at,id"
	for _, path := range []string{"/api/v1/sensors?fields=" + hidden, "/api/v1/sensors/registry?fields=" + hidden, "/api/v1/sensors?limit=50"} {
		r := do(http.MethodGet, s.a.url()+path, nil, "x-api-key", s.alice)
		var page struct{ Sensors []map[string]any }
		if err := json.Unmarshal(r.body, &page); err != nil || r.status != 200 || len(page.Sensors) == 0 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		for _, item := range page.Sensors {
			for k := range item {
				if !slices.Contains(sensorFields, k) {
					t.Errorf("%s: an item has the property %q", path, k)
				}
			}
		}
	}
	for _, path := range []string{"/api/v1/services", "/api/v1/services/ocean", "/api/v1/projects/my", "/api/v1/sensors/" + s.oceanID} {
		r := do(http.MethodGet, s.a.url()+path, nil, "x-api-key", s.alice)
		for _, leak := range []string{s.ocean, s.hostile.url, internalToken, `"hash"`, "sg_live_"} {
			if strings.Contains(string(r.body), leak) {
				t.Errorf("%s shows %q", path, leak)
			}
		}
	}
}

// API4: every size a client controls is bounded and refused or clamped with the envelope.
func api4(t *testing.T, s *stack) {
	key := []string{"x-api-key", s.alice}
	g := s.a.url()
	big := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 2<<20) + `"}}`)
	do(http.MethodPost, g+"/api/v1/catalog/mcp", big, key...).wantError(t, "2 MiB MCP body", 413, "payload_too_large")
	if r := do(http.MethodGet, g+"/api/v1/sensors", nil, "x-api-key", s.alice, "X-Pad", strings.Repeat("p", 100<<10)); r.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("100 KiB header: %d, want 431", r.status)
	}
	do(http.MethodGet, g+"/api/v1/sensors?page=10000001", nil, key...).wantError(t, "page past the bound", 400, "invalid_parameter")
	r := do(http.MethodGet, g+"/api/v1/sensors?limit=100000000", nil, key...)
	if r.status != 200 || !strings.Contains(string(r.body), `"limit":1000`) {
		t.Errorf("limit=100000000: %d, want clamped to 1000", r.status)
	}
	do(http.MethodGet, g+"/api/v1/sensors/"+s.oceanID+"/readings?days=100000", nil, key...).wantError(t, "100000 days", 400, "invalid_parameter")
	r = do(http.MethodGet, g+"/api/v1/sensors/"+s.oceanID+"/readings?limit=100000", nil, key...)
	if r.status != 200 || !strings.Contains(string(r.body), `"limit":500`) {
		t.Errorf("readings limit=100000: %d %.200s, want clamped to 500", r.status, r.body)
	}
	var q strings.Builder
	for i := range 100 {
		fmt.Fprintf(&q, "p%d=1&", i)
	}
	do(http.MethodGet, g+"/api/v1/sensors?"+q.String(), nil, key...).wantError(t, "100 query parameters", 400, "invalid_parameter")
	do(http.MethodGet, g+"/api/v1/sensors/"+strings.Repeat("x", 300), nil, key...).wantError(t, "300-byte id", 400, "invalid_parameter")
	// A JSON-RPC batch is one message too many: refused, not run.
	r = do(http.MethodPost, g+"/api/v1/catalog/mcp", []byte(`[`+strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"tools/list"},`, 50)+`{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`), key...)
	if r.status >= 500 || strings.Count(string(r.body), `"tools"`) > 1 {
		t.Errorf("a batch of 51 MCP calls: %d %.300s", r.status, r.body)
	}
	// A slow client (headers never finished) is cut off by the server's header deadline.
	conn, err := net.Dial("tcp", s.a.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET /api/v1/sensors HTTP/1.1\r\nHost: x\r\nx-api-key: ")
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.ReadAll(conn); err != nil {
		t.Errorf("a client that never finishes its headers is not cut off: %v", err)
	}
}

// API5: there is no admin function over HTTP (keys and catalog are CLI commands): admin-like
// paths and methods are 404/405 for a user key, and a user key is no internal token.
func api5(t *testing.T, s *stack) {
	for _, c := range [][2]string{
		{http.MethodGet, "/api/v1/keys"}, {http.MethodPost, "/api/v1/keys"}, {http.MethodGet, "/api/v1/admin"},
		{http.MethodGet, "/api/v1/users"}, {http.MethodPost, "/api/v1/projects"}, {http.MethodDelete, "/api/v1/projects/" + s.privateProject.Slug},
		{http.MethodPut, "/api/v1/sensors/" + s.oceanID}, {http.MethodDelete, "/api/v1/sensors/" + s.oceanID},
		{http.MethodPost, "/api/v1/catalog/import"}, {http.MethodPost, "/api/v1/services/ocean/sync"}, {http.MethodGet, "/admin"},
	} {
		r := do(c[0], s.a.url()+c[1], []byte(`{}`), "x-api-key", s.alice)
		if r.status != 404 && r.status != 405 {
			t.Errorf("%s %s with a user key: %d %s", c[0], c[1], r.status, r.body)
		}
		r.envelope(t)
	}
	// The services' internal routes: not reachable without the internal token, and an API
	// key is not one.
	for _, path := range []string{contract.PathMeta, contract.PathSensors, "/metrics"} {
		for _, h := range [][]string{nil, {"x-api-key", s.alice}, {contract.HeaderInternalToken, s.alice}} {
			r := do(http.MethodGet, s.ocean+path, nil, h...)
			if r.status != http.StatusForbidden {
				t.Errorf("ocean %s with %v: %d, want 403", path, h, r.status)
			}
			if strings.Contains(strings.ToLower(string(r.body)), "internal-token") {
				t.Errorf("ocean's 403 names the internal header: %s", r.body)
			}
		}
	}
}

// API6: the budget of a key is shared by every replica (Redis), and the request budget
// counts the expensive call like the cheap one.
func api6(t *testing.T, s *stack) {
	var ok, limited int
	for i := range 10 {
		g := s.a
		if i%2 == 1 {
			g = s.b
		}
		path := "/api/v1/sensors/types"
		if i%3 == 0 {
			path = "/api/v1/sensors/" + s.oceanID + "/readings?limit=500&days=30"
		}
		r := do(http.MethodGet, g.url()+path, nil, "x-api-key", s.tiny)
		switch r.status {
		case 200:
			ok++
		case 429:
			limited++
			r.wantError(t, "over budget", 429, "rate_limited")
			if r.header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		default:
			t.Errorf("tiny key request %d (%s): %d %s", i, path, r.status, r.body)
		}
	}
	if ok != 5 || limited != 5 {
		t.Errorf("a 5/h key over two replicas: %d allowed, %d limited; want 5 and 5", ok, limited)
	}
}

// API7: ids and query values never reach an upstream unencoded: path tricks are refused
// or name no sensor, and the hostile service only ever sees readings calls of its own
// stations, each id one escaped path segment.
func api7(t *testing.T, s *stack) {
	for _, id := range []string{
		"..%2F..%2Fv1%2Fmeta", "H-OK%2F..%2F..%2Fv1%2Fmeta", "%2e%2e", "http:%2F%2F169.254.169.254%2Flatest",
		"H-OK%3Fx=1", "H-OK%23frag", "H-OK%00", "%40evil.example", "H-OK%5C..%5Cmeta", "H-OK%0d%0aX-Injected:%201",
	} {
		for _, tail := range []string{"/readings/latest", "/readings", "/readings/aggregate?interval=1h&days=1"} {
			r := do(http.MethodGet, s.a.url()+"/api/v1/sensors/"+id+tail, nil, "x-api-key", s.alice)
			if r.status == 200 || r.status >= 500 {
				t.Errorf("id %s%s: %d %s", id, tail, r.status, r.body)
			}
		}
	}
	for _, q := range []string{"since=http://169.254.169.254/", "parameter=../../meta", "data_format=raw%26x=1"} {
		_ = do(http.MethodGet, s.a.url()+"/api/v1/sensors/H-OK/readings?"+q, nil, "x-api-key", s.alice)
	}
	onlyExpectedUpstreamPaths(t, s.hostile)
}

// API8: security headers on every answer, no permissive CORS, error bodies always the
// envelope, no debug routes, probes that reveal nothing, and an internal-token mismatch that
// tells the client nothing about the internal header.
func api8(t *testing.T, s *stack) {
	g := s.a.url()
	for _, c := range []struct {
		method, path string
		key          string
	}{
		{http.MethodGet, "/api/v1/sensors", s.alice}, {http.MethodGet, "/api/v1/sensors", ""},
		{http.MethodGet, "/api/v1/nothing", s.alice}, {http.MethodDelete, "/api/v1/sensors", s.alice},
		{http.MethodGet, "/api/v1/sensors?search=%00", s.alice}, {http.MethodGet, "/healthz", ""}, {http.MethodGet, "/readyz", ""},
		{http.MethodGet, "/api/v1/openapi.json", ""}, {http.MethodGet, "/api/v1/sensors/H-HTML/readings/latest", s.alice},
	} {
		var h []string
		if c.key != "" {
			h = []string{"x-api-key", c.key}
		}
		r := do(c.method, g+c.path, nil, h...)
		if r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s (%d): no X-Content-Type-Options: nosniff", c.method, c.path, r.status)
		}
		if v := r.header.Get("Server") + r.header.Get("X-Powered-By"); v != "" {
			t.Errorf("%s %s: a Server or X-Powered-By header %q", c.method, c.path, v)
		}
		if r.status >= 400 {
			r.envelope(t)
			if strings.Contains(string(r.body), "goroutine") || strings.Contains(string(r.body), ".go:") {
				t.Errorf("%s %s: a stack in the body: %s", c.method, c.path, r.body)
			}
		}
	}
	// CORS: a foreign origin is never granted, with or without credentials.
	for _, m := range []string{http.MethodOptions, http.MethodGet} {
		r := do(m, g+"/api/v1/sensors", nil, "Origin", "https://evil.example", "Access-Control-Request-Method", "GET",
			"Access-Control-Request-Headers", "x-api-key", "x-api-key", s.alice)
		if o := r.header.Get("Access-Control-Allow-Origin"); o == "*" || o == "https://evil.example" {
			t.Errorf("%s from a foreign origin: Access-Control-Allow-Origin %q", m, o)
		}
	}
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/vars", "/api/v1/debug", "/.env", "/server-status"} {
		do(http.MethodGet, g+p, nil, "x-api-key", s.alice).wantError(t, p, 404, "not_found")
	}
	// /readyz: component names and states only.
	var ready struct {
		Status string
		Checks map[string]any
	}
	r := do(http.MethodGet, g+"/readyz", nil)
	if err := json.Unmarshal(r.body, &ready); err != nil || len(ready.Checks) == 0 {
		t.Fatalf("/readyz: %s", r.body)
	}
	for name, state := range ready.Checks {
		if st, ok := state.(string); !ok || (st != "ok" && st != "down" && st != "degraded") {
			t.Errorf("/readyz component %s: %v, want only a state", name, state)
		}
	}
	for _, leak := range []string{"127.0.0.1", "postgres", "redis://", "latency"} {
		if strings.Contains(string(r.body), leak) {
			t.Errorf("/readyz shows %q: %s", leak, r.body)
		}
	}
	// Gateway c sends the wrong internal token: the service's 403 becomes 502
	// upstream_unavailable naming no header, and the cause is in c's log.
	r = do(http.MethodGet, s.c.url()+"/api/v1/sensors/"+s.oceanID+"/readings/latest", nil, "x-api-key", s.alice)
	e := r.wantError(t, "wrong internal token", 502, "upstream_unavailable")
	if strings.Contains(strings.ToLower(e.Message), "token") || strings.Contains(strings.ToLower(e.Message), "x-internal") {
		t.Errorf("the client learns about the internal token: %s", r.body)
	}
}

// operationalRoutes are served outside the OpenAPI document on purpose (docs/security.md):
// probes, metrics, the landing page and the explorer.
var operationalRoutes = []string{"/healthz", "/readyz", "/metrics", "/", "/explorer"}

// API9: every documented operation is served, and what is served beyond the document is
// the short operational list; old versions and guessable paths are not.
func api9(t *testing.T, s *stack) {
	for _, rt := range documentedRoutes(t, s) {
		m, p := rt[0], rt[1]
		var body []byte
		if m == http.MethodPost {
			body = []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		}
		r := do(m, s.a.url()+p, body, "x-api-key", s.alice)
		if r.status == 405 || (r.status == 404 && strings.Contains(string(r.body), "no route")) {
			t.Errorf("documented %s %s is not served: %d %s", m, p, r.status, r.body)
		}
	}
	for _, p := range operationalRoutes {
		if r := do(http.MethodGet, s.a.url()+p, nil); r.status != 200 {
			t.Errorf("operational route %s: %d", p, r.status)
		}
	}
	for _, p := range []string{"/api/v2/sensors", "/api/v0/sensors", "/api/sensors", "/v1/sensors", "/v1/meta", "/api/v1/internal",
		"/api/v1/sensors/" + s.oceanID + "/raw", "/api/v1/swagger.json", "/swagger", "/graphql"} {
		r := do(http.MethodGet, s.a.url()+p, nil, "x-api-key", s.alice)
		if r.status != 404 {
			t.Errorf("undocumented %s: %d %s", p, r.status, r.body)
		}
	}
}

// secretPattern matches what only the hostile service's answers hold (the SSRF group's own
// request paths name 169.254.169.254 in the access log, so the address is not in it).
var secretPattern = regexp.MustCompile(`hunter2|<script`)

// API10: what services answer is checked before it reaches a client: HTML, redirects, 204
// and error bodies with extra fields never pass; the gateway's log names status, type and
// length, never the body; hostile text in provider data comes back as inert JSON.
func api10(t *testing.T, s *stack) {
	g := s.a.url()
	for id, want := range map[string]string{"H-HTML": "upstream_bad_response", "H-REDIR": "upstream_bad_response", "H-204": "upstream_bad_response"} {
		r := do(http.MethodGet, g+"/api/v1/sensors/"+id+"/readings/latest", nil, "x-api-key", s.alice)
		r.wantError(t, id, 502, want)
		if secretPattern.Match(r.body) || strings.Contains(string(r.body), "169.254") || r.header.Get("Location") != "" {
			t.Errorf("%s: the hostile answer reaches the client: %v %s", id, r.header, r.body)
		}
	}
	r := do(http.MethodGet, g+"/api/v1/sensors/H-LEAK/readings/latest", nil, "x-api-key", s.alice)
	r.wantError(t, "H-LEAK", 404, "sensor_not_found")
	if secretPattern.Match(r.body) || strings.Contains(string(r.body), "dsn") {
		t.Errorf("H-LEAK: extra fields pass: %s", r.body)
	}
	if r := do(http.MethodGet, g+"/api/v1/sensors/H-OK/readings/latest", nil, "x-api-key", s.alice); r.status != 200 {
		t.Errorf("H-OK (a proper answer): %d %s", r.status, r.body)
	}
	// Hostile text in the catalog is data: JSON with < escaped, nosniff.
	r = do(http.MethodGet, g+"/api/v1/sensors?search=H-HTML", nil, "x-api-key", s.alice)
	if strings.Contains(string(r.body), "<img") || !strings.Contains(string(r.body), `\u003cimg`) || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("a hostile station name: %s (%v)", r.body, r.header)
	}
	time.Sleep(200 * time.Millisecond) // the log line of the last refusal
	log := s.gwA.Log()
	if secretPattern.MatchString(log) {
		t.Errorf("the gateway's log holds a hostile body:\n%s", log)
	}
	if !strings.Contains(log, "content_type=text/html") || !strings.Contains(log, "length=") {
		t.Errorf("the gateway's log lacks the refused answer's type and length")
	}
}
