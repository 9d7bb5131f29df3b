package oauth

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ory/fosite"

	"github.com/sensorgate/sensorgate/gateway/account"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
)

// Limits of client registration.
const (
	maxRedirectURIs   = 10
	maxURILen         = 2000
	maxClientName     = 200
	maxRegisterBody   = 16 << 10
	maxMetadataBody   = 16 << 10
	metadataFetchTime = 5 * time.Second
	// metadataRefresh is how long a fetched client id metadata document is trusted before it
	// is fetched again.
	metadataRefresh = time.Hour
)

type redirectKey struct{}

// withRedirect carries the redirect_uri asked for, so that a client registered with an
// http://localhost redirect matches it on any port (fosite frees the port of 127.0.0.1
// and [::1] only).
func withRedirect(ctx context.Context, uri string) context.Context {
	return context.WithValue(ctx, redirectKey{}, uri)
}

// client returns a registered client, or fetches the metadata document of an https client
// id (and keeps it for metadataRefresh).
func (s *Server) client(ctx context.Context, id string) (fosite.Client, error) {
	c, err := s.cfg.Store.OAuthClientByID(ctx, id)
	switch {
	case err == nil && (!c.MetadataDocument || s.cfg.Now().Sub(c.CreatedAt) < metadataRefresh):
	case isMetadataURL(id) && (err == nil || errors.Is(err, catalog.ErrNotFound)):
		fetched, ferr := s.fetchMetadata(ctx, id)
		if ferr != nil {
			s.cfg.Logger.InfoContext(ctx, "oauth: client id metadata document refused", "client_id", id, "err", ferr)
			return nil, fosite.ErrInvalidClient.WithHintf("The client id metadata document could not be used: %s", ferr)
		}
		if err == nil {
			_ = s.cfg.Store.UpdateOAuthClient(ctx, fetched)
		} else if cerr := s.cfg.Store.CreateOAuthClient(ctx, fetched); cerr != nil && !errors.Is(cerr, catalog.ErrConflict) {
			return nil, cerr
		}
		c = fetched
	case errors.Is(err, catalog.ErrNotFound):
		return nil, fosite.ErrNotFound.WithHint("Unknown client_id: register it first.")
	default:
		return nil, err
	}
	uris := append([]string(nil), c.RedirectURIs...)
	if asked, _ := ctx.Value(redirectKey{}).(string); asked != "" {
		for _, r := range c.RedirectURIs {
			if sameLocalhost(r, asked) {
				uris = append(uris, asked)
			}
		}
	}
	return &fosite.DefaultClient{
		ID: c.ID, RedirectURIs: uris, Public: true,
		GrantTypes:    []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"},
		Scopes:        auth.ScopeNames(),
		Audience:      []string{s.cfg.Issuer},
	}, nil
}

// sameLocalhost reports whether asked is registered but for its port: both http, host
// localhost, the same path and query.
func sameLocalhost(registered, asked string) bool {
	r, err1 := url.Parse(registered)
	a, err2 := url.Parse(asked)
	return err1 == nil && err2 == nil && r.Scheme == "http" && a.Scheme == "http" &&
		r.Hostname() == "localhost" && a.Hostname() == "localhost" && r.Path == a.Path && r.RawQuery == a.RawQuery && a.User == nil
}

// isMetadataURL: a client id that is an https URL with a path is a client id metadata
// document's address.
func isMetadataURL(id string) bool {
	u, err := url.Parse(id)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.Path != "" && u.Path != "/" && u.Fragment == "" && u.User == nil && len(id) <= maxURILen
}

// fetchMetadata gets and checks a client id metadata document: its client_id is its own
// address, its redirect URIs pass the registration rules.
func (s *Server) fetchMetadata(ctx context.Context, id string) (store.OAuthClient, error) {
	ctx, cancel := context.WithTimeout(ctx, metadataFetchTime)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return store.OAuthClient{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.fetch.Do(req)
	if err != nil {
		return store.OAuthClient{}, fmt.Errorf("fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return store.OAuthClient{}, fmt.Errorf("fetch: status %d", resp.StatusCode)
	}
	var m registration
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadataBody)).Decode(&m); err != nil {
		return store.OAuthClient{}, fmt.Errorf("decode: %w", err)
	}
	if m.ClientID != id {
		return store.OAuthClient{}, fmt.Errorf("its client_id %q is not its address", m.ClientID)
	}
	c, rerr := m.check()
	if rerr != nil {
		return store.OAuthClient{}, errors.New(rerr.Description)
	}
	c.ID, c.MetadataDocument, c.CreatedAt = id, true, s.cfg.Now()
	return c, nil
}

