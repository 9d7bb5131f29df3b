package app

import (
	"context"
	"database/sql"
	"encoding/json"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver, to age a token in place
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/sensorgate/sensorgate/gateway/oauth"
	"github.com/sensorgate/sensorgate/gateway/openapi"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// oauthEnv is one gateway whose public origin is its own address (the issuer and resource
// URLs must reach it), on PostgreSQL and Redis, with a person signed in through the
// development sign-in link in browser.
type oauthEnv struct {
	t       *testing.T
	g       *gateway
	origin  string
	dbURL   string
	browser *http.Client
	plain   *http.Client
	env     env
}

func newOAuthEnv(t *testing.T) *oauthEnv {
	addr := testenv.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	origin := "http://localhost:" + port
	db := testenv.Postgres(t)
	e := env{"DATABASE_URL": db, "REDIS_URL": testenv.RedisURL()}.with(
		"SENSORGATE_ENV", "development", "SYNC_INTERVAL", "0", "KEY_CACHE_TTL", "1s", "LOG_LEVEL", "warn",
		"SERVICE_URLS", "ocean=http://127.0.0.1:1", "ACCOUNT_ORIGIN", origin, "GATEWAY_ADDR", addr)
	mustAdmin(t, e, "accounts", "create-admin", "--name", "Ada", "--email", "ada@example.org")
	o := &oauthEnv{t: t, g: startGateway(t, e), origin: origin, dbURL: db, env: e}
	jar, _ := cookiejar.New(nil)
	noFollow := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	// Every exchange is checked against the OpenAPI document (the per-endpoint resource
	// metadata, a path under the documented one, is checked by the tests themselves).
	v, err := openapi.NewValidator(append(openapi.DefaultIgnored(), oauth.PathPRMetadata+"/")...)
	if err != nil {
		t.Fatal(err)
	}
	o.browser = &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: noFollow, Transport: v.Transport(t, nil)}
	o.plain = &http.Client{Timeout: 20 * time.Second, CheckRedirect: noFollow, Transport: v.Transport(t, nil)}
	o.signIn(e)
	return o
}

// signIn follows a fresh development sign-in link in the browser.
func (o *oauthEnv) signIn(e env) {
	link := strings.Fields(mustAdmin(o.t, e, "accounts", "signin-link", "--email", "ada@example.org"))[0]
	if st, _, _ := o.do(o.browser, "GET", link, nil, nil); st != http.StatusOK {
		o.t.Fatalf("sign-in link: %d", st)
	}
}

