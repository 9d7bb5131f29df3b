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

// Account roles.
const (
	RoleUser  = "user"
	RoleAdmin = "admin"
)

// Account is a person who signs in to /account: a catalog user with a role. Keys and
// projects keep pointing at it by its id (owner_id).
type Account struct {
	ID         uuid.UUID
	Name       string
	Email      string
	Role       string
	CreatedAt  time.Time
	DisabledAt *time.Time
}

const accountColumns = "id, name, email, role, created_at, disabled_at"

func scanAccount(r rowScanner) (Account, error) {
	var (
		a        Account
		disabled sql.NullTime
	)
	if err := r.Scan(&a.ID, &a.Name, &a.Email, &a.Role, &a.CreatedAt, &disabled); err != nil {
		return a, err
	}
	a.CreatedAt = a.CreatedAt.UTC()
	a.DisabledAt = nullTime(disabled)
	return a, nil
}

// CreateAccount stores an account. A zero ID gets a random one; an email (compared
// case-insensitively) or id already taken is catalog.ErrConflict.
func (s *Store) CreateAccount(ctx context.Context, a Account) (Account, error) {
	if strings.TrimSpace(a.Name) == "" {
		return a, errors.New("store: create account: name is required")
	}
	if err := checkText("name", a.Name, "email", a.Email); err != nil {
		return a, err
	}
	if a.Role == "" {
		a.Role = RoleUser
	}
	if a.Role != RoleUser && a.Role != RoleAdmin {
		return a, fmt.Errorf("store: create account: role %q is neither %s nor %s", a.Role, RoleUser, RoleAdmin)
	}
	if a.ID == uuid.Nil {
		a.ID = uuid.New()
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = time.Now().UTC().Truncate(time.Microsecond)
	}
	err := s.db.WithContext(ctx).Exec("INSERT INTO users (id, name, email, role, created_at) VALUES (?, ?, ?, ?, ?)",
		a.ID, a.Name, strings.TrimSpace(a.Email), a.Role, a.CreatedAt.UTC()).Error
	if err != nil {
		if isUniqueViolation(err) {
			return a, fmt.Errorf("account %q <%s>: %w", a.Name, a.Email, catalog.ErrConflict)
		}
		return a, fmt.Errorf("store: create account %q: %w", a.Name, err)
	}
	return a, nil
}

// Account returns one account.
func (s *Store) Account(ctx context.Context, id uuid.UUID) (Account, error) {
	a, err := scanAccount(s.db.WithContext(ctx).Raw("SELECT "+accountColumns+" FROM users WHERE id = ?", id).Row())
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("account %s: %w", id, catalog.ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("store: account %s: %w", id, err)
	}
	return a, nil
}

// AccountByEmail returns the account of an email address, compared case-insensitively.
func (s *Store) AccountByEmail(ctx context.Context, email string) (Account, error) {
	a, err := scanAccount(s.db.WithContext(ctx).Raw("SELECT "+accountColumns+" FROM users WHERE email <> '' AND lower(email) = lower(?)", strings.TrimSpace(email)).Row())
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("account <%s>: %w", email, catalog.ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("store: account by email: %w", err)
	}
	return a, nil
}

// Accounts lists every account, oldest first.
func (s *Store) Accounts(ctx context.Context) ([]Account, error) {
	out, err := queryRows(s.db.WithContext(ctx).Raw("SELECT "+accountColumns+" FROM users ORDER BY created_at, id"), scanAccount)
	if err != nil {
		return nil, fmt.Errorf("store: list accounts: %w", err)
	}
	return out, nil
}

