// Package auth authenticates API callers by their x-api-key header: key generation and
// hashing, a lookup cache with a short freshness window, the Gin middleware that puts the
// caller's identity in the request context, and the idempotent development bootstrap.
//
// Keys are random secrets with a recognizable prefix (sg_dev_ or sg_live_). Only their
// SHA-256 is stored; a presented key is hashed, looked up by hash, and the stored hash is
// compared with the computed one in constant time.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/ids"
)

// Key prefixes by environment: a key says at a glance where it belongs, and secret
// scanners can recognise it.
const (
	PrefixDevelopment = "sg_dev_"
	PrefixProduction  = "sg_live_"
)

// SecretBytes is the randomness of a generated key: 128 bits.
const SecretBytes = 16

// prefixHexChars is how many characters of the random part the stored prefix keeps: enough
// to tell keys apart in a listing and to revoke by prefix, far too few to guess the rest.
const prefixHexChars = 8

// MaxKeyLen bounds the x-api-key header accepted; longer values are invalid without a
// lookup.
const MaxKeyLen = 256

// NewKey is a freshly generated key: Secret is shown once and never stored.
type NewKey struct {
	Secret string
	Prefix string
	Hash   []byte
}

// Generate returns a new random key for the environment.
func Generate(env string) (NewKey, error) {
	p, err := envPrefix(env)
	if err != nil {
		return NewKey{}, err
	}
	b := make([]byte, SecretBytes)
	if _, err := rand.Read(b); err != nil {
		return NewKey{}, fmt.Errorf("auth: read random bytes: %w", err)
	}
	secret := p + hex.EncodeToString(b)
	return NewKey{Secret: secret, Prefix: DisplayPrefix(secret), Hash: Hash(secret)}, nil
}

func envPrefix(env string) (string, error) {
	switch env {
	case catalog.EnvDevelopment:
		return PrefixDevelopment, nil
	case catalog.EnvProduction:
		return PrefixProduction, nil
	}
	return "", fmt.Errorf("auth: environment %q is neither %s nor %s", env, catalog.EnvDevelopment, catalog.EnvProduction)
}

// DisplayPrefix is the part of a key kept in the clear for listings: the environment
// prefix and the first characters of the random part.
func DisplayPrefix(secret string) string {
	n := len(secret)
	for _, p := range []string{PrefixDevelopment, PrefixProduction} {
		if strings.HasPrefix(secret, p) {
			n = min(len(secret), len(p)+prefixHexChars)
			return secret[:n]
		}
	}
	return secret[:min(n, prefixHexChars)]
}

// IsKey reports whether a credential has the form of an API key (one of the environment
// prefixes) rather than of an OAuth access token.
func IsKey(secret string) bool {
	return strings.HasPrefix(secret, PrefixDevelopment) || strings.HasPrefix(secret, PrefixProduction)
}

// Hash is the stored form of a key.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// OwnerID is the stable user id of an owner name: the same name always denotes the same
// user, so `keys create --owner alice` twice gives alice two keys, not two accounts.
func OwnerID(name string) uuid.UUID {
	return uuid.NewSHA1(ids.Namespace, []byte("user:"+strings.ToLower(strings.TrimSpace(name))))
}
