// Package oauth is the gateway's OAuth 2.1 authorization server (docs/security.md "OAuth"),
// so that an MCP client connects with the gateway's URL alone: it learns from a 401 where
// the protected resource metadata is (RFC 9728), finds this server there (RFC 8414),
// registers (RFC 7591, or a client id metadata document), sends the person through the
// dashboard's sign-in and a consent page, and exchanges the code (PKCE S256) for an access
// token bound to the resource it asked for (RFC 8707) and a rotating refresh token.
//
// The protocol is ory/fosite's (authorize, token, refresh rotation with reuse detection,
// PKCE, revocation); this package stores its state in the catalog database, renders the
// consent page, and ties each grant to a key of the account (package auth), so that tokens
// are rate-limited, counted and revoked as a key is.
package oauth

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	foauth2 "github.com/ory/fosite/handler/oauth2"

	"github.com/sensorgate/sensorgate/gateway/alerts"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/outbound"
	"github.com/sensorgate/sensorgate/gateway/store"
)

// Paths of the authorization server.
const (
	PathAuthorize  = "/oauth/authorize"
	PathToken      = "/oauth/token"
	PathRegister   = "/oauth/register"
	PathRevoke     = "/oauth/revoke"
	PathASMetadata = "/.well-known/oauth-authorization-server"
	PathPRMetadata = auth.WellKnownResource
)

// The throttles of the public endpoints (docs/security.md, "OAuth"). Registration needs no
// sign-in, so an address may register RegisterLimit clients an hour: a person's clients
// register a few times a day, a script filling the catalog with clients is stopped. The
// token endpoint takes codes, verifiers and refresh tokens: an address with TokenMissLimit
// refused requests in TokenMissWindow waits out the window, so guessing costs hours while a
// client that retries a bad grant a few times is never held.
const (
	RegisterLimit   = 60
	RegisterWindow  = time.Hour
	TokenMissLimit  = 30
	TokenMissWindow = 15 * time.Minute
)

// Lifetimes.
const (
	// MaxAccessTokenTTL is the longest an access token lives (the contract: at most 1 h).
	MaxAccessTokenTTL = time.Hour
	// DefaultRefreshTokenTTL is how long a refresh token lives unused.
	DefaultRefreshTokenTTL = 30 * 24 * time.Hour
	codeTTL                = 5 * time.Minute
)

// Sessions is what the server needs of the dashboard (package account): its sessions and
// protections around the consent page, the signed-in account, and the audit log.
type Sessions interface {
	// Protect wraps a handler in the dashboard's session loader, cross-origin protection
	// and no-store.
	Protect(next http.Handler) http.Handler
	// Current is the session's signed-in account, an error when there is none.
	Current(r *http.Request) (store.Account, error)
	GetString(ctx context.Context, key string) string
	PopString(ctx context.Context, key string) string
	Put(ctx context.Context, key string, v any)
	// SignInPage is where a person signs in; after it the dashboard goes to the session's
	// NextKey when it holds an authorization request.
	SignInPage() string
	Audit(r *http.Request, actor, action, target string)
}

// NextKey is the session key of the authorization request a person returns to after
// signing in.
const NextKey = "oauth_next"

