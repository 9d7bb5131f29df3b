package store_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
)

func newTestKey(t *testing.T, s *store.Store, owner uuid.UUID, secret string) catalog.APIKey {
	t.Helper()
	h := sha256.Sum256([]byte(secret))
	k, err := s.CreateKey(context.Background(), catalog.APIKey{Name: secret, Prefix: secret[:4], Hash: h[:], OwnerID: owner, Environment: catalog.EnvProduction, Plan: "pro"})
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	return k
}

func TestAccountsKeysRotation(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, err := s.CreateAccount(ctx, store.Account{Name: "Ada", Email: "Ada@Example.org", Role: store.RoleAdmin})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateAccount(ctx, store.Account{Name: "Other", Email: "ada@example.org"}); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("same email in other case: want ErrConflict, got %v", err)
		}
		if _, err := s.CreateAccount(ctx, store.Account{Name: "X", Role: "root"}); err == nil {
			t.Fatal("role root accepted")
		}
		got, err := s.AccountByEmail(ctx, "ADA@example.org")
		if err != nil || got.ID != a.ID || got.Role != store.RoleAdmin {
			t.Fatalf("AccountByEmail = %+v, %v", got, err)
		}
		old := newTestKey(t, s, a.ID, "secret-old")
		grace := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
		h := sha256.Sum256([]byte("secret-new"))
		o, n, err := s.RotateKey(ctx, old.ID, catalog.APIKey{Name: "rotated", Prefix: "secr", Hash: h[:]}, grace)
		if err != nil {
			t.Fatalf("RotateKey: %v", err)
		}
		if o.ExpiresAt == nil || !o.ExpiresAt.Equal(grace) || n.OwnerID != a.ID || n.Plan != "pro" || n.Environment != catalog.EnvProduction {
			t.Fatalf("rotate: old %+v new %+v", o, n)
		}
		stored, err := s.KeyByHash(ctx, old.Hash)
		if err != nil || stored.ExpiresAt == nil || !stored.ExpiresAt.Equal(grace) {
			t.Fatalf("old key after rotation: %+v %v", stored, err)
		}
		if !stored.Usable(time.Now()) || stored.Usable(grace) {
			t.Fatal("old key must work until its expiry and not at it")
		}
		// A later, longer grace does not extend the first one.
		h2 := sha256.Sum256([]byte("secret-new2"))
		o2, _, err := s.RotateKey(ctx, old.ID, catalog.APIKey{Prefix: "secr", Hash: h2[:]}, grace.Add(time.Hour))
		if err != nil || !o2.ExpiresAt.Equal(grace) {
			t.Fatalf("second rotation: %+v %v", o2, err)
		}
		if _, err := s.RevokeKey(ctx, old.ID.String(), time.Now()); err != nil {
			t.Fatal(err)
		}
		h3 := sha256.Sum256([]byte("secret-new3"))
		if _, _, err := s.RotateKey(ctx, old.ID, catalog.APIKey{Prefix: "secr", Hash: h3[:]}, grace); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("rotating a revoked key: want ErrConflict, got %v", err)
		}
		keys, err := s.KeysOf(ctx, a.ID)
		if err != nil || len(keys) != 3 {
			t.Fatalf("KeysOf = %d keys, %v", len(keys), err)
		}
		at := time.Now().UTC().Truncate(time.Second)
		if err := s.TouchKeys(ctx, []uuid.UUID{n.ID}, at); err != nil {
			t.Fatal(err)
		}
		if k, _ := s.Key(ctx, n.ID); k.LastUsedAt == nil || !k.LastUsedAt.Equal(at) {
			t.Fatalf("last used = %v, want %v", k.LastUsedAt, at)
		}
		if k, err := s.SetKeyPlan(ctx, n.ID, "free"); err != nil || k.Plan != "free" {
			t.Fatalf("SetKeyPlan: %+v %v", k, err)
		}
	})
}

