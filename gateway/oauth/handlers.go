package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/ory/fosite"

	"github.com/sensorgate/sensorgate/gateway/account"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// Route is one route of the server, for the gateway's routes file.
type Route struct {
	Method, Path string
	Handler      http.Handler
}

// Routes lists the server's surface: the discovery documents, registration, token and
// revocation (public, for clients), and the authorization endpoint inside the dashboard's
// sessions and protections (a person's browser).
func (s *Server) Routes() []Route {
	prm := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		writeJSONCached(w, s.ResourceMetadata(strings.TrimPrefix(r.URL.Path, PathPRMetadata)))
	})
	asm := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		writeJSONCached(w, s.ServerMetadata())
	})
	return surface(prm, asm, s.cfg.Sessions.Protect(http.HandlerFunc(s.authorize)),
		http.HandlerFunc(s.register), http.HandlerFunc(s.token), http.HandlerFunc(s.revoke))
}

// OffRoutes is the same surface on a gateway without the dashboard (ACCOUNT_ORIGIN unset),
// each path a 404 saying why: a client learns that this gateway has no authorization
// server, not that the path does not exist.
func OffRoutes() []Route {
	off := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		apierr.Write(w, apierr.New(apierr.NotFound, "OAuth is off on this gateway: its operator sets ACCOUNT_ORIGIN to turn on the account dashboard and its authorization server"))
	})
	return surface(off, off, off, off, off, off)
}

func surface(prm, asm, authorize, register, token, revoke http.Handler) []Route {
	rs := []Route{
		{http.MethodGet, PathPRMetadata, prm},
		{http.MethodGet, PathPRMetadata + "/*path", prm},
		{http.MethodGet, PathASMetadata, asm},
		{http.MethodGet, PathAuthorize, authorize},
		{http.MethodPost, PathAuthorize, authorize},
	}
	// Registration, token and revocation take no cookie and no session: a client running
	// in a browser page (another origin) may call them (CORS, preflight answered here).
	for _, r := range []Route{{http.MethodPost, PathRegister, register}, {http.MethodPost, PathToken, token}, {http.MethodPost, PathRevoke, revoke}} {
		rs = append(rs, Route{r.Method, r.Path, cors(r.Handler)}, Route{http.MethodOptions, r.Path, cors(nil)})
	}
	return rs
}

// cors lets any origin call a cookie-less endpoint; a nil next answers the preflight.
func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		if next == nil {
			h.Set("Access-Control-Allow-Methods", "POST")
			h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSONCached(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_ = json.NewEncoder(w).Encode(v)
}

const (
	sessionCSRF    = "oauth_csrf"
	sessionRequest = "oauth_request"
)

// authorize is the authorization endpoint. GET checks the request (client, exact redirect,
// PKCE S256, scopes, resource) and shows the consent page to a signed-in person, or sends
// the person to sign in first and back here after; POST is the consent form's answer:
// approve redirects to the client with code, state and iss, deny with access_denied.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	frameHeaders(w)
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		// The consent form carries the request it answers; the session's CSRF token proves
		// the form is the one this server showed to this person (the cross-origin check ran
		// before).
		want := s.cfg.Sessions.PopString(ctx, sessionCSRF)
		got := r.PostForm.Get("csrf")
		if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
			consentError(w, http.StatusForbidden, "This consent form has expired or was not sent by this page. Start the connection again from your app.")
			return
		}
		pq, err := url.ParseQuery(r.PostForm.Get("request"))
		if err != nil || pq.Encode() != s.cfg.Sessions.PopString(ctx, sessionRequest) {
			consentError(w, http.StatusForbidden, "This consent form does not match the request it was shown for. Start the connection again from your app.")
			return
		}
		q = pq
	}
	ar, err := s.authorizeRequest(ctx, q)
	if err != nil {
		s.provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	acct, err := s.cfg.Sessions.Current(r)
	if err != nil {
		// Not signed in: sign in through the dashboard, then back to this request.
		s.cfg.Sessions.Put(ctx, NextKey, PathAuthorize+"?"+q.Encode())
		w.Header().Set("Location", s.cfg.Sessions.SignInPage()) // no body, as fosite's own redirects
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	if r.Method == http.MethodGet {
		s.consentPage(w, r, ar, q)
		return
	}
	if r.PostForm.Get("decision") != "approve" {
		s.cfg.Sessions.Audit(r, acct.ID.String(), "oauth.deny", ar.GetClient().GetID())
		s.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint("The person denied the request."))
		return
	}
	s.approve(w, r, ar, acct)
}