// registration is a client's metadata (RFC 7591 2), as registered or as a metadata
// document holds it.
type registration struct {
	ClientID                string   `json:"client_id,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
}

// registrationError is RFC 7591's error answer.
type registrationError struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

// check validates a registration: public clients of the code flow only, redirect URIs that
// are https, http on a loopback host, or an app's private-use scheme, without fragments.
func (m registration) check() (store.OAuthClient, *registrationError) {
	bad := func(code, f string, a ...any) (store.OAuthClient, *registrationError) {
		return store.OAuthClient{}, &registrationError{Code: code, Description: fmt.Sprintf(f, a...)}
	}
	if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > maxRedirectURIs {
		return bad("invalid_redirect_uri", "redirect_uris: want 1 to %d URIs", maxRedirectURIs)
	}
	for _, r := range m.RedirectURIs {
		u, err := url.Parse(r)
		if err != nil || len(r) > maxURILen || !u.IsAbs() || u.Fragment != "" || u.User != nil {
			return bad("invalid_redirect_uri", "redirect_uris: %q is not an absolute URI without fragment or credentials", clip(r))
		}
		switch strings.ToLower(u.Scheme) {
		case "https":
		case "http":
			if !fosite.IsLocalhost(u) {
				return bad("invalid_redirect_uri", "redirect_uris: %q: http is allowed on a loopback host only (use https)", clip(r))
			}
		case "javascript", "data", "file", "vbscript", "blob", "about":
			return bad("invalid_redirect_uri", "redirect_uris: %q: scheme %s is not a redirect", clip(r), u.Scheme)
		}
	}
	if a := m.TokenEndpointAuthMethod; a != "" && a != "none" {
		return bad("invalid_client_metadata", "token_endpoint_auth_method: only \"none\" (public clients with PKCE) is supported, not %q", clip(a))
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return bad("invalid_client_metadata", "grant_types: %q is not supported (authorization_code, refresh_token)", clip(g))
		}
	}
	for _, t := range m.ResponseTypes {
		if t != "code" {
			return bad("invalid_client_metadata", "response_types: %q is not supported (code)", clip(t))
		}
	}
	if m.Scope != "" {
		if _, err := auth.ParseScopes("scope", m.Scope); err != nil {
			return bad("invalid_client_metadata", "scope: %s", err)
		}
	}
	name := strings.TrimSpace(m.ClientName)
	if len(name) > maxClientName {
		return bad("invalid_client_metadata", "client_name: at most %d bytes", maxClientName)
	}
	if name == "" {
		name = "unnamed client"
	}
	return store.OAuthClient{Name: name, RedirectURIs: m.RedirectURIs}, nil
}

func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// register is RFC 7591 registration of a public client: 201 with the client's id and
// metadata, or 400 with the RFC's error naming the field.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	addr := account.ClientAddr(r)
	if throttled(w, r, s.cfg.RegisterThrottle, addr, "client registrations") {
		return
	}
	var m registration
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRegisterBody))
	if err := dec.Decode(&m); err != nil {
		writeJSON(w, http.StatusBadRequest, registrationError{"invalid_client_metadata", "the body is not a JSON object of client metadata: " + err.Error()})
		return
	}
	c, rerr := m.check()
	if rerr != nil {
		writeJSON(w, http.StatusBadRequest, rerr)
		return
	}
	c.ID, c.CreatedAt = "sgc_"+rand.Text(), s.cfg.Now()
	if err := s.cfg.Store.CreateOAuthClient(r.Context(), c); err != nil {
		s.cfg.Logger.ErrorContext(r.Context(), "oauth: register client", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, registrationError{"temporarily_unavailable", "the client could not be stored; try again"})
		return
	}
	s.cfg.RegisterThrottle.Miss(r.Context(), addr)
	s.cfg.Sessions.Audit(r, c.ID, "oauth.register", c.Name)
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id": c.ID, "client_id_issued_at": c.CreatedAt.Unix(), "client_name": c.Name,
		"redirect_uris": c.RedirectURIs, "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"scope": strings.Join(auth.ScopeNames(), " "),
	})
}

// throttled answers 429 rate_limited with Retry-After, in OAuth's error shape, when addr
// has used up what t allows it of what.
func throttled(w http.ResponseWriter, r *http.Request, t auth.Throttle, addr, what string) bool {
	d, blocked := t.Blocked(r.Context(), addr)
	if !blocked {
		return false
	}
	te := &auth.ThrottledError{RetryAfter: d}
	w.Header().Set("Retry-After", strconv.Itoa(te.Seconds()))
	writeJSON(w, http.StatusTooManyRequests, registrationError{"rate_limited", fmt.Sprintf("too many %s from this address; retry in %d s", what, te.Seconds())})
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
