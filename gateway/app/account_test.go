package app

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/openapi"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// TestAccountDashboardTwoReplicas runs the dashboard's path end to end on two gateway
// replicas sharing PostgreSQL and Redis: `accounts create-admin` and a one-time sign-in
// link, a key created in the dashboard and used on /api/v1, the request counted (the shared
// hourly counter, read from the other replica), a rotation with grace, and a revocation
// made on one replica refused by the other within KEY_CACHE_TTL.
func TestAccountDashboardTwoReplicas(t *testing.T) {
	t.Parallel()
	const origin = "http://localhost:1"
	e := env{"DATABASE_URL": testenv.Postgres(t), "REDIS_URL": testenv.RedisURL()}.with(
		"SENSORGATE_ENV", "development", "SYNC_INTERVAL", "0", "KEY_CACHE_TTL", "1s", "LOG_LEVEL", "warn",
		"SERVICE_URLS", "ocean=http://127.0.0.1:1", "ACCOUNT_ORIGIN", origin)
	out := mustAdmin(t, e, "accounts", "create-admin", "--name", "Ada", "--email", "ada@example.org")
	if !strings.HasPrefix(out, origin+"/account#enrol=") || !strings.Contains(out, "role   admin") {
		t.Fatalf("create-admin printed %q", out)
	}
	if _, err := admin(t, e, "accounts", "create-admin", "--email", "x@example.org"); err == nil {
		t.Fatal("create-admin without --name succeeded")
	}
	a, b := startGateway(t, e), startGateway(t, e)
	link := strings.Fields(mustAdmin(t, e, "accounts", "signin-link", "--email", "ADA@example.org"))[0]

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: openapi.ValidateTransport(t, nil),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	call := func(g *gateway, method, path string, body any) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			j, _ := json.Marshal(body)
			rd = bytes.NewReader(j)
		}
		req, _ := http.NewRequest(method, g.url+path, rd)
		req.Header.Set("Content-Type", "application/json")
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		rb, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, rb
	}
	if st, _ := call(a, "GET", strings.TrimPrefix(link, origin), nil); st != http.StatusOK {
		t.Fatalf("sign-in link: %d", st)
	}
	// Sessions live in PostgreSQL: the other replica knows this one.
	if st, body := call(b, "GET", "/account/api/me", nil); st != 200 || !strings.Contains(string(body), `"role":"admin"`) {
		t.Fatalf("me on replica b: %d %s", st, body)
	}
	st, body := call(a, "POST", "/account/api/keys", map[string]string{"name": "laptop", "environment": "development"})
	var k struct{ ID, Key string }
	if st != 201 || json.Unmarshal(body, &k) != nil || k.Key == "" {
		t.Fatalf("create key: %d %s", st, body)
	}
	for range 3 {
		if r := a.get(t, "/api/v1/services", k.Key); r.status != 200 {
			t.Fatalf("the new key on /api/v1: %d %s", r.status, r.body)
		}
	}
	// Counted in process, flushed to Redis within a few seconds, read on the other replica.
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, body = call(b, "GET", "/account/api/keys", nil)
		var list struct {
			Keys []struct {
				ID               string  `json:"id"`
				RequestsThisHour int64   `json:"requests_this_hour"`
				LastUsedAt       *string `json:"last_used_at"`
			} `json:"keys"`
		}
		_ = json.Unmarshal(body, &list)
		if len(list.Keys) == 1 && list.Keys[0].RequestsThisHour == 3 && list.Keys[0].LastUsedAt != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("requests not counted within 15 s: %s", body)
		}
		time.Sleep(250 * time.Millisecond)
	}
	st, body = call(a, "POST", "/account/api/keys/"+k.ID+"/rotate", map[string]string{"grace": "PT1H"})
	var rot struct{ ID, Key string }
	if st != 201 || json.Unmarshal(body, &rot) != nil || rot.Key == "" {
		t.Fatalf("rotate: %d %s", st, body)
	}
	for _, key := range []string{k.Key, rot.Key} {
		if r := b.get(t, "/api/v1/services", key); r.status != 200 {
			t.Fatalf("within the grace both keys work on replica b: %d", r.status)
		}
	}
	if st, body := call(a, "DELETE", "/account/api/keys/"+k.ID, nil); st != 204 {
		t.Fatalf("revoke: %d %s", st, body)
	}
	revoked := time.Now()
	if r := a.get(t, "/api/v1/services", k.Key); r.status != 401 {
		t.Fatalf("the replica that revoked still admits the key: %d", r.status)
	}
	for {
		r := b.get(t, "/api/v1/services", k.Key)
		if r.status == 401 {
			break
		}
		if time.Since(revoked) > 1500*time.Millisecond {
			t.Fatalf("replica b still admits the revoked key %s after the revocation (KEY_CACHE_TTL 1s)", time.Since(revoked))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := b.get(t, "/api/v1/services", rot.Key); r.status != 200 {
		t.Fatalf("the rotated key still works: %d", r.status)
	}
	if st, body := call(b, "GET", "/account/api/projects", nil); st != 200 || !strings.Contains(string(body), `"projects"`) {
		t.Fatalf("projects: %d %s", st, body)
	}
	if st, body := call(b, "GET", "/account/api/admin/audit", nil); st != 200 || !strings.Contains(string(body), `"key.rotate"`) {
		t.Fatalf("audit: %d %s", st, body)
	}
}
