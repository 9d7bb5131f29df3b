package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/sensorgate/sensorgate/gateway/catalog"
)

// AuditEvent is one line of the audit log: who did what to which target, from which
// address.
type AuditEvent struct {
	ID      int64
	At      time.Time
	Actor   string
	Action  string
	Target  string
	Address string
}

// AddAudit appends an event (At defaults to now).
func (s *Store) AddAudit(ctx context.Context, e AuditEvent) error {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	err := s.db.WithContext(ctx).Exec("INSERT INTO audit_events (at, actor, action, target, address) VALUES (?, ?, ?, ?, ?)",
		e.At.UTC().Truncate(time.Microsecond), e.Actor, e.Action, e.Target, e.Address).Error
	if err != nil {
		return fmt.Errorf("store: audit %s: %w", e.Action, err)
	}
	return nil
}

// AuditEvents returns up to limit events older than the cursor (an event id as text; ""
// starts at the newest), newest first, and the cursor of the next page ("" at the end).
func (s *Store) AuditEvents(ctx context.Context, cursor string, limit int) ([]AuditEvent, string, error) {
	before := int64(1<<63 - 1)
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n <= 0 {
			return nil, "", fmt.Errorf("cursor %q is not one this API gave: %w", cursor, catalog.ErrNotFound)
		}
		before = n
	}
	q := s.db.WithContext(ctx).Raw("SELECT id, at, actor, action, target, address FROM audit_events WHERE id < ? ORDER BY id DESC LIMIT ?",
		before, limit+1)
	out, err := queryRows(q, func(r rowScanner) (AuditEvent, error) {
		var e AuditEvent
		err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.Target, &e.Address)
		e.At = e.At.UTC()
		return e, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("store: audit events: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = strconv.FormatInt(out[limit-1].ID, 10)
	}
	return out, next, nil
}

// HourCount is the requests of one key in one hour.
type HourCount struct {
	Hour     time.Time
	Requests int64
}

// UsageRetention is how long hourly usage is kept.
const UsageRetention = 90 * 24 * time.Hour

// AddUsage adds counts to the keys' totals of an hour: the sink of a gateway without Redis,
// whose one process is the only counter.
func (s *Store) AddUsage(ctx context.Context, hour time.Time, counts map[uuid.UUID]int64) error {
	return s.upsertUsage(ctx, hour, counts, "key_usage.requests + excluded.requests")
}

// SetUsage sets the keys' totals of an hour to the counts read from the shared counters,
// never lowering a total: copies from several replicas may arrive out of order.
func (s *Store) SetUsage(ctx context.Context, hour time.Time, counts map[uuid.UUID]int64) error {
	greatest := "greatest"
	if !s.d.postgres {
		greatest = "max"
	}
	return s.upsertUsage(ctx, hour, counts, greatest+"(key_usage.requests, excluded.requests)")
}

func (s *Store) upsertUsage(ctx context.Context, hour time.Time, counts map[uuid.UUID]int64, update string) error {
	if len(counts) == 0 {
		return nil
	}
	hour = hour.UTC().Truncate(time.Hour)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for id, n := range counts {
			// A key deleted since it was counted has no row to count against: skipped.
			err := tx.Exec("INSERT INTO key_usage (key_id, hour, requests) SELECT id, ?, ? FROM api_keys WHERE id = ? "+
				"ON CONFLICT (key_id, hour) DO UPDATE SET requests = "+update, hour, n, id).Error
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: usage of %d keys: %w", len(counts), err)
	}
	return nil
}