func (o *oauthEnv) do(c *http.Client, method, u string, form url.Values, hdr map[string]string) (int, http.Header, string) {
	o.t.Helper()
	if strings.HasPrefix(u, "/") {
		u = o.origin + u
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		o.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		o.t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func (o *oauthEnv) register(redirects ...string) string {
	o.t.Helper()
	body, _ := json.Marshal(map[string]any{"client_name": "Test client", "redirect_uris": redirects})
	resp, err := o.plain.Post(o.origin+"/oauth/register", "application/json", strings.NewReader(string(body)))
	if err != nil {
		o.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		ClientID string `json:"client_id"`
	}
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&out) != nil || out.ClientID == "" {
		o.t.Fatalf("register: %d", resp.StatusCode)
	}
	return out.ClientID
}

// flow is one authorization request's parameters.
type flow struct {
	client, redirect, verifier, state, scope, resource, method string
	noChallenge                                                bool
}

func (o *oauthEnv) newFlow(client, redirect string) *flow {
	return &flow{client: client, redirect: redirect, verifier: oauth2.GenerateVerifier(), state: "state-" + oauth2.GenerateVerifier()[:12],
		resource: o.origin + "/api/v1", method: "S256"}
}

func (f *flow) url() string {
	q := url.Values{"response_type": {"code"}, "client_id": {f.client}, "redirect_uri": {f.redirect}, "state": {f.state}}
	if !f.noChallenge {
		q.Set("code_challenge_method", f.method)
		if f.method == "plain" {
			q.Set("code_challenge", f.verifier)
		} else {
			q.Set("code_challenge", oauth2.S256ChallengeFromVerifier(f.verifier))
		}
	}
	if f.scope != "" {
		q.Set("scope", f.scope)
	}
	if f.resource != "" {
		q.Set("resource", f.resource)
	}
	return "/oauth/authorize?" + q.Encode()
}

var (
	csrfField    = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	requestField = regexp.MustCompile(`name="request" value="([^"]+)"`)
)

// consent opens the consent page and answers it; it returns the redirect's query.
func (o *oauthEnv) consent(f *flow, decision string) url.Values {
	o.t.Helper()
	st, h, page := o.do(o.browser, "GET", f.url(), nil, nil)
	if st != http.StatusOK {
		o.t.Fatalf("consent page: %d %s %s", st, h.Get("Location"), page)
	}
	cs, rq := csrfField.FindStringSubmatch(page), requestField.FindStringSubmatch(page)
	if cs == nil || rq == nil {
		o.t.Fatalf("consent page without its form: %s", page)
	}
	st, h, body := o.do(o.browser, "POST", "/oauth/authorize", url.Values{"csrf": {cs[1]}, "request": {html.UnescapeString(rq[1])}, "decision": {decision}},
		map[string]string{"Origin": o.origin, "Sec-Fetch-Site": "same-origin"})
	if st != http.StatusSeeOther && st != http.StatusFound {
		o.t.Fatalf("consent answer: %d %s", st, body)
	}
	return o.redirectQuery(h.Get("Location"), f.redirect)
}

func (o *oauthEnv) redirectQuery(loc, redirect string) url.Values {
	o.t.Helper()
	u, err := url.Parse(loc)
	if err != nil || !strings.HasPrefix(loc, strings.SplitN(redirect, "?", 2)[0]) {
		o.t.Fatalf("redirect to %q, want to %q", loc, redirect)
	}
	return u.Query()
}

type tokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int    `json:"expires_in"`
	Scope        string `json:"scope"`
	Error        string `json:"error"`
}

func (o *oauthEnv) token(form url.Values) (int, tokens) {
	o.t.Helper()
	st, _, body := o.do(o.plain, "POST", "/oauth/token", form, nil)
	var tk tokens
	_ = json.Unmarshal([]byte(body), &tk)
	return st, tk
}

func (o *oauthEnv) exchange(f *flow, code string) (int, tokens) {
	return o.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {f.redirect},
		"client_id": {f.client}, "code_verifier": {f.verifier}, "resource": {f.resource}})
}

// grant runs a whole approved flow and returns its tokens.
func (o *oauthEnv) grant(f *flow) tokens {
	o.t.Helper()
	q := o.consent(f, "approve")
	st, tk := o.exchange(f, q.Get("code"))
	if st != http.StatusOK || tk.AccessToken == "" || tk.RefreshToken == "" {
		o.t.Fatalf("token: %d %+v", st, tk)
	}
	return tk
}

// api calls /api/v1 with a Bearer token.
func (o *oauthEnv) api(method, path, bearer string) (int, http.Header, string) {
	return o.do(o.plain, method, path, nil, map[string]string{"Authorization": "Bearer " + bearer})
}

