package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/ory/fosite"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
)

// storage is fosite's storage over the catalog database (package store): every replica
// sees every code and token. A code or token is kept under the SHA-256 of its HMAC
// signature; used codes and rotated refresh tokens stay, inactive, so that a second use is
// recognised as a reuse and revokes its grant.
type storage struct {
	st      *store.Store
	clients func(ctx context.Context, id string) (fosite.Client, error)
	// reused is told of a reused code or refresh token (the audit log).
	reused func(ctx context.Context, kind string, req fosite.Requester)
}

// Kinds of stored codes and tokens.
const (
	kindCode    = "code"
	kindAccess  = "access"
	kindRefresh = "refresh"
	kindPKCE    = "pkce"
)

// appKeyExtra is the session's Extra entry holding the app key's id.
const appKeyExtra = "app_key"

// storedRequest is a fosite request as stored: what is needed to rebuild it.
type storedRequest struct {
	ID                string                 `json:"id"`
	RequestedAt       time.Time              `json:"requested_at"`
	ClientID          string                 `json:"client_id"`
	RequestedScope    []string               `json:"requested_scope"`
	GrantedScope      []string               `json:"granted_scope"`
	RequestedAudience []string               `json:"requested_audience"`
	GrantedAudience   []string               `json:"granted_audience"`
	Form              url.Values             `json:"form"`
	Session           *fosite.DefaultSession `json:"session"`
}

func signatureHash(sig string) []byte {
	h := sha256.Sum256([]byte(sig))
	return h[:]
}

func sessionOf(r fosite.Requester) *fosite.DefaultSession {
	if s, ok := r.GetSession().(*fosite.DefaultSession); ok {
		return s
	}
	return &fosite.DefaultSession{}
}

// appKeyOf is the app key id a request's session carries.
func appKeyOf(s *fosite.DefaultSession) uuid.UUID {
	if s == nil || s.Extra == nil {
		return uuid.Nil
	}
	v, _ := s.Extra[appKeyExtra].(string)
	id, _ := uuid.Parse(v)
	return id
}

func (s *storage) put(ctx context.Context, kind, sig string, r fosite.Requester, tt fosite.TokenType, fallback time.Duration) error {
	sess := sessionOf(r)
	data, err := json.Marshal(storedRequest{
		ID: r.GetID(), RequestedAt: r.GetRequestedAt(), ClientID: r.GetClient().GetID(),
		RequestedScope: r.GetRequestedScopes(), GrantedScope: r.GetGrantedScopes(),
		RequestedAudience: r.GetRequestedAudience(), GrantedAudience: r.GetGrantedAudience(),
		Form: r.GetRequestForm(), Session: sess,
	})
	if err != nil {
		return fmt.Errorf("oauth: encode %s: %w", kind, err)
	}
	exp := sess.GetExpiresAt(tt)
	if exp.IsZero() {
		exp = time.Now().Add(fallback)
	}
	return s.st.PutOAuthToken(ctx, store.OAuthToken{Signature: signatureHash(sig), Kind: kind, RequestID: r.GetID(),
		ClientID: r.GetClient().GetID(), AppKeyID: appKeyOf(sess), Data: string(data), ExpiresAt: exp, CreatedAt: time.Now()})
}

// get rebuilds a stored request and returns it with its stored row (active or not, its
// family, when it was made).
func (s *storage) get(ctx context.Context, kind, sig string, into fosite.Session) (fosite.Requester, store.OAuthToken, error) {
	t, err := s.st.OAuthTokenBySignature(ctx, kind, signatureHash(sig))
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, t, fosite.ErrNotFound
	}
	if err != nil {
		return nil, t, err
	}
	req, err := s.decode(ctx, t.Data, into)
	if err != nil {
		return nil, t, err
	}
	return req, t, nil
}

func (s *storage) decode(ctx context.Context, data string, into fosite.Session) (*fosite.Request, error) {
	var sr storedRequest
	if err := json.Unmarshal([]byte(data), &sr); err != nil {
		return nil, fmt.Errorf("oauth: decode stored request: %w", err)
	}
	c, err := s.clients(ctx, sr.ClientID)
	if err != nil {
		return nil, err
	}
	sess := sr.Session
	if ds, ok := into.(*fosite.DefaultSession); ok && sess != nil {
		*ds = *sess
		sess = ds
	}
	if sess == nil {
		sess = &fosite.DefaultSession{}
	}
	return &fosite.Request{
		ID: sr.ID, RequestedAt: sr.RequestedAt, Client: c,
		RequestedScope: sr.RequestedScope, GrantedScope: sr.GrantedScope,
		RequestedAudience: sr.RequestedAudience, GrantedAudience: sr.GrantedAudience,
		Form: sr.Form, Session: sess,
	}, nil
}

// GetClient implements fosite.ClientManager.
func (s *storage) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	return s.clients(ctx, id)
}

// ClientAssertionJWTValid implements fosite.ClientManager: no JWT client assertions here
// (public clients only), so no assertion was ever seen.
func (s *storage) ClientAssertionJWTValid(context.Context, string) error { return nil }

// SetClientAssertionJWT implements fosite.ClientManager (unused: public clients only).
func (s *storage) SetClientAssertionJWT(context.Context, string, time.Time) error { return nil }