// Usage returns a key's hourly counts from since on, oldest first (hours without requests
// are absent).
func (s *Store) Usage(ctx context.Context, keyID uuid.UUID, since time.Time) ([]HourCount, error) {
	q := s.db.WithContext(ctx).Raw("SELECT hour, requests FROM key_usage WHERE key_id = ? AND hour >= ? ORDER BY hour", keyID, since.UTC())
	out, err := queryRows(q, func(r rowScanner) (HourCount, error) {
		var h HourCount
		err := r.Scan(&h.Hour, &h.Requests)
		h.Hour = h.Hour.UTC()
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: usage of key %s: %w", keyID, err)
	}
	return out, nil
}

// PruneUsage deletes the hours older than before (UsageRetention ago).
func (s *Store) PruneUsage(ctx context.Context, before time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Exec("DELETE FROM key_usage WHERE hour < ?", before.UTC())
	if res.Error != nil {
		return 0, fmt.Errorf("store: prune usage: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// Credential is a stored passkey: Data is the go-webauthn credential as JSON.
type Credential struct {
	ID        []byte
	AccountID uuid.UUID
	Data      string
}

// AddCredential stores a passkey of an account; an id already stored is
// catalog.ErrConflict.
func (s *Store) AddCredential(ctx context.Context, c Credential) error {
	err := s.db.WithContext(ctx).Exec("INSERT INTO account_credentials (account_id, id, credential, created_at) VALUES (?, ?, ?, ?)",
		c.AccountID, c.ID, c.Data, time.Now().UTC().Truncate(time.Microsecond)).Error
	if err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("passkey: %w", catalog.ErrConflict)
		}
		return fmt.Errorf("store: add passkey: %w", err)
	}
	return nil
}

// Credentials lists an account's passkeys.
func (s *Store) Credentials(ctx context.Context, account uuid.UUID) ([]Credential, error) {
	q := s.db.WithContext(ctx).Raw("SELECT id, account_id, credential FROM account_credentials WHERE account_id = ? ORDER BY created_at", account)
	out, err := queryRows(q, func(r rowScanner) (Credential, error) {
		var c Credential
		err := r.Scan(&c.ID, &c.AccountID, &c.Data)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: passkeys of %s: %w", account, err)
	}
	return out, nil
}

// UpdateCredential stores a passkey's new state (its signature counter) after a sign-in.
func (s *Store) UpdateCredential(ctx context.Context, id []byte, data string, at time.Time) error {
	err := s.db.WithContext(ctx).Exec("UPDATE account_credentials SET credential = ?, last_used_at = ? WHERE id = ?",
		data, at.UTC().Truncate(time.Microsecond), id).Error
	if err != nil {
		return fmt.Errorf("store: update passkey: %w", err)
	}
	return nil
}

// One-time token kinds.
const (
	TokenEnrol  = "enrol"
	TokenSignIn = "signin"
)

// A []byte right after "(" would be expanded into a list by GORM: the insert lists below
// start with a column that is not bytes.

// CreateAccountToken stores the hash of a one-time token of an account.
func (s *Store) CreateAccountToken(ctx context.Context, hash []byte, kind string, account uuid.UUID, expires time.Time) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	err := s.db.WithContext(ctx).Exec("INSERT INTO account_tokens (kind, hash, account_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
		kind, hash, account, now, expires.UTC().Truncate(time.Microsecond)).Error
	if err != nil {
		return fmt.Errorf("store: create %s token: %w", kind, err)
	}
	return nil
}

// PeekAccountToken returns the account of an unused, unexpired token of kind without using
// it (the enrolment page asks before the passkey is made).
func (s *Store) PeekAccountToken(ctx context.Context, hash []byte, kind string, now time.Time) (uuid.UUID, error) {
	var id uuid.UUID
	err := s.db.WithContext(ctx).Raw("SELECT account_id FROM account_tokens WHERE hash = ? AND kind = ? AND used_at IS NULL AND expires_at > ?",
		hash, kind, now.UTC()).Row().Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return id, fmt.Errorf("%s token: %w", kind, catalog.ErrNotFound)
	}
	if err != nil {
		return id, fmt.Errorf("store: %s token: %w", kind, err)
	}
	return id, nil
}

// UseAccountToken marks an unused, unexpired token of kind used and returns its account;
// of two concurrent uses only one succeeds, the other gets catalog.ErrNotFound.
func (s *Store) UseAccountToken(ctx context.Context, hash []byte, kind string, now time.Time) (uuid.UUID, error) {
	id, err := s.PeekAccountToken(ctx, hash, kind, now)
	if err != nil {
		return id, err
	}
	res := s.db.WithContext(ctx).Exec("UPDATE account_tokens SET used_at = ? WHERE hash = ? AND kind = ? AND used_at IS NULL AND expires_at > ?",
		now.UTC().Truncate(time.Microsecond), hash, kind, now.UTC())
	if res.Error != nil {
		return uuid.Nil, fmt.Errorf("store: use %s token: %w", kind, res.Error)
	}
	if res.RowsAffected != 1 {
		return uuid.Nil, fmt.Errorf("%s token: %w", kind, catalog.ErrNotFound)
	}
	return id, nil
}

// AccountByIdentity returns the account linked to an OpenID Connect (issuer, subject).
func (s *Store) AccountByIdentity(ctx context.Context, issuer, subject string) (Account, error) {
	var id uuid.UUID
	err := s.db.WithContext(ctx).Raw("SELECT account_id FROM account_identities WHERE issuer = ? AND subject = ?", issuer, subject).Row().Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return Account{}, fmt.Errorf("identity: %w", catalog.ErrNotFound)
	}
	if err != nil {
		return Account{}, fmt.Errorf("store: identity: %w", err)
	}
	return s.Account(ctx, id)
}

// LinkIdentity links an OpenID Connect (issuer, subject) to an account.
func (s *Store) LinkIdentity(ctx context.Context, issuer, subject string, account uuid.UUID) error {
	err := s.db.WithContext(ctx).Exec("INSERT INTO account_identities (issuer, subject, account_id, created_at) VALUES (?, ?, ?, ?)",
		issuer, subject, account, time.Now().UTC().Truncate(time.Microsecond)).Error
	if err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("identity: %w", catalog.ErrConflict)
		}
		return fmt.Errorf("store: link identity: %w", err)
	}
	return nil
}
