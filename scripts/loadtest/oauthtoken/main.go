// Command oauthtoken gets an OAuth access token from a sensorgate gateway the way a client
// does (docs/mcp.md "Connecting without a key"): it follows a one-time sign-in link, registers
// a public client (RFC 7591), asks for a code with PKCE S256 and the API as resource
// (RFC 8707), approves the consent form and exchanges the code. It prints the access token,
// for the load test's Bearer rows (scripts/loadtest.sh).
//
//	oauthtoken -addr http://127.0.0.1:8080 -link 'https://gw.example/account/...'
//
// The gateway may be a production one behind a TLS terminator that is not there: its
// public origin (the link's) names the issuer, the resource and the Origin header, and every
// request goes to -addr instead. Cookies are kept by hand because they are Secure and the
// connection is not.
package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
)

func main() {
	addr := flag.String("addr", "", "where the gateway listens, like http://127.0.0.1:8080")
	link := flag.String("link", "", "a one-time sign-in link (gateway accounts signin-link)")
	scope := flag.String("scope", "sensors:read readings:read", "the scopes to ask for")
	flag.Parse()
	if *addr == "" || *link == "" {
		fmt.Fprintln(os.Stderr, "usage: oauthtoken -addr URL -link URL [-scope SCOPES]")
		os.Exit(2)
	}
	tok, err := run(*addr, *link, *scope)
	if err != nil {
		fmt.Fprintln(os.Stderr, "oauthtoken:", err)
		os.Exit(1)
	}
	fmt.Println(tok)
}

// browser is an HTTP client that keeps cookies by name whatever their Secure flag and sends
// every request to addr, with the public origin's Origin header on posts.
type browser struct {
	addr, origin string
	cookies      map[string]string
	c            *http.Client
}

func (b *browser) do(method, path string, body io.Reader, contentType string) (*http.Response, string, error) {
	req, err := http.NewRequest(method, b.addr+path, body)
	if err != nil {
		return nil, "", err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if method == http.MethodPost {
		req.Header.Set("Origin", b.origin)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for name, v := range b.cookies {
		req.AddCookie(&http.Cookie{Name: name, Value: v})
	}
	resp, err := b.c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	for _, c := range resp.Cookies() {
		b.cookies[c.Name] = c.Value
	}
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, string(out), err
}

var (
	csrfField    = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	requestField = regexp.MustCompile(`name="request" value="([^"]+)"`)
)

func run(addr, link, scope string) (string, error) {
	l, err := url.Parse(link)
	if err != nil || l.Host == "" {
		return "", fmt.Errorf("-link %q: want an absolute URL", link)
	}
	b := &browser{addr: strings.TrimRight(addr, "/"), origin: l.Scheme + "://" + l.Host, cookies: map[string]string{},
		c: &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	resp, body, err := b.do(http.MethodGet, l.RequestURI(), nil, "")
	if err != nil {
		return "", fmt.Errorf("sign-in link: %w", err)
	}
	if resp.StatusCode >= 400 {
		return "", fmt.Errorf("sign-in link: %s: %.200s", resp.Status, body)
	}

	const redirect = "http://127.0.0.1:9/callback" // never called: the code is read off the redirect
	reg, _ := json.Marshal(map[string]any{"client_name": "sensorgate load test", "redirect_uris": []string{redirect}})
	resp, body, err = b.do(http.MethodPost, "/oauth/register", strings.NewReader(string(reg)), "application/json")
	if err != nil {
		return "", fmt.Errorf("register: %w", err)
	}
	var client struct {
		ClientID string `json:"client_id"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(body), &client) != nil || client.ClientID == "" {
		return "", fmt.Errorf("register: %s: %.200s", resp.Status, body)
	}

	verifier := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	resource := b.origin + "/api/v1"
	q := url.Values{"response_type": {"code"}, "client_id": {client.ClientID}, "redirect_uri": {redirect}, "state": {rand.Text()},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"scope": {scope}, "resource": {resource}}
	resp, page, err := b.do(http.MethodGet, "/oauth/authorize?"+q.Encode(), nil, "")
	if err != nil {
		return "", fmt.Errorf("authorize: %w", err)
	}
	cs, rq := csrfField.FindStringSubmatch(page), requestField.FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || cs == nil || rq == nil {
		return "", fmt.Errorf("authorize: %s %s, want the consent page: %.200s", resp.Status, resp.Header.Get("Location"), page)
	}
	form := url.Values{"csrf": {cs[1]}, "request": {html.UnescapeString(rq[1])}, "decision": {"approve"}}
	resp, body, err = b.do(http.MethodPost, "/oauth/authorize", strings.NewReader(form.Encode()), "application/x-www-form-urlencoded")
	if err != nil {
		return "", fmt.Errorf("consent: %w", err)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		return "", fmt.Errorf("consent: %s to %q, want a redirect with a code: %.200s", resp.Status, resp.Header.Get("Location"), body)
	}

	form = url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {redirect},
		"client_id": {client.ClientID}, "code_verifier": {verifier}, "resource": {resource}}
	resp, body, err = b.do(http.MethodPost, "/oauth/token", strings.NewReader(form.Encode()), "application/x-www-form-urlencoded")
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	var tk struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &tk) != nil || tk.AccessToken == "" {
		return "", fmt.Errorf("token: %s: %.200s", resp.Status, body)
	}
	return tk.AccessToken, nil
}