// Authorization codes (single use: invalidated, kept, and a reuse revokes the grant).

func (s *storage) CreateAuthorizeCodeSession(ctx context.Context, sig string, r fosite.Requester) error {
	return s.put(ctx, kindCode, sig, r, fosite.AuthorizeCode, 10*time.Minute)
}

func (s *storage) GetAuthorizeCodeSession(ctx context.Context, sig string, sess fosite.Session) (fosite.Requester, error) {
	req, t, err := s.get(ctx, kindCode, sig, sess)
	if err != nil {
		return nil, err
	}
	if !t.Active {
		s.reused(ctx, kindCode, req)
		return req, fosite.ErrInvalidatedAuthorizeCode
	}
	return req, nil
}

func (s *storage) InvalidateAuthorizeCodeSession(ctx context.Context, sig string) error {
	return s.st.DeactivateOAuthToken(ctx, kindCode, signatureHash(sig))
}

// PKCE requests, kept beside their code.

func (s *storage) CreatePKCERequestSession(ctx context.Context, sig string, r fosite.Requester) error {
	return s.put(ctx, kindPKCE, sig, r, fosite.AuthorizeCode, 10*time.Minute)
}

func (s *storage) GetPKCERequestSession(ctx context.Context, sig string, sess fosite.Session) (fosite.Requester, error) {
	req, _, err := s.get(ctx, kindPKCE, sig, sess)
	return req, err
}

func (s *storage) DeletePKCERequestSession(ctx context.Context, sig string) error {
	return s.st.DeleteOAuthToken(ctx, kindPKCE, signatureHash(sig))
}

// Access tokens.

func (s *storage) CreateAccessTokenSession(ctx context.Context, sig string, r fosite.Requester) error {
	return s.put(ctx, kindAccess, sig, r, fosite.AccessToken, MaxAccessTokenTTL)
}

func (s *storage) GetAccessTokenSession(ctx context.Context, sig string, sess fosite.Session) (fosite.Requester, error) {
	req, t, err := s.get(ctx, kindAccess, sig, sess)
	if err != nil {
		return nil, err
	}
	if !t.Active {
		return req, fosite.ErrInactiveToken
	}
	return req, nil
}

func (s *storage) DeleteAccessTokenSession(ctx context.Context, sig string) error {
	return s.st.DeactivateOAuthToken(ctx, kindAccess, signatureHash(sig))
}

// Refresh tokens: rotated ones stay inactive, so a reuse is seen (and revokes the family);
// revoked ones are refused as unknown.

func (s *storage) CreateRefreshTokenSession(ctx context.Context, sig string, _ string, r fosite.Requester) error {
	return s.put(ctx, kindRefresh, sig, r, fosite.RefreshToken, DefaultRefreshTokenTTL)
}

func (s *storage) GetRefreshTokenSession(ctx context.Context, sig string, sess fosite.Session) (fosite.Requester, error) {
	req, t, err := s.get(ctx, kindRefresh, sig, sess)
	if err != nil {
		return nil, err
	}
	if t.Active {
		return req, nil
	}
	// Inactive: rotated (its family has a newer refresh token), a reuse that revokes the
	// family and is audited; or revoked with its whole grant (RFC 7009, the person's
	// "Connected apps"), which is no reuse, only a token no longer valid.
	rotated, err := s.st.OAuthTokenSucceeded(ctx, kindRefresh, t.RequestID, t.CreatedAt)
	if err != nil {
		return nil, err
	}
	if !rotated {
		return nil, fmt.Errorf("oauth: refresh token of a revoked grant: %w", fosite.ErrNotFound)
	}
	s.reused(ctx, kindRefresh, req)
	return req, fosite.ErrInactiveToken
}

func (s *storage) DeleteRefreshTokenSession(ctx context.Context, sig string) error {
	return s.st.DeactivateOAuthToken(ctx, kindRefresh, signatureHash(sig))
}

// RotateRefreshToken retires the refresh token just used and the access tokens issued
// with the family so far: the new pair replaces them.
func (s *storage) RotateRefreshToken(ctx context.Context, requestID string, sig string) error {
	if err := s.st.DeactivateOAuthToken(ctx, kindRefresh, signatureHash(sig)); err != nil {
		return err
	}
	_, err := s.st.DeactivateOAuthRequest(ctx, kindAccess, requestID)
	return err
}

// RevokeRefreshToken and RevokeAccessToken revoke a whole family (one grant's request id):
// RFC 7009 revocation, a reused code, a reused refresh token.
func (s *storage) RevokeRefreshToken(ctx context.Context, requestID string) error {
	_, err := s.st.DeactivateOAuthRequest(ctx, kindRefresh, requestID)
	return err
}

func (s *storage) RevokeAccessToken(ctx context.Context, requestID string) error {
	_, err := s.st.DeactivateOAuthRequest(ctx, kindAccess, requestID)
	return err
}

// audiencePath is the path part of a granted audience (a resource URL of this gateway):
// empty when it names the whole gateway.
func audiencePath(aud []string) string {
	for _, a := range aud {
		if u, err := url.Parse(a); err == nil {
			return strings.TrimRight(u.Path, "/")
		}
	}
	return ""
}