// eventually waits (within KEY_CACHE_TTL and slack) for path to answer want with bearer.
func (o *oauthEnv) eventually(path, bearer string, want int) {
	o.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _, body := o.api("GET", path, bearer)
		if st == want {
			return
		}
		if time.Now().After(deadline) {
			o.t.Fatalf("GET %s answers %d %s, want %d", path, st, body, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestOAuth runs the authorization server end to end against the real gateway,
// PostgreSQL and Redis: discovery, the whole flow, and each threat of docs/security.md
// "OAuth" as its own subtest.
func TestOAuth(t *testing.T) {
	t.Parallel()
	o := newOAuthEnv(t)
	const cb = "http://127.0.0.1:9/callback"
	client := o.register(cb)

	t.Run("discovery from the 401", func(t *testing.T) {
		o.t = t
		st, h, _ := o.do(o.plain, "POST", "/api/v1/catalog/mcp", url.Values{}, nil)
		want := `Bearer resource_metadata="` + o.origin + `/.well-known/oauth-protected-resource/api/v1/catalog/mcp"`
		if st != 401 || h.Get("WWW-Authenticate") != want {
			t.Fatalf("MCP endpoint without credentials: %d %q, want 401 %q", st, h.Get("WWW-Authenticate"), want)
		}
		_, _, body := o.do(o.plain, "GET", "/.well-known/oauth-protected-resource/api/v1/catalog/mcp", nil, nil)
		var prm oauthex.ProtectedResourceMetadata
		if json.Unmarshal([]byte(body), &prm) != nil || prm.Resource != o.origin+"/api/v1/catalog/mcp" || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != o.origin {
			t.Fatalf("protected resource metadata: %s", body)
		}
		_, _, body = o.do(o.plain, "GET", "/.well-known/oauth-authorization-server", nil, nil)
		var asm oauthex.AuthServerMeta
		if json.Unmarshal([]byte(body), &asm) != nil || asm.Issuer != o.origin || strings.Join(asm.CodeChallengeMethodsSupported, ",") != "S256" ||
			asm.RegistrationEndpoint != o.origin+"/oauth/register" || !strings.Contains(body, `"client_id_metadata_document_supported":true`) {
			t.Fatalf("authorization server metadata: %s", body)
		}
		// A client in a browser page (the MCP Inspector's origin) may call the token endpoint
		// (CORS preflight; a loopback gateway answers only pages of localhost).
		st, h, pbody := o.do(o.plain, "OPTIONS", "/oauth/token", nil, map[string]string{"Origin": "http://localhost:6274", "Access-Control-Request-Method": "POST"})
		if st != 204 || h.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("token endpoint preflight: %d %v %s", st, h, pbody)
		}
		st, h, _ = o.api("POST", "/api/v1/catalog/mcp", "ory_at_forged.forged")
		if st != 401 || !strings.Contains(h.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Fatalf("a forged token: %d %q", st, h.Get("WWW-Authenticate"))
		}
	})

	t.Run("whole flow: state and iss kept, Bearer on REST, apps listed", func(t *testing.T) {
		o.t = t
		f := o.newFlow(client, cb)
		q := o.consent(f, "approve")
		if q.Get("state") != f.state || q.Get("iss") != o.origin || q.Get("code") == "" {
			t.Fatalf("authorization response %v: want the state %q, iss %q and a code", q, f.state, o.origin)
		}
		st, tk := o.exchange(f, q.Get("code"))
		if st != 200 || tk.ExpiresIn <= 0 || tk.ExpiresIn > 3600 {
			t.Fatalf("token: %d %+v (access tokens live at most 1 h)", st, tk)
		}
		if st, _, body := o.api("GET", "/api/v1/services", tk.AccessToken); st != 200 {
			t.Fatalf("Bearer on /api/v1/services: %d %s", st, body)
		}
		_, _, body := o.do(o.browser, "GET", "/account/api/apps", nil, nil)
		if !strings.Contains(body, `"client_id":"`+client+`"`) || !strings.Contains(body, `"client_name":"Test client"`) {
			t.Fatalf("connected apps: %s", body)
		}
	})

	t.Run("not signed in: sign in through the dashboard and back to the request", func(t *testing.T) {
		o.t = t
		jar, _ := cookiejar.New(nil)
		fresh := &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: o.browser.CheckRedirect}
		f := o.newFlow(client, cb)
		st, h, _ := o.do(fresh, "GET", f.url(), nil, nil)
		if st != http.StatusSeeOther || h.Get("Location") != "/account" {
			t.Fatalf("authorize without a session: %d %q, want 303 to /account", st, h.Get("Location"))
		}
		link := strings.Fields(mustAdmin(t, o.env, "accounts", "signin-link", "--email", "ada@example.org"))[0]
		st, _, page := o.do(fresh, "GET", link, nil, nil)
		m := regexp.MustCompile(`url=([^"]+)"`).FindStringSubmatch(page)
		if st != 200 || m == nil || !strings.HasPrefix(html.UnescapeString(m[1]), "/oauth/authorize?") {
			t.Fatalf("after the sign-in link: %d %s, want to continue to the authorization request", st, page)
		}
		if st, _, page := o.do(fresh, "GET", html.UnescapeString(m[1]), nil, nil); st != 200 || !csrfField.MatchString(page) {
			t.Fatalf("back at the request: %d %s", st, page)
		}
		if _, _, body := o.do(fresh, "GET", "/account/auth/next", nil, nil); !strings.Contains(body, `"next":null`) {
			t.Fatalf("the return is used once: %s", body)
		}
	})

	t.Run("PKCE missing or plain refused", func(t *testing.T) {
		o.t = t
		for _, f := range []*flow{{noChallenge: true}, {method: "plain"}} {
			g := o.newFlow(client, cb)
			g.noChallenge = f.noChallenge
			if f.method != "" {
				g.method = f.method
			}
			_, h, _ := o.do(o.browser, "GET", g.url(), nil, nil)
			q := o.redirectQuery(h.Get("Location"), cb)
			if q.Get("error") != "invalid_request" || q.Get("code") != "" || q.Get("state") != g.state {
				t.Fatalf("challenge %v method %q: redirect %v, want error=invalid_request with the state", !g.noChallenge, g.method, q)
			}
		}
	})

	t.Run("wrong verifier refused", func(t *testing.T) {
		o.t = t
		f := o.newFlow(client, cb)
		q := o.consent(f, "approve")
		f.verifier = oauth2.GenerateVerifier()
		if st, tk := o.exchange(f, q.Get("code")); st != 400 || tk.Error != "invalid_grant" || tk.AccessToken != "" {
			t.Fatalf("a wrong code_verifier: %d %+v, want 400 invalid_grant", st, tk)
		}
	})

	t.Run("code reuse refused and revokes what the code issued", func(t *testing.T) {
		o.t = t
		f := o.newFlow(client, cb)
		q := o.consent(f, "approve")
		st, first := o.exchange(f, q.Get("code"))
		if st != 200 {
			t.Fatalf("first exchange: %d", st)
		}
		o.eventually("/api/v1/services", first.AccessToken, 200)
		if st, tk := o.exchange(f, q.Get("code")); st != 400 || tk.AccessToken != "" {
			t.Fatalf("second exchange of one code: %d %+v", st, tk)
		}
		o.eventually("/api/v1/services", first.AccessToken, 401)
		if st, _ := o.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.RefreshToken}, "client_id": {client}}); st != 400 {
			t.Fatalf("the refresh token of a reused code still works: %d", st)
		}
	})

	t.Run("redirect mismatch and loopback host swap refused without redirecting", func(t *testing.T) {
		o.t = t
		for _, redirect := range []string{"http://127.0.0.1:9/other", "http://localhost:9/callback", "https://evil.example/callback"} {
			f := o.newFlow(client, redirect)
			st, h, _ := o.do(o.browser, "GET", f.url(), nil, nil)
			if st != 400 || h.Get("Location") != "" {
				t.Fatalf("redirect_uri %s: %d Location %q, want 400 without a redirect", redirect, st, h.Get("Location"))
			}
		}
		// A native client's loopback redirect may come back on any port.
		f := o.newFlow(client, "http://127.0.0.1:53123/callback")
		if st, _, _ := o.do(o.browser, "GET", f.url(), nil, nil); st != 200 {
			t.Fatalf("loopback redirect on another port: %d", st)
		}
		lh := o.register("http://localhost:8/cb")
		f = o.newFlow(lh, "http://localhost:40111/cb")
		if st, _, _ := o.do(o.browser, "GET", f.url(), nil, nil); st != 200 {
			t.Fatalf("localhost redirect on another port: %d", st)
		}
	})

	t.Run("token for another resource refused", func(t *testing.T) {
		o.t = t
		f := o.newFlow(client, cb)
		f.resource = o.origin + "/api/v1/catalog/mcp"
		tk := o.grant(f)
		st, h, body := o.api("GET", "/api/v1/services", tk.AccessToken)
		if st != 401 || !strings.Contains(body, "invalid_token") || !strings.Contains(h.Get("WWW-Authenticate"), "resource_metadata=") {
			t.Fatalf("a token for %s at /api/v1/services: %d %s", f.resource, st, body)
		}
		g := o.newFlow(client, cb)
		g.resource = "https://evil.example/mcp"
		_, h, _ = o.do(o.browser, "GET", g.url(), nil, nil)
		if q := o.redirectQuery(h.Get("Location"), cb); q.Get("error") != "invalid_request" {
			t.Fatalf("a resource of another server: %v", q)
		}
	})

	t.Run("expired token refused", func(t *testing.T) {
		o.t = t
		tk := o.grant(o.newFlow(client, cb))
		o.eventually("/api/v1/services", tk.AccessToken, 200)
		db, err := sql.Open("pgx", o.dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// Time passes for this token: its stored expiry moves into the past.
		if _, err := db.ExecContext(context.Background(), "UPDATE oauth_tokens SET expires_at = now() - interval '1 second' WHERE kind = 'access'"); err != nil {
			t.Fatal(err)
		}
		o.eventually("/api/v1/services", tk.AccessToken, 401)
	})

	t.Run("refresh rotates and a reused refresh token revokes its family", func(t *testing.T) {
		o.t = t
		tk := o.grant(o.newFlow(client, cb))
		refresh := func(rt string) (int, tokens) {
			return o.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {client}})
		}
		st, next := refresh(tk.RefreshToken)
		if st != 200 || next.RefreshToken == "" || next.RefreshToken == tk.RefreshToken {
			t.Fatalf("refresh: %d %+v", st, next)
		}
		o.eventually("/api/v1/services", next.AccessToken, 200)
		if st, _ := refresh(tk.RefreshToken); st != 400 {
			t.Fatalf("the old refresh token again: %d, want 400", st)
		}
		if st, _ := refresh(next.RefreshToken); st != 400 {
			t.Fatalf("the family's newest refresh token after a reuse: %d, want 400", st)
		}
		o.eventually("/api/v1/services", next.AccessToken, 401)
	})

	t.Run("RFC 7009 revocation", func(t *testing.T) {
		o.t = t
		tk := o.grant(o.newFlow(client, cb))
		if st, _, body := o.do(o.plain, "POST", "/oauth/revoke", url.Values{"token": {tk.RefreshToken}, "client_id": {client}}, nil); st != 200 {
			t.Fatalf("revoke: %d %s", st, body)
		}
		o.eventually("/api/v1/services", tk.AccessToken, 401)
	})

	t.Run("scopes: 403 insufficient_scope for tokens and keys", func(t *testing.T) {
		o.t = t
		f := o.newFlow(o.register(cb), cb)
		f.scope = "sensors:read"
		tk := o.grant(f)
		if tk.Scope != "sensors:read" {
			t.Fatalf("granted scope %q", tk.Scope)
		}
		o.eventually("/api/v1/services", tk.AccessToken, 200)
		st, h, body := o.api("GET", "/api/v1/alerts/rules", tk.AccessToken)
		if st != 403 || !strings.Contains(body, "insufficient_scope") || !strings.Contains(h.Get("WWW-Authenticate"), `scope="alerts:write"`) {
			t.Fatalf("alerts with sensors:read: %d %q %s", st, h.Get("WWW-Authenticate"), body)
		}
		kb, _ := json.Marshal(map[string]any{"name": "read only", "environment": "development", "scopes": []string{"sensors:read"}})
		req, _ := http.NewRequest("POST", o.origin+"/account/api/keys", strings.NewReader(string(kb)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := o.browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var k struct {
			Key    string   `json:"key"`
			Scopes []string `json:"scopes"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&k)
		resp.Body.Close()
		if resp.StatusCode != 201 || strings.Join(k.Scopes, " ") != "sensors:read" {
			t.Fatalf("create a key with scopes: %d %+v", resp.StatusCode, k)
		}
		if st, _, _ := o.do(o.plain, "GET", "/api/v1/services", nil, map[string]string{"x-api-key": k.Key}); st != 200 {
			t.Fatalf("the read-only key on services: %d", st)
		}
		if st, _, body := o.do(o.plain, "GET", "/api/v1/readings/latest?bbox=0,0,1,1", nil, map[string]string{"x-api-key": k.Key}); st != 403 || !strings.Contains(body, "insufficient_scope") {
			t.Fatalf("the read-only key on readings: %d %s", st, body)
		}
		if st, _, _ := o.api("GET", "/api/v1/services", k.Key); st != 200 {
			t.Fatalf("an API key as Bearer: %d", st)
		}
	})

	t.Run("tools/list lists only what the token's scopes allow", func(t *testing.T) {
		o.t = t
		f := o.newFlow(o.register(cb), cb)
		f.scope = "sensors:read"
		f.resource = o.origin + "/api/v1/catalog/mcp"
		tk := o.grant(f)
		rpc := func(body string) string {
			req, _ := http.NewRequest("POST", o.origin+"/api/v1/catalog/mcp", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tk.AccessToken)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			resp, err := o.plain.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("MCP %s: %d %s", body, resp.StatusCode, b)
			}
			return string(b)
		}
		list := rpc(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		if !strings.Contains(list, `"search_sensors"`) || strings.Contains(list, `"get_readings"`) || strings.Contains(list, `"create_alert_rule"`) {
			t.Fatalf("tools/list with sensors:read: %s", list)
		}
		call := rpc(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_readings","arguments":{}}}`)
		if !strings.Contains(call, "insufficient_scope") || !strings.Contains(call, `"isError":true`) {
			t.Fatalf("tools/call of a reading tool with sensors:read: %s", call)
		}
	})

	t.Run("revoked app refused", func(t *testing.T) {
		o.t = t
		app := o.register(cb)
		tk := o.grant(o.newFlow(app, cb))
		o.eventually("/api/v1/services", tk.AccessToken, 200)
		if st, _, body := o.do(o.browser, "DELETE", "/account/api/apps/"+url.PathEscape(app), nil, map[string]string{"Origin": o.origin}); st != 204 {
			t.Fatalf("revoke app: %d %s", st, body)
		}
		o.eventually("/api/v1/services", tk.AccessToken, 401)
		if st, rt := o.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tk.RefreshToken}, "client_id": {app}}); st != 400 || rt.Error != "invalid_grant" {
			t.Fatalf("refresh after the app was revoked: %d %q, want 400 invalid_grant", st, rt.Error)
		}
		// A token revoked with its grant is no longer valid, not reused: no reuse alarm in
		// the audit log for this client.
		_, _, body := o.do(o.browser, "GET", "/account/api/admin/audit?limit=500", nil, nil)
		var audit struct {
			Events []struct{ Actor, Action string } `json:"events"`
		}
		if err := json.Unmarshal([]byte(body), &audit); err != nil || len(audit.Events) == 0 {
			t.Fatalf("audit log: %v %s", err, body)
		}
		for _, e := range audit.Events {
			if e.Actor == app && e.Action == "oauth.refresh_reuse" {
				t.Fatalf("the revoked app's refresh was audited as a reuse: %+v", e)
			}
		}
	})

	t.Run("consent page not frameable, CSRF and cross-origin refused", func(t *testing.T) {
		o.t = t
		f := o.newFlow(client, cb)
		st, h, page := o.do(o.browser, "GET", f.url(), nil, nil)
		csp := h.Get("Content-Security-Policy")
		if st != 200 || h.Get("X-Frame-Options") != "DENY" || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(page, "<script") {
			t.Fatalf("consent page: %d X-Frame-Options %q CSP %q", st, h.Get("X-Frame-Options"), csp)
		}
		rq := html.UnescapeString(requestField.FindStringSubmatch(page)[1])
		st, h, _ = o.do(o.browser, "POST", "/oauth/authorize", url.Values{"csrf": {"forged"}, "request": {rq}, "decision": {"approve"}},
			map[string]string{"Origin": o.origin})
		if st != 403 || h.Get("Location") != "" {
			t.Fatalf("consent with a forged CSRF token: %d %q", st, h.Get("Location"))
		}
		_, _, page = o.do(o.browser, "GET", f.url(), nil, nil)
		cs := csrfField.FindStringSubmatch(page)[1]
		st, h, _ = o.do(o.browser, "POST", "/oauth/authorize", url.Values{"csrf": {cs}, "request": {rq}, "decision": {"approve"}},
			map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
		if st != 403 || h.Get("Location") != "" {
			t.Fatalf("consent posted from another origin: %d %q", st, h.Get("Location"))
		}
	})

	t.Run("deny redirects with access_denied", func(t *testing.T) {
		o.t = t
		f := o.newFlow(client, cb)
		if q := o.consent(f, "deny"); q.Get("error") != "access_denied" || q.Get("code") != "" || q.Get("state") != f.state {
			t.Fatalf("deny: %v", q)
		}
	})

	t.Run("open redirects refused", func(t *testing.T) {
		o.t = t
		for _, u := range []string{
			"/oauth/authorize?response_type=code&client_id=unknown&redirect_uri=https%3A%2F%2Fevil.example%2F&state=abcdefghij",
			"/oauth/authorize?response_type=code&client_id=" + url.QueryEscape(client) + "&redirect_uri=https%3A%2F%2Fevil.example%2F&state=abcdefghij",
		} {
			st, h, _ := o.do(o.browser, "GET", u, nil, nil)
			if loc := h.Get("Location"); strings.Contains(loc, "evil.example") || st < 400 {
				t.Fatalf("%s: %d Location %q", u, st, loc)
			}
		}
		// Registration refuses redirect URIs that would lead a browser anywhere.
		for _, bad := range []string{"http://evil.example/cb", "javascript:alert(1)", "https://ok.example/cb#frag"} {
			body, _ := json.Marshal(map[string]any{"redirect_uris": []string{bad}})
			resp, err := o.plain.Post(o.origin+"/oauth/register", "application/json", strings.NewReader(string(body)))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 400 {
				t.Fatalf("register redirect %q: %d, want 400", bad, resp.StatusCode)
			}
		}
	})

	t.Run("audit events and usage counted as a key of the account", func(t *testing.T) {
		o.t = t
		_, _, body := o.do(o.browser, "GET", "/account/api/admin/audit?limit=500", nil, nil)
		for _, action := range []string{"oauth.register", "oauth.grant", "oauth.deny", "oauth.code_reuse", "oauth.refresh_reuse", "oauth.revoke", "oauth.app_revoke"} {
			if !strings.Contains(body, `"`+action+`"`) {
				t.Errorf("audit log without %s: %s", action, body)
			}
		}
		// The whole flow's requests were counted for its app's key: last_used_at appears
		// once the usage counters are flushed.
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, _, body := o.do(o.browser, "GET", "/account/api/apps", nil, nil)
			var apps struct {
				Apps []struct {
					ClientID   string  `json:"client_id"`
					LastUsedAt *string `json:"last_used_at"`
				} `json:"apps"`
			}
			_ = json.Unmarshal([]byte(body), &apps)
			used := false
			for _, a := range apps.Apps {
				used = used || a.ClientID == client && a.LastUsedAt != nil
			}
			if used {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the app's requests not counted within 20 s: %s", body)
			}
			time.Sleep(250 * time.Millisecond)
		}
	})

	t.Run("Go SDK client: discovery, registration, sign-in link, consent, tools/list", func(t *testing.T) {
		o.t = t
		const redirect = "http://127.0.0.1:9/sdk-callback"
		h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
			DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName: "go-sdk test", RedirectURIs: []string{redirect}, GrantTypes: []string{"authorization_code", "refresh_token"},
				TokenEndpointAuthMethod: "none"}},
			RedirectURL: redirect,
			AuthorizationCodeFetcher: func(_ context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
				// The person, already signed in through the development link, approves.
				u, _ := url.Parse(args.URL)
				f := &flow{redirect: redirect}
				st, hd, page := o.do(o.browser, "GET", "/oauth/authorize?"+u.RawQuery, nil, nil)
				if st != 200 {
					t.Fatalf("SDK's authorization URL: %d %s %s", st, hd.Get("Location"), page)
				}
				cs, rq := csrfField.FindStringSubmatch(page), requestField.FindStringSubmatch(page)
				_, hd, _ = o.do(o.browser, "POST", "/oauth/authorize", url.Values{"csrf": {cs[1]}, "request": {html.UnescapeString(rq[1])}, "decision": {"approve"}},
					map[string]string{"Origin": o.origin})
				q := o.redirectQuery(hd.Get("Location"), f.redirect)
				return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-oauth-test", Version: "1"}, nil)
		s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: o.origin + "/api/v1/catalog/mcp", OAuthHandler: h}, nil)
		if err != nil {
			t.Fatalf("connect with OAuth: %v", err)
		}
		defer s.Close()
		tools, err := s.ListTools(ctx, nil)
		if err != nil || len(tools.Tools) == 0 {
			t.Fatalf("tools/list: %v %v", tools, err)
		}
	})
}

