package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/sensorgate/sensorgate/gateway/catalog"
)

// OAuth's persistent state (package oauth, docs/security.md "OAuth"): registered clients,
// the codes and tokens of each grant keyed by the SHA-256 of their signature, and the HMAC
// secret the replicas share. In the catalog database, so every replica sees every token.

// OAuthClient is a registered client: by RFC 7591 registration (a random id) or a client
// id metadata document (the document's https URL is the id).
type OAuthClient struct {
	ID               string
	Name             string
	RedirectURIs     []string
	MetadataDocument bool
	CreatedAt        time.Time
}

// OAuthToken is one stored code or token of a grant. Signature is the SHA-256 of the
// token's HMAC signature: the database never holds a usable token, nor half of one.
type OAuthToken struct {
	Signature []byte
	Kind      string // code, access, refresh or pkce
	RequestID string // shared by every token of one grant's family (fosite's request id)
	ClientID  string
	AppKeyID  uuid.UUID // the key that stands for the client's access to the account
	Data      string    // the serialized request (package oauth)
	Active    bool
	ExpiresAt time.Time
	CreatedAt time.Time
}

// OAuthSecret returns the HMAC secret every replica signs tokens with: fresh is stored when
// there is none yet, and the first stored one wins (replicas that start together agree).
func (s *Store) OAuthSecret(ctx context.Context, fresh []byte) ([]byte, error) {
	db := s.db.WithContext(ctx)
	if err := db.Exec("INSERT INTO oauth_secret (id, secret) VALUES (1, ?) ON CONFLICT (id) DO NOTHING", fresh).Error; err != nil {
		return nil, fmt.Errorf("store: oauth secret: %w", err)
	}
	var secret []byte
	if err := db.Raw("SELECT secret FROM oauth_secret WHERE id = 1").Row().Scan(&secret); err != nil {
		return nil, fmt.Errorf("store: oauth secret: %w", err)
	}
	return secret, nil
}

// CreateOAuthClient stores a client; an id already stored is catalog.ErrConflict.
func (s *Store) CreateOAuthClient(ctx context.Context, c OAuthClient) error {
	if err := checkText("client_name", c.Name); err != nil {
		return err
	}
	err := s.db.WithContext(ctx).Exec("INSERT INTO oauth_clients (id, name, redirect_uris, metadata_document, created_at) VALUES (?, ?, ?, ?, ?)",
		c.ID, c.Name, strings.Join(c.RedirectURIs, "\n"), c.MetadataDocument, c.CreatedAt.UTC()).Error
	if err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("oauth client %q: %w", c.ID, catalog.ErrConflict)
		}
		return fmt.Errorf("store: create oauth client: %w", err)
	}
	return nil
}

// UpdateOAuthClient replaces the name and redirect URIs of a client (a metadata document
// fetched again).
func (s *Store) UpdateOAuthClient(ctx context.Context, c OAuthClient) error {
	if err := checkText("client_name", c.Name); err != nil {
		return err
	}
	err := s.db.WithContext(ctx).Exec("UPDATE oauth_clients SET name = ?, redirect_uris = ? WHERE id = ?",
		c.Name, strings.Join(c.RedirectURIs, "\n"), c.ID).Error
	if err != nil {
		return fmt.Errorf("store: update oauth client: %w", err)
	}
	return nil
}