// authorizeRequest runs fosite's checks on an authorization request, with what fosite does
// not check itself: PKCE S256 present (fosite checks it only when the code is issued), the
// resource (RFC 8707) as the requested audience, and localhost's free port.
func (s *Server) authorizeRequest(ctx context.Context, q url.Values) (fosite.AuthorizeRequester, error) {
	q = cloneValues(q)
	if res := q["resource"]; len(res) > 0 {
		for _, rs := range res {
			if !s.ownResource(rs) {
				ar, _ := s.provider.NewAuthorizeRequest(withRedirect(ctx, q.Get("redirect_uri")), formRequest(ctx, q))
				return ar, fosite.ErrInvalidRequest.WithHintf("The resource %q is not a resource of this gateway (%s).", rs, s.cfg.Issuer).WithWrap(errInvalidTarget)
			}
		}
		q.Set("audience", strings.Join(res, " "))
	} else {
		q.Del("audience")
	}
	ar, err := s.provider.NewAuthorizeRequest(withRedirect(ctx, q.Get("redirect_uri")), formRequest(ctx, q))
	if err != nil {
		return ar, err
	}
	if q.Get("code_challenge") == "" {
		return ar, fosite.ErrInvalidRequest.WithHint("PKCE is required: send code_challenge with code_challenge_method=S256.")
	}
	if q.Get("code_challenge_method") != "S256" {
		return ar, fosite.ErrInvalidRequest.WithHint("Only code_challenge_method=S256 is supported (not plain).")
	}
	if len(ar.GetState()) == 0 {
		return ar, fosite.ErrInvalidState.WithHint("Send a state parameter.")
	}
	return ar, nil
}

var errInvalidTarget = errors.New("invalid_target")

// ownResource: a resource this gateway serves tokens for is its origin or a path of it.
func (s *Server) ownResource(res string) bool {
	u, err := url.Parse(res)
	return err == nil && u.Scheme+"://"+u.Host == s.cfg.Issuer && u.Fragment == "" && u.RawQuery == "" && u.User == nil
}

func cloneValues(q url.Values) url.Values {
	out := make(url.Values, len(q))
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// formRequest is an authorization request as fosite reads it: the values in the query.
func formRequest(ctx context.Context, q url.Values) *http.Request {
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, PathAuthorize+"?"+q.Encode(), nil)
	return r
}

// frameHeaders: the consent page is never framed (clickjacking), never cached.
func frameHeaders(w http.ResponseWriter) {
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

// approve issues the code: the person's key for this client (made at its first grant)
// stands behind every token of the grant.
func (s *Server) approve(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, acct store.Account) {
	ctx := r.Context()
	clientID := ar.GetClient().GetID()
	scopes := ar.GetRequestedScopes()
	if len(scopes) == 0 {
		scopes = auth.ScopeNames()
	}
	for _, sc := range scopes {
		ar.GrantScope(sc)
	}
	granted, _ := auth.ParseScopes("scope", strings.Join(scopes, " "))
	key, err := s.appKey(ctx, acct, clientID, granted)
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "oauth: app key", "err", err)
		s.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrTemporarilyUnavailable)
		return
	}
	aud := ar.GetRequestedAudience()
	if len(aud) == 0 {
		aud = []string{s.cfg.Issuer}
	}
	for _, a := range aud {
		ar.GrantAudience(a)
	}
	sess := &fosite.DefaultSession{Subject: acct.ID.String(), Username: acct.Name, Extra: map[string]any{appKeyExtra: key.ID.String()}}
	resp, err := s.provider.NewAuthorizeResponse(ctx, ar, sess)
	if err != nil {
		s.logRefusal(ctx, "authorize", err)
		s.provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	resp.AddParameter("iss", s.cfg.Issuer) // RFC 9207
	s.cfg.Sessions.Audit(r, acct.ID.String(), "oauth.grant", clientID+" "+strings.Join(scopes, " ")+" "+strings.Join(aud, " "))
	s.provider.WriteAuthorizeResponse(ctx, w, ar, resp)
}