// TestOAuthThrottles: registration and the token endpoint take no sign-in, so each counts
// per address in Redis (docs/security.md, "OAuth"): past oauth.RegisterLimit registrations
// an hour, and past oauth.TokenMissLimit refused token requests, the address gets 429
// rate_limited with Retry-After, in OAuth's error shape, and even a good code waits.
func TestOAuthThrottles(t *testing.T) {
	t.Parallel()
	o := newOAuthEnv(t) // its own issuer, so its own counters in the shared Redis
	const cb = "http://127.0.0.1:9/callback"
	var client string
	for range oauth.RegisterLimit {
		client = o.register(cb)
	}
	body, _ := json.Marshal(map[string]any{"client_name": "one too many", "redirect_uris": []string{cb}})
	resp, err := o.plain.Post(o.origin+"/oauth/register", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"error":"rate_limited"`) {
		t.Fatalf("registration %d from one address: %d %q %s, want 429 rate_limited with Retry-After", oauth.RegisterLimit+1, resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}

	f := o.newFlow(client, cb)
	code := o.consent(f, "approve").Get("code")
	for i := range oauth.TokenMissLimit {
		if st, tk := o.token(url.Values{"grant_type": {"authorization_code"}, "code": {"guess-" + strconv.Itoa(i)}, "redirect_uri": {cb},
			"client_id": {client}, "code_verifier": {f.verifier}}); st != http.StatusBadRequest || tk.Error != "invalid_grant" {
			t.Fatalf("guessed code %d: %d %q, want 400 invalid_grant", i, st, tk.Error)
		}
	}
	st, h, body2 := o.do(o.plain, "POST", "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cb},
		"client_id": {client}, "code_verifier": {f.verifier}, "resource": {f.resource}}, nil)
	if st != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(body2, `"error":"rate_limited"`) {
		t.Fatalf("the good code after %d refused token requests: %d %q %s, want 429 rate_limited with Retry-After", oauth.TokenMissLimit, st, h.Get("Retry-After"), body2)
	}
	// Discovery and the API are not held: the throttles are the two endpoints' own.
	if st, _, _ := o.do(o.plain, "GET", "/.well-known/oauth-authorization-server", nil, nil); st != http.StatusOK {
		t.Fatalf("metadata while throttled: %d", st)
	}
}
