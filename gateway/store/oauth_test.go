package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
)

// TestOAuthTokens stores a code and tokens of one grant and revokes the family, on both
// databases; the shared secret is the first one stored.
func TestOAuthTokens(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		first, err := s.OAuthSecret(ctx, []byte("0123456789abcdef0123456789abcdef"))
		if err != nil {
			t.Fatal(err)
		}
		again, err := s.OAuthSecret(ctx, []byte("another secret, not stored......"))
		if err != nil || string(again) != string(first) {
			t.Fatalf("second replica's secret %q %v, want the first %q", again, err, first)
		}
		if err := s.CreateOAuthClient(ctx, store.OAuthClient{ID: "c1", Name: "app", RedirectURIs: []string{"https://a.example/cb", "http://127.0.0.1/cb"}, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		c, err := s.OAuthClientByID(ctx, "c1")
		if err != nil || len(c.RedirectURIs) != 2 || c.Name != "app" {
			t.Fatalf("client %+v %v", c, err)
		}
		exp := time.Now().Add(time.Hour)
		for _, tk := range []store.OAuthToken{
			{Signature: []byte("sig-code"), Kind: "code", RequestID: "r1", ClientID: "c1", Data: "{}", ExpiresAt: exp, CreatedAt: time.Now()},
			{Signature: []byte("sig-code"), Kind: "pkce", RequestID: "r1", ClientID: "c1", Data: "{}", ExpiresAt: exp, CreatedAt: time.Now()},
			{Signature: []byte("sig-a1"), Kind: "access", RequestID: "r1", ClientID: "c1", Data: "{}", ExpiresAt: exp, CreatedAt: time.Now()},
			{Signature: []byte("sig-r1"), Kind: "refresh", RequestID: "r1", ClientID: "c1", Data: "{}", ExpiresAt: exp, CreatedAt: time.Now()},
		} {
			if err := s.PutOAuthToken(ctx, tk); err != nil {
				t.Fatalf("put %s: %v", tk.Kind, err)
			}
		}
		got, err := s.OAuthTokenBySignature(ctx, "access", []byte("sig-a1"))
		if err != nil || !got.Active || got.RequestID != "r1" || got.AppKeyID != uuid.Nil {
			t.Fatalf("access token %+v %v", got, err)
		}
		if n, err := s.DeactivateOAuthRequest(ctx, "access", "r1"); err != nil || n != 1 {
			t.Fatalf("revoke the family's access tokens: %d %v", n, err)
		}
		if got, _ := s.OAuthTokenBySignature(ctx, "access", []byte("sig-a1")); got.Active {
			t.Fatal("a revoked access token is still active")
		}
		if _, err := s.OAuthTokenBySignature(ctx, "access", []byte("nope")); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("unknown token: %v", err)
		}
	})
}