// appKey is the account's key for the client, made at the first grant (and again after a
// revocation of the app); it allows what its person has granted the client, this time and
// before.
func (s *Server) appKey(ctx context.Context, acct store.Account, clientID string, granted auth.Scope) (catalog.APIKey, error) {
	k, err := s.cfg.Store.AppKey(ctx, acct.ID, clientID)
	if err == nil {
		if all := granted | auth.KeyScopes(k.Scopes); all.String() != k.Scopes {
			k.Scopes = all.String()
			err = s.cfg.Store.SetKeyScopes(ctx, k.ID, k.Scopes)
		}
		return k, err
	}
	if !errors.Is(err, catalog.ErrNotFound) {
		return k, err
	}
	hash := make([]byte, 32) // a hash no secret has: the key is only ever used by its tokens
	_, _ = rand.Read(hash)
	name := clientID
	if c, err := s.cfg.Store.OAuthClientByID(ctx, clientID); err == nil {
		name = c.Name
	}
	return s.cfg.Store.CreateKey(ctx, catalog.APIKey{ID: uuid.New(), Name: "app: " + clip(name), Prefix: "oauth", Hash: hash,
		OwnerID: acct.ID, Environment: s.cfg.Environment, ClientID: clientID, Scopes: granted.String(), CreatedAt: s.cfg.Now().UTC().Truncate(time.Microsecond)})
}

