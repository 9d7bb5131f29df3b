package account_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/sensorgate/sensorgate/gateway/account"
	"github.com/sensorgate/sensorgate/gateway/api"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/openapi"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

var (
	opOnce sync.Once
	opBin  string
	opErr  error
)

// opServer builds zitadel/oidc's example OpenID provider at the version pinned in
// testdata/op (once per test binary).
func opServer(t *testing.T) string {
	t.Helper()
	opOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sensorgate-op-")
		if err != nil {
			opErr = err
			return
		}
		opBin = filepath.Join(dir, "opserver")
		cmd := exec.Command("go", "build", "-o", opBin, "github.com/zitadel/oidc/v3/example/server")
		cmd.Dir = filepath.Join("testdata", "op")
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			opErr = fmt.Errorf("build the OpenID provider: %v\n%s", err, out)
		}
	})
	if opErr != nil {
		t.Fatal(opErr)
	}
	return opBin
}

type oidcEnv struct {
	st     *store.Store
	origin string // the gateway as the browser sees it
	issuer string
}

// newOIDCEnv starts the OpenID provider (a real process) and a dashboard that signs in
// with it as client "web".
func newOIDCEnv(t *testing.T, openSignUp bool) *oidcEnv {
	t.Helper()
	bin := opServer(t)
	st, err := store.Open(context.Background(), store.Config{SQLitePath: filepath.Join(t.TempDir(), "c.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	srv := httptest.NewUnstartedServer(nil)
	e := &oidcEnv{st: st, origin: "http://localhost:" + strings.Split(srv.Listener.Addr().String(), ":")[1]}
	opPort := strings.Split(testenv.FreeAddr(t), ":")[1]
	e.issuer = "http://localhost:" + opPort + "/"
	p := testenv.StartProcess(t, testenv.Command{Name: "openid-provider", Path: bin,
		Env: []string{"PORT=" + opPort, "REDIRECT_URI=" + e.origin + account.PathOIDCCallback}})
	p.WaitReady(t, e.issuer+".well-known/openid-configuration", 60*time.Second)
	h, err := account.New(st, account.Config{
		Origin: e.origin, Environment: catalog.EnvDevelopment, OpenSignUp: openSignUp, Projects: api.OwnProjects(st),
		SignInFloor: 50 * time.Millisecond,
		OIDC:        account.OIDC{Issuer: e.issuer, ClientID: "web", ClientSecret: "secret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	return e
}

// onlyHost sends requests to origin's host through rt, the others directly.
func onlyHost(origin string, rt http.RoundTripper) http.RoundTripper {
	u, _ := url.Parse(origin)
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host == u.Host {
			return rt.RoundTrip(r)
		}
		return http.DefaultTransport.RoundTrip(r)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var hrefRE = regexp.MustCompile(`href="([^"]+)"`)

// provider signs in at the provider's login page as test-user and returns the answer of
// the redirect URI (the client follows every redirect).
func providerLogin(t *testing.T, c *http.Client, authURL string) *http.Response {
	t.Helper()
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Request.URL.Query().Get("authRequestID")
	if id == "" {
		t.Fatalf("the provider did not show its login page: %s", resp.Request.URL)
	}
	login := resp.Request.URL.Scheme + "://" + resp.Request.URL.Host + "/login/username"
	resp, err = c.PostForm(login, url.Values{"username": {"test-user@localhost"}, "password": {"verysecure"}, "id": {id}})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func moveTarget(t *testing.T, body []byte) string {
	t.Helper()
	m := hrefRE.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no link in %s", body)
	}
	return html.UnescapeString(string(m[1]))
}

// A user signs in with the real OpenID provider (code + PKCE) and lands in their own
// account (found by the provider's verified email, then linked); a wrong state is refused.
func TestOIDCSignIn(t *testing.T) {
	e := newOIDCEnv(t, false)
	ctx := context.Background()
	own, err := e.st.CreateAccount(ctx, store.Account{Name: "Test User", Email: "test-user@zitadel.ch"})
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	// The gateway's answers are checked against the OpenAPI document; the provider's are not.
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second, Transport: onlyHost(e.origin, openapi.ValidateTransport(t, nil))}

	resp, err := c.Get(e.origin + "/account/auth/oidc/start")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	authURL := moveTarget(t, body)
	if !strings.HasPrefix(authURL, e.issuer) || !strings.Contains(authURL, "code_challenge_method=S256") || !strings.Contains(authURL, "nonce=") {
		t.Fatalf("authorization URL %s", authURL)
	}
	resp = providerLogin(t, c, authURL)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Request.URL.String(), e.origin+account.PathOIDCCallback) {
		t.Fatalf("callback: %d at %s: %s", resp.StatusCode, resp.Request.URL, body)
	}
	resp, err = c.Get(e.origin + "/account/api/me")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), own.ID.String()) {
		t.Fatalf("me after OpenID Connect sign-in: %d %s", resp.StatusCode, body)
	}
	if a, err := e.st.AccountByIdentity(ctx, strings.TrimSuffix(e.issuer, "/")+"/", "id1"); err != nil || a.ID != own.ID {
		t.Fatalf("identity not linked: %+v %v", a, err)
	}

	// A callback with a state this session did not send.
	resp, err = c.Get(e.origin + "/account/auth/oidc/start")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = c.Get(e.origin + account.PathOIDCCallback + "?state=forged&code=whatever")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(body), "sign_in_failed") {
		t.Fatalf("wrong state: %d %s", resp.StatusCode, body)
	}
}

// Without an account of the provider's email and with sign-up closed, the sign-in fails
// with the one answer.
func TestOIDCUnknownAccountClosedSignUp(t *testing.T) {
	e := newOIDCEnv(t, false)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	resp, err := c.Get(e.origin + "/account/auth/oidc/start")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp = providerLogin(t, c, moveTarget(t, body))
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(body), "sign_in_failed") {
		t.Fatalf("unknown account: %d %s", resp.StatusCode, body)
	}
}

// A real ID token of the provider passes the callback's checks only with its own nonce and
// audience: another nonce, or another client id, is refused.
func TestOIDCNonceAndAudience(t *testing.T) {
	e := newOIDCEnv(t, false)
	ctx := context.Background()
	p, err := oidc.NewProvider(ctx, e.issuer)
	if err != nil {
		t.Fatal(err)
	}
	conf := &oauth2.Config{ClientID: "web", ClientSecret: "secret", Endpoint: p.Endpoint(),
		RedirectURL: e.origin + account.PathOIDCCallback, Scopes: []string{oidc.ScopeOpenID}}
	verifier := oauth2.GenerateVerifier()
	jar, _ := cookiejar.New(nil)
	var code string
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(r.URL.String(), conf.RedirectURL) {
			code = r.URL.Query().Get("code")
			return http.ErrUseLastResponse // the test takes the code, not the gateway
		}
		return nil
	}}
	resp := providerLogin(t, c, conf.AuthCodeURL("s1", oidc.Nonce("n1"), oauth2.S256ChallengeOption(verifier)))
	resp.Body.Close()
	if code == "" {
		t.Fatal("the provider gave no code")
	}
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if err := account.VerifyIDToken(ctx, e.issuer, "web", raw, "n1"); err != nil {
		t.Fatalf("the real token with its nonce and audience: %v", err)
	}
	if err := account.VerifyIDToken(ctx, e.issuer, "web", raw, "n2"); err == nil || !strings.Contains(err.Error(), "nonce") {
		t.Fatalf("wrong nonce: %v", err)
	}
	err = account.VerifyIDToken(ctx, e.issuer, "api", raw, "n1")
	if err == nil || !strings.Contains(err.Error(), "audience") {
		t.Fatalf("wrong audience: %v", err)
	}
	var tampered string
	if parts := strings.Split(raw, "."); len(parts) == 3 {
		tampered = parts[0] + "." + parts[1] + "x." + parts[2]
	}
	if err := account.VerifyIDToken(ctx, e.issuer, "web", tampered, "n1"); err == nil {
		t.Fatal("a tampered token passed")
	}
}