// OAuthClientByID returns a registered client, catalog.ErrNotFound when there is none.
func (s *Store) OAuthClientByID(ctx context.Context, id string) (OAuthClient, error) {
	var (
		c    OAuthClient
		uris string
	)
	err := s.db.WithContext(ctx).Raw("SELECT id, name, redirect_uris, metadata_document, created_at FROM oauth_clients WHERE id = ?", id).
		Row().Scan(&c.ID, &c.Name, &uris, &c.MetadataDocument, &c.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("oauth client: %w", catalog.ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("store: oauth client: %w", err)
	}
	c.RedirectURIs = strings.Split(uris, "\n")
	return c, nil
}

// PutOAuthToken stores a code or token.
func (s *Store) PutOAuthToken(ctx context.Context, t OAuthToken) error {
	app := sql.NullString{String: t.AppKeyID.String(), Valid: t.AppKeyID != uuid.Nil}
	// (The byte slice is not first inside the parentheses: gorm would expand it into one
	// value per byte there.)
	err := s.db.WithContext(ctx).Exec("INSERT INTO oauth_tokens (kind, signature, request_id, client_id, app_key_id, data, active, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		t.Kind, t.Signature, t.RequestID, t.ClientID, app, t.Data, true, t.ExpiresAt.UTC(), t.CreatedAt.UTC()).Error
	if err != nil {
		return fmt.Errorf("store: put oauth %s: %w", t.Kind, err)
	}
	return nil
}

// OAuthTokenBySignature returns a stored code or token, active or not;
// catalog.ErrNotFound when there is none.
func (s *Store) OAuthTokenBySignature(ctx context.Context, kind string, sig []byte) (OAuthToken, error) {
	var (
		t   OAuthToken
		app sql.NullString
	)
	err := s.db.WithContext(ctx).Raw("SELECT signature, kind, request_id, client_id, app_key_id, data, active, expires_at, created_at FROM oauth_tokens WHERE signature = ? AND kind = ?", sig, kind).
		Row().Scan(&t.Signature, &t.Kind, &t.RequestID, &t.ClientID, &app, &t.Data, &t.Active, &t.ExpiresAt, &t.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("oauth %s: %w", kind, catalog.ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("store: oauth %s: %w", kind, err)
	}
	if app.Valid {
		t.AppKeyID, _ = uuid.Parse(app.String)
	}
	return t, nil
}

// DeleteOAuthToken removes a code or token.
func (s *Store) DeleteOAuthToken(ctx context.Context, kind string, sig []byte) error {
	if err := s.db.WithContext(ctx).Exec("DELETE FROM oauth_tokens WHERE signature = ? AND kind = ?", sig, kind).Error; err != nil {
		return fmt.Errorf("store: delete oauth %s: %w", kind, err)
	}
	return nil
}

// DeactivateOAuthToken marks a code used or a refresh token rotated: it stays, so that a
// second use is recognised as a reuse (and revokes its grant) rather than as unknown.
func (s *Store) DeactivateOAuthToken(ctx context.Context, kind string, sig []byte) error {
	if err := s.db.WithContext(ctx).Exec("UPDATE oauth_tokens SET active = ? WHERE signature = ? AND kind = ?", false, sig, kind).Error; err != nil {
		return fmt.Errorf("store: deactivate oauth %s: %w", kind, err)
	}
	return nil
}

// OAuthTokenSucceeded reports whether one grant's family holds a token of kind made
// after at: a refresh token rotated, not revoked with its grant.
func (s *Store) OAuthTokenSucceeded(ctx context.Context, kind, requestID string, at time.Time) (bool, error) {
	var n int64
	err := s.db.WithContext(ctx).Raw("SELECT COUNT(*) FROM oauth_tokens WHERE request_id = ? AND kind = ? AND created_at > ?", requestID, kind, at.UTC()).Row().Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: oauth %s of %s: %w", kind, requestID, err)
	}
	return n > 0, nil
}

// DeactivateOAuthRequest deactivates every token of kind of one grant's family.
func (s *Store) DeactivateOAuthRequest(ctx context.Context, kind, requestID string) (int64, error) {
	res := s.db.WithContext(ctx).Exec("UPDATE oauth_tokens SET active = ? WHERE request_id = ? AND kind = ? AND active = ?", false, requestID, kind, true)
	if res.Error != nil {
		return 0, fmt.Errorf("store: revoke oauth %s of %s: %w", kind, requestID, res.Error)
	}
	return res.RowsAffected, nil
}

// PruneOAuthTokens deletes codes and tokens that expired before before.
func (s *Store) PruneOAuthTokens(ctx context.Context, before time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Exec("DELETE FROM oauth_tokens WHERE expires_at < ?", before.UTC())
	if res.Error != nil {
		return 0, fmt.Errorf("store: prune oauth tokens: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// AppKey returns the unrevoked key of owner's access by client, catalog.ErrNotFound when
// there is none.
func (s *Store) AppKey(ctx context.Context, owner uuid.UUID, clientID string) (catalog.APIKey, error) {
	k, err := scanKey(s.db.WithContext(ctx).Raw("SELECT "+keyColumns+" FROM api_keys WHERE owner_id = ? AND client_id = ? AND revoked_at IS NULL ORDER BY created_at DESC LIMIT 1", owner, clientID).Row())
	if errors.Is(err, sql.ErrNoRows) {
		return k, fmt.Errorf("app key: %w", catalog.ErrNotFound)
	}
	return k, err
}

// App is a client connected to an account: its key and the client's name.
type App struct {
	Key        catalog.APIKey
	ClientName string
}

// Apps lists the clients connected to owner (their unrevoked keys), newest first.
func (s *Store) Apps(ctx context.Context, owner uuid.UUID) ([]App, error) {
	cols := "k." + strings.ReplaceAll(keyColumns, ", ", ", k.")
	return queryRows(s.db.WithContext(ctx).Raw("SELECT "+cols+", COALESCE(c.name, '') FROM api_keys k LEFT JOIN oauth_clients c ON c.id = k.client_id WHERE k.owner_id = ? AND k.client_id IS NOT NULL AND k.revoked_at IS NULL ORDER BY k.created_at DESC, k.id", owner),
		func(r rowScanner) (App, error) {
			var a App
			var name string
			k, err := scanKey(&appRow{r: r, name: &name})
			a.Key, a.ClientName = k, name
			return a, err
		})
}

// appRow scans a key row followed by the client's name.
type appRow struct {
	r    rowScanner
	name *string
}

func (a *appRow) Scan(dest ...any) error { return a.r.Scan(append(dest, a.name)...) }

// RevokeApp revokes owner's access by client: its keys and every token of them, at once.
// It returns the revoked keys (none when the client was not connected).
func (s *Store) RevokeApp(ctx context.Context, owner uuid.UUID, clientID string, at time.Time) ([]catalog.APIKey, error) {
	at = at.UTC().Truncate(time.Microsecond)
	var keys []catalog.APIKey
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		keys, err = queryRows(tx.Raw("SELECT "+keyColumns+" FROM api_keys WHERE owner_id = ? AND client_id = ? AND revoked_at IS NULL", owner, clientID), scanKey)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := tx.Exec("UPDATE api_keys SET revoked_at = ? WHERE id = ?", at, k.ID).Error; err != nil {
				return err
			}
			if err := tx.Exec("UPDATE oauth_tokens SET active = ? WHERE app_key_id = ?", false, k.ID).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: revoke app %q: %w", clientID, err)
	}
	return keys, nil
}

// SetKeyScopes sets the scopes of a key (an app's key: what its person granted).
func (s *Store) SetKeyScopes(ctx context.Context, id uuid.UUID, scopes string) error {
	if err := s.db.WithContext(ctx).Exec("UPDATE api_keys SET scopes = ? WHERE id = ?", scopes, id).Error; err != nil {
		return fmt.Errorf("store: set scopes of key %s: %w", id, err)
	}
	return nil
}
