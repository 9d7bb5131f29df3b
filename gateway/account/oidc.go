package account

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// OIDC configures sign-in with an OpenID Connect provider (authorization code with PKCE).
type OIDC struct {
	// Issuer is the provider's issuer URL, exactly as its discovery document says.
	Issuer       string
	ClientID     string
	ClientSecret string
	// HTTPClient talks to the provider (default: a client with a 10 s timeout).
	HTTPClient *http.Client
}

// PathOIDCCallback is the redirect URI to register with the provider (after the origin).
const PathOIDCCallback = "/account/auth/oidc/callback"

// Session keys of a sign-in in progress.
const (
	sessionOIDCState    = "oidc_state"
	sessionOIDCNonce    = "oidc_nonce"
	sessionOIDCVerifier = "oidc_verifier"
)

// oidcClient discovers the provider on first use (a gateway starts while its provider is
// down) and keeps what it found.
type oidcClient struct {
	cfg    OIDC
	origin string

	mu       sync.Mutex
	provider *oidc.Provider
}

func (o *oidcClient) discover(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, o.cfg.HTTPClient), o.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("account: OpenID provider %s: %w", o.cfg.Issuer, err)
	}
	o.provider = p
	return p, nil
}

func (o *oidcClient) oauth2(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: o.origin + PathOIDCCallback, Scopes: []string{oidc.ScopeOpenID, "email", "profile"},
	}
}

// verifier checks an ID token's signature, issuer, expiry and audience (the client id).
func (o *oidcClient) verifier(p *oidc.Provider) *oidc.IDTokenVerifier {
	return p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID})
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// oidcStart sends the browser to the provider with a fresh state, nonce and PKCE
// verifier, kept in the session.
func (h *Handler) oidcStart(w http.ResponseWriter, r *http.Request) {
	p, err := h.oidc.discover(r.Context())
	if err != nil {
		h.cfg.Logger.ErrorContext(r.Context(), "account: OpenID Connect sign-in unavailable", "err", err)
		apierr.Write(w, apierr.New(apierr.UpstreamUnavailable, "the OpenID Connect provider does not answer; try again later"))
		return
	}
	state, nonce, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	h.sessions.Put(r.Context(), sessionOIDCState, state)
	h.sessions.Put(r.Context(), sessionOIDCNonce, nonce)
	h.sessions.Put(r.Context(), sessionOIDCVerifier, verifier)
	u := h.oidc.oauth2(p).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier))
	writeMovePage(w, u, "Continue to your organisation's sign-in")
}

// verify checks a raw ID token: signature, issuer, expiry, audience (the client id), and
// that its nonce is the one this sign-in sent.
func (o *oidcClient) verify(ctx context.Context, p *oidc.Provider, raw, nonce string) (*oidc.IDToken, error) {
	idt, err := o.verifier(p).Verify(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("oidc: id token: %w", err)
	}
	if nonce == "" || subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return nil, errors.New("oidc: nonce does not match")
	}
	return idt, nil
}

// oidcCallback checks state, exchanges the code with the PKCE verifier, verifies the ID
// token (signature, issuer, audience, expiry) and its nonce, and signs in the account
// linked to (issuer, subject): an existing link, else the account with the provider's
// verified email (linked now), else a new account when open sign-up is on. Every failure is
// the one sign_in_failed.
func (h *Handler) oidcCallback(w http.ResponseWriter, r *http.Request) {
	start := h.cfg.Now()
	if h.blocked(w, r, "") {
		return
	}
	ctx := r.Context()
	state := h.sessions.PopString(ctx, sessionOIDCState)
	nonce := h.sessions.PopString(ctx, sessionOIDCNonce)
	verifier := h.sessions.PopString(ctx, sessionOIDCVerifier)
	q := r.URL.Query()
	if state == "" || subtle.ConstantTimeCompare([]byte(state), []byte(q.Get("state"))) != 1 {
		h.failSignIn(w, r, start, "", errors.New("oidc: state does not match"))
		return
	}
	if e := q.Get("error"); e != "" {
		h.failSignIn(w, r, start, "", fmt.Errorf("oidc: the provider answered %s", clip(e)))
		return
	}
	p, err := h.oidc.discover(ctx)
	if err != nil {
		h.failSignIn(w, r, start, "", err)
		return
	}
	octx := oidc.ClientContext(ctx, h.oidc.cfg.HTTPClient)
	tok, err := h.oidc.oauth2(p).Exchange(octx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		h.failSignIn(w, r, start, "", fmt.Errorf("oidc: exchange code: %w", err))
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := h.oidc.verify(octx, p, raw, nonce)
	if err != nil {
		h.failSignIn(w, r, start, "", err)
		return
	}
	a, err := h.oidcAccount(octx, p, tok, idt)
	if err != nil {
		h.failSignIn(w, r, start, "", err)
		return
	}
	if err := h.signIn(r, a, "openid connect "+idt.Issuer); err != nil {
		apierr.Write(w, err)
		return
	}
	writeMovePage(w, h.afterSignIn(r.Context()), "Signed in. Continue")
}

// oidcAccount finds or makes the account of a verified ID token.
func (h *Handler) oidcAccount(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, idt *oidc.IDToken) (store.Account, error) {
	a, err := h.st.AccountByIdentity(ctx, idt.Issuer, idt.Subject)
	if err == nil {
		if a.DisabledAt != nil {
			return a, errors.New("oidc: account disabled")
		}
		return a, nil
	}
	if !errors.Is(err, catalog.ErrNotFound) {
		return a, err
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified bool   `json:"email_verified"`
		Name          string `json:"name"`
	}
	if err := idt.Claims(&claims); err != nil {
		return a, fmt.Errorf("oidc: claims: %w", err)
	}
	if claims.Email == "" {
		// Not in the ID token: the userinfo endpoint has it.
		ui, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return a, fmt.Errorf("oidc: userinfo: %w", err)
		}
		if err := ui.Claims(&claims); err != nil {
			return a, fmt.Errorf("oidc: userinfo claims: %w", err)
		}
		claims.Email, claims.EmailVerified = ui.Email, ui.EmailVerified
	}
	switch {
	case claims.Email != "" && claims.EmailVerified:
		a, err = h.st.AccountByEmail(ctx, claims.Email)
		if errors.Is(err, catalog.ErrNotFound) && h.cfg.OpenSignUp {
			name := strings.TrimSpace(claims.Name)
			if name == "" {
				name = claims.Email
			}
			a, err = h.st.CreateAccount(ctx, store.Account{Name: name, Email: claims.Email})
		}
	default:
		return a, errors.New("oidc: no verified email to find the account by")
	}
	if err != nil {
		return a, fmt.Errorf("oidc: account: %w", err)
	}
	if a.DisabledAt != nil {
		return a, errors.New("oidc: account disabled")
	}
	if err := h.st.LinkIdentity(ctx, idt.Issuer, idt.Subject, a.ID); err != nil {
		return a, err
	}
	return a, nil
}