// token is the token endpoint: the code grant (PKCE verifier checked, a reused code revokes
// its grant) and the refresh grant (rotation, a reused refresh token revokes its family).
// A resource sent here must be the one granted.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	addr := account.ClientAddr(r)
	if throttled(w, r, s.cfg.TokenThrottle, addr, "refused token requests") {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	ar, err := s.provider.NewAccessRequest(ctx, r, &fosite.DefaultSession{})
	if err != nil {
		s.tokenRefused(ctx, addr, err)
		s.logRefusal(ctx, "token", err)
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	// The grant's audience: what its authorization asked for (fosite grants it when it
	// answers), else the whole gateway.
	audience := append(append([]string{}, ar.GetRequestedAudience()...), ar.GetGrantedAudience()...)
	if len(audience) == 0 {
		audience = []string{s.cfg.Issuer}
	}
	for _, res := range r.PostForm["resource"] {
		granted := false
		for _, a := range audience {
			granted = granted || strings.TrimRight(a, "/") == strings.TrimRight(res, "/")
		}
		if !granted {
			s.cfg.TokenThrottle.Miss(ctx, addr)
			s.provider.WriteAccessError(ctx, w, ar, fosite.ErrInvalidRequest.WithHintf("The resource %q is not the one this grant was issued for.", res).WithWrap(errInvalidTarget))
			return
		}
	}
	resp, err := s.provider.NewAccessResponse(ctx, ar)
	if err != nil {
		s.tokenRefused(ctx, addr, err)
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	s.provider.WriteAccessResponse(ctx, w, ar, resp)
}

// tokenRefused counts a refused token request against the address; the server's own
// failures (5xx) are not the caller's and do not count.
func (s *Server) tokenRefused(ctx context.Context, addr string, err error) {
	if fosite.ErrorToRFC6749Error(err).CodeField < http.StatusInternalServerError {
		s.cfg.TokenThrottle.Miss(ctx, addr)
	}
}

// revoke is RFC 7009 revocation: the token's whole grant is revoked, and this replica's
// cached lookups forgotten (others follow within KEY_CACHE_TTL).
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	err := s.provider.NewRevocationRequest(ctx, r)
	if err == nil {
		s.cfg.Forget()
		s.cfg.Sessions.Audit(r, r.PostForm.Get("client_id"), "oauth.revoke", "token revoked by its client")
	}
	s.provider.WriteRevocationResponse(ctx, w, err)
}

var consentTemplate = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Connect {{.Client}} to sensorgate</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;max-width:36rem;padding:1rem;overflow-wrap:anywhere}
ul{padding-left:1.2rem}button{font:inherit;padding:.6rem 1.2rem;margin:.3rem .5rem .3rem 0}
.host{font-family:monospace}
</style></head><body>
<h1>Connect {{.Client}}?</h1>
<p>Signed in as <strong>{{.Account}}</strong>.</p>
<p><strong>{{.Client}}</strong> asks to use sensorgate on your behalf. After you approve, you go back to
<span class="host">{{.RedirectHost}}</span>.</p>
<p>It will be able to:</p>
<ul>{{range .Scopes}}<li><strong>{{.Name}}</strong>: {{.Text}}</li>{{end}}</ul>
{{if .Resource}}<p>Only at <span class="host">{{.Resource}}</span>.</p>{{end}}
<p>You can disconnect it at any time under Connected apps in your account.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<input type="hidden" name="request" value="{{.Request}}">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
</body></html>
`))

type scopeLine struct{ Name, Text string }

// consentPage shows the request in words: the client, where it goes back to, each scope.
// Server-rendered, no script; its CSP allows the form to post here and the redirect that
// follows to reach the client.
func (s *Server) consentPage(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, q url.Values) {
	ctx := r.Context()
	acct, _ := s.cfg.Sessions.Current(r)
	name := ar.GetClient().GetID()
	if c, err := s.cfg.Store.OAuthClientByID(ctx, name); err == nil {
		name = c.Name
	}
	scopes := ar.GetRequestedScopes()
	if len(scopes) == 0 {
		scopes = auth.ScopeNames()
	}
	lines := make([]scopeLine, 0, len(scopes))
	for _, sc := range scopes {
		lines = append(lines, scopeLine{sc, auth.ScopeDescription(sc)})
	}
	csrf := rand.Text()
	s.cfg.Sessions.Put(ctx, sessionCSRF, csrf)
	s.cfg.Sessions.Put(ctx, sessionRequest, q.Encode())
	redirect := ar.GetRedirectURI()
	target := "'self'"
	if redirect != nil {
		if redirect.Scheme == "http" || redirect.Scheme == "https" {
			target += " " + redirect.Scheme + "://" + redirect.Host
		} else {
			target += " " + redirect.Scheme + ":"
		}
	}
	host := ""
	if redirect != nil {
		host = redirect.Host
		if host == "" {
			host = redirect.Scheme + ":"
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action "+target+"; frame-ancestors 'none'; base-uri 'none'")
	w.WriteHeader(http.StatusOK)
	_ = consentTemplate.Execute(w, map[string]any{
		"Client": name, "Account": acct.Name + " (" + acct.Email + ")", "RedirectHost": host,
		"Scopes": lines, "Resource": strings.Join(q["resource"], ", "), "CSRF": csrf, "Request": q.Encode(), "Action": PathAuthorize,
	})
}

// consentError is a page (not a redirect: the request may not be trustworthy) saying why.
func consentError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_, _ = w.Write([]byte("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>sensorgate</title></head><body><p>" +
		template.HTMLEscapeString(msg) + "</p></body></html>\n"))
}

// logRefusal logs why a request was refused: the server's own failures as errors, the
// client's mistakes at info.
func (s *Server) logRefusal(ctx context.Context, what string, err error) {
	e := fosite.ErrorToRFC6749Error(err)
	if e.CodeField >= 500 {
		s.cfg.Logger.ErrorContext(ctx, "oauth: "+what+" failed", "err", err, "debug", e.DebugField, "cause", e.Cause())
		return
	}
	s.cfg.Logger.InfoContext(ctx, "oauth: "+what+" refused", "err", e.ErrorField, "hint", e.HintField, "debug", e.DebugField)
}