// UpdateAccount sets an account's role and whether it is disabled (disabled accounts
// cannot sign in; their keys are revoked by the caller).
func (s *Store) UpdateAccount(ctx context.Context, id uuid.UUID, role string, disabledAt *time.Time) (Account, error) {
	if role != RoleUser && role != RoleAdmin {
		return Account{}, fmt.Errorf("store: update account: role %q is neither %s nor %s", role, RoleUser, RoleAdmin)
	}
	res := s.db.WithContext(ctx).Exec("UPDATE users SET role = ?, disabled_at = ? WHERE id = ?", role, utcPtr(disabledAt), id)
	if res.Error != nil {
		return Account{}, fmt.Errorf("store: update account %s: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return Account{}, fmt.Errorf("account %s: %w", id, catalog.ErrNotFound)
	}
	return s.Account(ctx, id)
}

// Key returns one key by id.
func (s *Store) Key(ctx context.Context, id uuid.UUID) (catalog.APIKey, error) {
	k, err := scanKey(s.db.WithContext(ctx).Raw("SELECT "+keyColumns+" FROM api_keys WHERE id = ?", id).Row())
	if errors.Is(err, sql.ErrNoRows) {
		return k, fmt.Errorf("api key %s: %w", id, catalog.ErrNotFound)
	}
	return k, err
}

// KeysOf lists an account's keys, newest first.
func (s *Store) KeysOf(ctx context.Context, owner uuid.UUID) ([]catalog.APIKey, error) {
	out, err := queryRows(s.db.WithContext(ctx).Raw("SELECT "+keyColumns+" FROM api_keys WHERE owner_id = ? ORDER BY created_at DESC, id", owner), scanKey)
	if err != nil {
		return nil, fmt.Errorf("store: keys of %s: %w", owner, err)
	}
	return out, nil
}

// RotateKey stores next, a new key of old's owner, and makes old expire at oldExpires, in
// one transaction. A revoked or already expired old key is catalog.ErrConflict: there is
// nothing left to rotate. An old key that expires sooner keeps its earlier expiry.
func (s *Store) RotateKey(ctx context.Context, oldID uuid.UUID, next catalog.APIKey, oldExpires time.Time) (catalog.APIKey, catalog.APIKey, error) {
	oldExpires = oldExpires.UTC().Truncate(time.Microsecond)
	var old catalog.APIKey
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ts := &Store{db: tx, d: s.d, log: s.log}
		var err error
		if old, err = ts.Key(ctx, oldID); err != nil {
			return err
		}
		now := time.Now()
		if !old.Usable(now) {
			return fmt.Errorf("api key %s is revoked or expired: %w", old.Prefix, catalog.ErrConflict)
		}
		next.OwnerID, next.Environment = old.OwnerID, old.Environment
		if next.Scopes == "" {
			next.Scopes = old.Scopes // the new key may do what the old one could
		}
		if next.Plan == "" {
			next.Plan = old.Plan
		}
		if next, err = ts.CreateKey(ctx, next); err != nil {
			return err
		}
		if old.ExpiresAt == nil || oldExpires.Before(*old.ExpiresAt) {
			if err := tx.Exec("UPDATE api_keys SET expires_at = ? WHERE id = ?", oldExpires, old.ID).Error; err != nil {
				return fmt.Errorf("store: rotate key %s: %w", old.Prefix, err)
			}
			old.ExpiresAt = &oldExpires
		}
		return nil
	})
	return old, next, err
}

// SetKeyPlan changes a key's plan (an admin's decision).
func (s *Store) SetKeyPlan(ctx context.Context, id uuid.UUID, plan string) (catalog.APIKey, error) {
	if err := checkText("plan", plan); err != nil {
		return catalog.APIKey{}, err
	}
	res := s.db.WithContext(ctx).Exec("UPDATE api_keys SET plan = ? WHERE id = ?", plan, id)
	if res.Error != nil {
		return catalog.APIKey{}, fmt.Errorf("store: set plan of key %s: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return catalog.APIKey{}, fmt.Errorf("api key %s: %w", id, catalog.ErrNotFound)
	}
	return s.Key(ctx, id)
}

// TouchKeys sets last_used_at of the keys to at (never backwards).
func (s *Store) TouchKeys(ctx context.Context, ids []uuid.UUID, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	at = at.UTC().Truncate(time.Microsecond)
	err := s.db.WithContext(ctx).Exec("UPDATE api_keys SET last_used_at = ? WHERE id IN ? AND (last_used_at IS NULL OR last_used_at < ?)",
		at, ids, at).Error
	if err != nil {
		return fmt.Errorf("store: touch %d keys: %w", len(ids), err)
	}
	return nil
}