func TestUsageAuditTokens(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, err := s.CreateAccount(ctx, store.Account{Name: "Bo"})
		if err != nil {
			t.Fatal(err)
		}
		k := newTestKey(t, s, a.ID, "usage-key")
		hour := time.Now().UTC().Truncate(time.Hour)
		must(t, s.AddUsage(ctx, hour, map[uuid.UUID]int64{k.ID: 3, uuid.New(): 5}))
		must(t, s.AddUsage(ctx, hour, map[uuid.UUID]int64{k.ID: 4}))
		must(t, s.SetUsage(ctx, hour.Add(-time.Hour), map[uuid.UUID]int64{k.ID: 10}))
		must(t, s.SetUsage(ctx, hour.Add(-time.Hour), map[uuid.UUID]int64{k.ID: 8})) // an older copy never lowers it
		must(t, s.AddUsage(ctx, hour.Add(-100*24*time.Hour), map[uuid.UUID]int64{k.ID: 1}))
		if n, err := s.PruneUsage(ctx, time.Now().Add(-store.UsageRetention)); err != nil || n != 1 {
			t.Fatalf("PruneUsage = %d, %v", n, err)
		}
		u, err := s.Usage(ctx, k.ID, hour.Add(-30*24*time.Hour))
		if err != nil || len(u) != 2 || u[0].Requests != 10 || u[1].Requests != 7 || !u[1].Hour.Equal(hour) {
			t.Fatalf("Usage = %+v, %v", u, err)
		}

		for i := range 5 {
			must(t, s.AddAudit(ctx, store.AuditEvent{Actor: "a", Action: "key.create", Target: string(rune('a' + i)), Address: "192.0.2.1"}))
		}
		page, next, err := s.AuditEvents(ctx, "", 3)
		if err != nil || len(page) != 3 || next == "" || page[0].Target != "e" {
			t.Fatalf("audit page 1 = %+v %q %v", page, next, err)
		}
		page, next, err = s.AuditEvents(ctx, next, 3)
		if err != nil || len(page) != 2 || next != "" || page[1].Target != "a" {
			t.Fatalf("audit page 2 = %+v %q %v", page, next, err)
		}
		if _, _, err := s.AuditEvents(ctx, "x", 3); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("bad cursor: %v", err)
		}

		tok := sha256.Sum256([]byte("token"))
		must(t, s.CreateAccountToken(ctx, tok[:], store.TokenEnrol, a.ID, time.Now().Add(time.Hour)))
		if _, err := s.UseAccountToken(ctx, tok[:], store.TokenSignIn, time.Now()); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("token of another kind: %v", err)
		}
		if id, err := s.UseAccountToken(ctx, tok[:], store.TokenEnrol, time.Now()); err != nil || id != a.ID {
			t.Fatalf("UseAccountToken = %v, %v", id, err)
		}
		if _, err := s.UseAccountToken(ctx, tok[:], store.TokenEnrol, time.Now()); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("second use: %v", err)
		}
		exp := sha256.Sum256([]byte("expired"))
		must(t, s.CreateAccountToken(ctx, exp[:], store.TokenSignIn, a.ID, time.Now().Add(-time.Second)))
		if _, err := s.UseAccountToken(ctx, exp[:], store.TokenSignIn, time.Now()); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("expired token: %v", err)
		}

		must(t, s.AddCredential(ctx, store.Credential{ID: []byte{1, 2, 3}, AccountID: a.ID, Data: `{"a":1}`}))
		if err := s.AddCredential(ctx, store.Credential{ID: []byte{1, 2, 3}, AccountID: a.ID, Data: `{}`}); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("duplicate passkey: %v", err)
		}
		must(t, s.UpdateCredential(ctx, []byte{1, 2, 3}, `{"a":2}`, time.Now()))
		cs, err := s.Credentials(ctx, a.ID)
		if err != nil || len(cs) != 1 || cs[0].Data != `{"a":2}` {
			t.Fatalf("Credentials = %+v, %v", cs, err)
		}
		must(t, s.LinkIdentity(ctx, "https://idp", "sub1", a.ID))
		if got, err := s.AccountByIdentity(ctx, "https://idp", "sub1"); err != nil || got.ID != a.ID {
			t.Fatalf("AccountByIdentity = %+v, %v", got, err)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
