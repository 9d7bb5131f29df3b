package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/ids"
)

// Development bootstrap identities: fixed, so every start finds the same rows.
const (
	DevOwnerName   = "development"
	DevKeyName     = "development key (DEV_API_KEY)"
	DevProjectSlug = "dev-sandbox"
)

// DevOwnerID is the user that owns the development key and project.
var DevOwnerID = OwnerID(DevOwnerName)

// BootstrapStore is what the development bootstrap needs of the catalog.
type BootstrapStore interface {
	CreateUser(ctx context.Context, u catalog.User) (catalog.User, error)
	CreateKey(ctx context.Context, k catalog.APIKey) (catalog.APIKey, error)
	CreateProject(ctx context.Context, p catalog.Project) (catalog.Project, error)
	Keys(ctx context.Context) ([]catalog.APIKey, error)
	RevokeKey(ctx context.Context, idOrPrefix string, at time.Time) (catalog.APIKey, error)
}

// BootstrapDevelopment makes the development environment usable on a fresh database, and
// is idempotent: the development user, the key whose secret is devKey, and a private
// project of that user (so that /projects/my shows something). A development key left
// over from an earlier DEV_API_KEY is revoked, so only the configured one works.
func BootstrapDevelopment(ctx context.Context, s BootstrapStore, devKey string) error {
	if devKey == "" {
		return errors.New("auth: bootstrap: empty development key")
	}
	_, err := s.CreateUser(ctx, catalog.User{ID: DevOwnerID, Name: DevOwnerName, Email: "dev@sensorgate.local"})
	if err != nil && !errors.Is(err, catalog.ErrConflict) {
		return fmt.Errorf("auth: bootstrap development user: %w", err)
	}
	hash := Hash(devKey)
	// The key id follows from its hash: the same DEV_API_KEY is the same row on every start.
	keyID := uuid.NewSHA1(ids.Namespace, append([]byte("devkey:"), hash...))
	_, err = s.CreateKey(ctx, catalog.APIKey{
		ID: keyID, Name: DevKeyName, Prefix: DisplayPrefix(devKey), Hash: hash,
		OwnerID: DevOwnerID, Environment: catalog.EnvDevelopment,
	})
	if err != nil && !errors.Is(err, catalog.ErrConflict) {
		return fmt.Errorf("auth: bootstrap development key: %w", err)
	}
	keys, err := s.Keys(ctx)
	if err != nil {
		return fmt.Errorf("auth: bootstrap: list keys: %w", err)
	}
	for _, k := range keys {
		if k.Name == DevKeyName && k.OwnerID == DevOwnerID && k.RevokedAt == nil && !bytes.Equal(k.Hash, hash) {
			if _, err := s.RevokeKey(ctx, k.ID.String(), time.Now()); err != nil {
				return fmt.Errorf("auth: bootstrap: revoke previous development key %s: %w", k.Prefix, err)
			}
		}
	}
	_, err = s.CreateProject(ctx, catalog.Project{
		ID:          uuid.NewSHA1(ids.Namespace, []byte("project:"+DevProjectSlug)),
		Slug:        DevProjectSlug,
		Name:        "Development sandbox",
		Description: "Private project of the development user, created at start in the development environment.",
		Domain:      "sandbox", TemporalPattern: "on_demand", FeedType: "sandbox",
		OwnerID: DevOwnerID, Visibility: catalog.VisibilityPrivate,
	})
	if err != nil && !errors.Is(err, catalog.ErrConflict) {
		return fmt.Errorf("auth: bootstrap development project: %w", err)
	}
	return nil
}