// Config is what the server needs.
type Config struct {
	// Issuer is the gateway's public origin (ACCOUNT_ORIGIN): the issuer, and the origin of
	// every resource it issues tokens for.
	Issuer      string
	Environment string
	Store       *store.Store
	Sessions    Sessions
	// Forget drops this replica's cached key and token lookups after a revocation here.
	Forget func()
	// AccessTokenTTL is at most MaxAccessTokenTTL (the default).
	AccessTokenTTL time.Duration
	// Guard vets every address a client id metadata document is fetched from: the alert
	// webhooks' SSRF guard (no loopback, private, link-local or metadata address unless
	// it allows it); the zero value refuses them all.
	Guard alerts.Guard
	// RegisterThrottle counts every client registration per address (RegisterLimit in
	// RegisterWindow), TokenThrottle every refused token request per address
	// (TokenMissLimit in TokenMissWindow). Nil counts in this process; the gateway counts
	// both in its Redis, so that every replica sees them.
	RegisterThrottle, TokenThrottle auth.Throttle

	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Server is the authorization server.
type Server struct {
	cfg      Config
	fetch    *http.Client // client id metadata documents: an outside party (package outbound)
	provider fosite.OAuth2Provider
	strategy *foauth2.HMACSHAStrategy
	storage  *storage
}

// New builds the server; the HMAC secret is the one every replica shares (in the catalog).
func New(ctx context.Context, cfg Config) (*Server, error) {
	u, err := url.Parse(cfg.Issuer)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("oauth: issuer %q: want an origin like https://gateway.example.org", cfg.Issuer)
	}
	cfg.Issuer = u.Scheme + "://" + u.Host
	if cfg.Store == nil || cfg.Sessions == nil {
		return nil, errors.New("oauth: Config.Store and Config.Sessions are required")
	}
	if cfg.AccessTokenTTL <= 0 || cfg.AccessTokenTTL > MaxAccessTokenTTL {
		cfg.AccessTokenTTL = MaxAccessTokenTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Forget == nil {
		cfg.Forget = func() {}
	}
	if cfg.RegisterThrottle == nil {
		cfg.RegisterThrottle = auth.NewMemoryThrottle(RegisterLimit, RegisterWindow, cfg.Now)
	}
	if cfg.TokenThrottle == nil {
		cfg.TokenThrottle = auth.NewMemoryThrottle(TokenMissLimit, TokenMissWindow, cfg.Now)
	}
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh)
	secret, err := cfg.Store.OAuthSecret(ctx, fresh)
	if err != nil {
		return nil, err
	}
	fc := &fosite.Config{
		AccessTokenLifespan:            cfg.AccessTokenTTL,
		RefreshTokenLifespan:           DefaultRefreshTokenTTL,
		AuthorizeCodeLifespan:          codeTTL,
		GlobalSecret:                   secret,
		EnforcePKCE:                    true,
		EnablePKCEPlainChallengeMethod: false,
		ScopeStrategy:                  fosite.ExactScopeStrategy,
		AudienceMatchingStrategy:       fosite.DefaultAudienceMatchingStrategy,
		RefreshTokenScopes:             []string{}, // every grant gets a refresh token
		TokenURL:                       cfg.Issuer + PathToken,
		AccessTokenIssuer:              cfg.Issuer,
		RedirectSecureChecker:          secureRedirect,
	}
	s := &Server{cfg: cfg, fetch: outbound.Client(metadataFetchTime, cfg.Guard.Control)}
	s.storage = &storage{st: cfg.Store, clients: s.client, reused: s.reused}
	s.strategy = compose.NewOAuth2HMACStrategy(fc)
	s.provider = compose.Compose(fc, s.storage, s.strategy,
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2PKCEFactory,
		compose.OAuth2TokenRevocationFactory,
	)
	return s, nil
}

// secureRedirect lets https redirects through, and http only to a loopback host (native
// clients, RFC 8252); private-use schemes (cursor://, vscode://) are apps on the device.
func secureRedirect(_ context.Context, u *url.URL) bool {
	switch u.Scheme {
	case "https":
		return true
	case "http":
		return fosite.IsLocalhost(u)
	}
	return true
}

// reused records a reused code or refresh token: fosite revokes the grant's family.
func (s *Server) reused(ctx context.Context, kind string, req fosite.Requester) {
	if req == nil {
		return
	}
	s.cfg.Forget()
	err := s.cfg.Store.AddAudit(context.WithoutCancel(ctx), store.AuditEvent{At: s.cfg.Now(), Actor: req.GetClient().GetID(),
		Action: "oauth." + kind + "_reuse", Target: "grant " + req.GetID() + " revoked"})
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "oauth: audit event lost", "err", err)
	}
	s.cfg.Logger.WarnContext(ctx, "oauth: reused "+kind+"; its grant is revoked", "client", req.GetClient().GetID(), "grant", req.GetID())
}

