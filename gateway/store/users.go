package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sensorgate/sensorgate/gateway/catalog"
)

// CreateUser stores a user. A zero ID gets a random one; an email (compared
// case-insensitively) or id already taken is catalog.ErrConflict.
func (s *Store) CreateUser(ctx context.Context, u catalog.User) (catalog.User, error) {
	if strings.TrimSpace(u.Name) == "" {
		return u, errors.New("store: create user: name is required")
	}
	if u.ID == uuid.Nil {
		u.ID = uuid.New()
	}
	if u.CreatedAt.IsZero() {
		u.CreatedAt = time.Now().UTC().Truncate(time.Microsecond)
	}
	err := s.db.WithContext(ctx).Exec("INSERT INTO users (id, name, email, created_at) VALUES (?, ?, ?, ?)",
		u.ID, u.Name, u.Email, u.CreatedAt.UTC()).Error
	if err != nil {
		if isUniqueViolation(err) {
			return u, fmt.Errorf("user %q: %w", u.Name, catalog.ErrConflict)
		}
		return u, fmt.Errorf("store: create user %q: %w", u.Name, err)
	}
	return u, nil
}

// User returns one user.
func (s *Store) User(ctx context.Context, id uuid.UUID) (catalog.User, error) {
	var u catalog.User
	err := s.db.WithContext(ctx).Raw("SELECT id, name, email, created_at FROM users WHERE id = ?", id).Row().
		Scan(&u.ID, &u.Name, &u.Email, &u.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return u, fmt.Errorf("user %s: %w", id, catalog.ErrNotFound)
	}
	if err != nil {
		return u, fmt.Errorf("store: user %s: %w", id, err)
	}
	u.CreatedAt = u.CreatedAt.UTC()
	return u, nil
}

const keyColumns = "id, name, prefix, hash, owner_id, environment, plan, created_at, revoked_at, expires_at, last_used_at, scopes, client_id"

func scanKey(r rowScanner) (catalog.APIKey, error) {
	var (
		k                      catalog.APIKey
		revoked, expires, used sql.NullTime
		client                 sql.NullString
	)
	if err := r.Scan(&k.ID, &k.Name, &k.Prefix, &k.Hash, &k.OwnerID, &k.Environment, &k.Plan, &k.CreatedAt, &revoked, &expires, &used, &k.Scopes, &client); err != nil {
		return k, fmt.Errorf("store: scan api key: %w", err)
	}
	k.CreatedAt = k.CreatedAt.UTC()
	k.RevokedAt = nullTime(revoked)
	k.ExpiresAt = nullTime(expires)
	k.LastUsedAt = nullTime(used)
	k.ClientID = client.String
	return k, nil
}

// CreateKey stores a key's hash and metadata (never the secret). A zero ID gets a random
// one; a hash already stored is catalog.ErrConflict.
func (s *Store) CreateKey(ctx context.Context, k catalog.APIKey) (catalog.APIKey, error) {
	if len(k.Hash) == 0 {
		return k, errors.New("store: create key: hash is required")
	}
	if k.Prefix == "" {
		return k, errors.New("store: create key: prefix is required")
	}
	if k.Environment != catalog.EnvDevelopment && k.Environment != catalog.EnvProduction {
		return k, fmt.Errorf("store: create key: environment %q is neither %s nor %s", k.Environment, catalog.EnvDevelopment, catalog.EnvProduction)
	}
	if k.ID == uuid.Nil {
		k.ID = uuid.New()
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = time.Now().UTC().Truncate(time.Microsecond)
	}
	if _, err := s.User(ctx, k.OwnerID); err != nil {
		return k, fmt.Errorf("store: create key %q: owner: %w", k.Prefix, err)
	}
	err := s.db.WithContext(ctx).Exec("INSERT INTO api_keys ("+keyColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		k.ID, k.Name, k.Prefix, k.Hash, k.OwnerID, k.Environment, k.Plan, k.CreatedAt.UTC(), utcPtr(k.RevokedAt), utcPtr(k.ExpiresAt), utcPtr(k.LastUsedAt),
		k.Scopes, sql.NullString{String: k.ClientID, Valid: k.ClientID != ""}).Error
	if err != nil {
		if isUniqueViolation(err) {
			return k, fmt.Errorf("api key %q: %w", k.Prefix, catalog.ErrConflict)
		}
		return k, fmt.Errorf("store: create key %q: %w", k.Prefix, err)
	}
	return k, nil
}

// KeyByHash returns the key with the given SHA-256 hash, revoked or not: the caller checks
// RevokedAt (and the environment) before letting a request through.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (catalog.APIKey, error) {
	k, err := scanKey(s.db.WithContext(ctx).Raw("SELECT "+keyColumns+" FROM api_keys WHERE hash = ?", hash).Row())
	if errors.Is(err, sql.ErrNoRows) {
		return k, fmt.Errorf("api key: %w", catalog.ErrNotFound)
	}
	return k, err
}

// Keys lists every key, newest first.
func (s *Store) Keys(ctx context.Context) ([]catalog.APIKey, error) {
	out, err := queryRows(s.db.WithContext(ctx).Raw("SELECT "+keyColumns+" FROM api_keys ORDER BY created_at DESC, id"), scanKey)
	if err != nil {
		return nil, fmt.Errorf("store: list keys: %w", err)
	}
	return out, nil
}

// RevokeKey revokes the key whose id or prefix is given. A prefix that names several keys
// is catalog.ErrConflict; revoking a revoked key keeps its first revocation time.
func (s *Store) RevokeKey(ctx context.Context, idOrPrefix string, at time.Time) (catalog.APIKey, error) {
	if err := checkText("id", idOrPrefix); err != nil {
		return catalog.APIKey{}, err
	}
	var k catalog.APIKey
	if idOrPrefix == "" {
		return k, errors.New("store: revoke key: empty id or prefix")
	}
	db := s.db.WithContext(ctx)
	query, arg := "SELECT "+keyColumns+" FROM api_keys WHERE prefix = ?", any(idOrPrefix)
	if id, err := uuid.Parse(idOrPrefix); err == nil {
		query, arg = "SELECT "+keyColumns+" FROM api_keys WHERE id = ?", id
	}
	matches, err := queryRows(db.Raw(query, arg), scanKey)
	if err != nil {
		return k, fmt.Errorf("store: revoke key %q: %w", idOrPrefix, err)
	}
	switch len(matches) {
	case 0:
		return k, fmt.Errorf("api key %q: %w", idOrPrefix, catalog.ErrNotFound)
	case 1:
	default:
		return k, fmt.Errorf("api key prefix %q names %d keys, give the id: %w", idOrPrefix, len(matches), catalog.ErrConflict)
	}
	k = matches[0]
	if k.RevokedAt != nil {
		return k, nil
	}
	at = at.UTC().Truncate(time.Microsecond)
	if err := db.Exec("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", at, k.ID).Error; err != nil {
		return k, fmt.Errorf("store: revoke key %q: %w", idOrPrefix, err)
	}
	k.RevokedAt = &at
	return k, nil
}

// isUniqueViolation recognises a unique-constraint error of either database.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505"
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed") || strings.Contains(err.Error(), "constraint failed: UNIQUE")
}