// VerifyToken implements auth.TokenVerifier: an access token issued here, checked by its
// HMAC, then looked up by its signature's hash.
func (s *Server) VerifyToken(ctx context.Context, token string) (auth.Token, error) {
	raw, ok := strings.CutPrefix(token, "ory_at_")
	if !ok || len(raw) > 512 {
		return auth.Token{}, fmt.Errorf("access token: %w", catalog.ErrNotFound)
	}
	if err := s.strategy.Enigma.Validate(ctx, raw); err != nil {
		return auth.Token{}, fmt.Errorf("access token: %w", catalog.ErrNotFound)
	}
	t, err := s.cfg.Store.OAuthTokenBySignature(ctx, kindAccess, signatureHash(s.strategy.AccessTokenSignature(ctx, raw)))
	if err != nil {
		return auth.Token{}, err
	}
	var sr storedRequest
	if err := json.Unmarshal([]byte(t.Data), &sr); err != nil {
		return auth.Token{}, fmt.Errorf("oauth: decode access token: %w", err)
	}
	k, err := s.cfg.Store.Key(ctx, t.AppKeyID)
	if err != nil {
		return auth.Token{}, err
	}
	scopes, _ := auth.ParseScopes("scope", strings.Join(sr.GrantedScope, " "))
	exp := t.ExpiresAt
	if sr.Session != nil {
		if e := sr.Session.GetExpiresAt(fosite.AccessToken); !e.IsZero() && e.Before(exp) {
			exp = e
		}
	}
	return auth.Token{Key: k, Scopes: scopes, Audience: audiencePath(sr.GrantedAudience), ClientID: t.ClientID,
		ExpiresAt: exp, Active: t.Active}, nil
}

// ResourceMetadata is the protected resource metadata of a path of this gateway (RFC
// 9728), in the go-sdk's type: the resource is the gateway's origin and that path.
func (s *Server) ResourceMetadata(path string) *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               s.cfg.Issuer + strings.TrimRight(path, "/"),
		AuthorizationServers:   []string{s.cfg.Issuer},
		ScopesSupported:        auth.ScopeNames(),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "sensorgate",
		ResourceDocumentation:  s.cfg.Issuer + "/docs",
	}
}

// ServerMetadata is the authorization server metadata (RFC 8414). Not the go-sdk's
// oauthex.AuthServerMeta, which its client reads: that type always writes jwks_uri, and
// this server has no signing keys to name there (RFC 8414 makes the member optional,
// and an empty string is not a URL).
func (s *Server) ServerMetadata() map[string]any {
	i := s.cfg.Issuer
	return map[string]any{
		"issuer":                                         i,
		"authorization_endpoint":                         i + PathAuthorize,
		"token_endpoint":                                 i + PathToken,
		"registration_endpoint":                          i + PathRegister,
		"revocation_endpoint":                            i + PathRevoke,
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"revocation_endpoint_auth_methods_supported":     []string{"none"},
		"scopes_supported":                               auth.ScopeNames(),
		"client_id_metadata_document_supported":          true,
		"authorization_response_iss_parameter_supported": true,
	}
}

// RunPrune deletes expired codes and tokens every interval until ctx ends. A rotated
// refresh token is kept until its own expiry, so that its reuse is still recognised.
func (s *Server) RunPrune(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n, err := s.cfg.Store.PruneOAuthTokens(ctx, s.cfg.Now()); err != nil {
			s.cfg.Logger.WarnContext(ctx, "oauth: prune expired tokens", "err", err)
		} else if n > 0 {
			s.cfg.Logger.InfoContext(ctx, "oauth: pruned expired tokens", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
