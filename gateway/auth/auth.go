package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// Header is the request header that carries the key (docs/spec.md 5).
const Header = "x-api-key"

// DefaultCacheSize bounds the lookup cache so that a flood of random keys cannot grow it
// without limit.
const DefaultCacheSize = 10_000

// Identity is an authenticated caller. It carries the key's id, never the key.
type Identity struct {
	KeyID       uuid.UUID
	Prefix      string
	OwnerID     uuid.UUID
	Environment string
	Plan        string
	// KeyIDText is KeyID.String(), made once per key lookup rather than on every request
	// (the log, the rate limiter's counter key).
	KeyIDText string
}

// KeyStore is what authentication needs of the catalog.
type KeyStore interface {
	KeyByHash(ctx context.Context, hash []byte) (catalog.APIKey, error)
}

// Authenticator checks keys against the store through a short-lived cache.
type Authenticator struct {
	store KeyStore
	env   string
	ttl   time.Duration
	now   func() time.Time
	size  int
	met   *obs.Metrics
	// hits and misses count cache lookups, bound once (no label lookup per request).
	hits, misses prometheus.Counter

	mu    sync.Mutex
	cache map[[32]byte]cacheEntry
}

// cacheEntry remembers one lookup, found or not, until expires.
type cacheEntry struct {
	key   catalog.APIKey
	found bool
	// id is the identity of a found key, built once for every request that presents it;
	// shared, so never modified.
	id      *Identity
	expires time.Time
}

// Options tune an Authenticator.
type Options struct {
	// Environment is the gateway's: keys of the other environment are refused.
	Environment string
	// CacheTTL is how long a lookup (found or not) is trusted; a revocation takes effect on
	// every replica within it. Zero disables the cache.
	CacheTTL time.Duration
	// CacheSize bounds the cached lookups (default DefaultCacheSize).
	CacheSize int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Metrics, when set, counts cache hits and misses.
	Metrics *obs.Metrics
}

// New returns an Authenticator over the store.
func New(store KeyStore, opt Options) (*Authenticator, error) {
	if opt.Environment != catalog.EnvDevelopment && opt.Environment != catalog.EnvProduction {
		return nil, fmt.Errorf("auth: environment %q is neither %s nor %s", opt.Environment, catalog.EnvDevelopment, catalog.EnvProduction)
	}
	if opt.CacheTTL < 0 {
		return nil, fmt.Errorf("auth: negative cache TTL %s", opt.CacheTTL)
	}
	if opt.CacheSize <= 0 {
		opt.CacheSize = DefaultCacheSize
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	a := &Authenticator{
		store: store, env: opt.Environment, ttl: opt.CacheTTL, now: opt.Now, size: opt.CacheSize, met: opt.Metrics,
		cache: map[[32]byte]cacheEntry{},
	}
	if opt.Metrics != nil {
		a.hits, a.misses = opt.Metrics.KeyCache.WithLabelValues(obs.CacheHit), opt.Metrics.KeyCache.WithLabelValues(obs.CacheMiss)
	}
	return a, nil
}

// Environment is the gateway environment the Authenticator admits keys of.
func (a *Authenticator) Environment() string { return a.env }

// Authenticate returns the identity of a presented key. The errors are *apierr.Error:
// missing_api_key for an empty key, invalid_api_key for an unknown, revoked or
// other-environment key. A store failure is returned wrapped (an internal error), never
// mistaken for an invalid key, and is not cached.
func (a *Authenticator) Authenticate(ctx context.Context, secret string) (Identity, error) {
	id, err := a.authenticate(ctx, secret)
	if err != nil {
		return Identity{}, err
	}
	return *id, nil
}

// authenticate is Authenticate returning the cached, shared identity (the middleware puts
// it in the request context without copying it).
func (a *Authenticator) authenticate(ctx context.Context, secret string) (*Identity, error) {
	if secret == "" {
		return nil, apierr.New(apierr.MissingAPIKey, "missing API key: send it in the %s header", Header)
	}
	if len(secret) > MaxKeyLen {
		return nil, invalidKey()
	}
	hash := Hash(secret)
	e, err := a.lookup(ctx, hash)
	if err != nil {
		return nil, err
	}
	k := e.key
	if !e.found || subtle.ConstantTimeCompare(k.Hash, hash) != 1 || k.RevokedAt != nil || k.Environment != a.env {
		return nil, invalidKey()
	}
	return e.id, nil
}

// invalidKey does not say whether the key is unknown, revoked or of the other environment:
// that would tell a holder of a stolen key what to try next.
func invalidKey() *apierr.Error {
	return apierr.New(apierr.InvalidAPIKey, "invalid API key: it is unknown, revoked, or of another environment than this gateway's")
}

func (a *Authenticator) lookup(ctx context.Context, hash []byte) (cacheEntry, error) {
	var h [32]byte
	copy(h[:], hash)
	now := a.now()
	if a.ttl > 0 {
		a.mu.Lock()
		e, ok := a.cache[h]
		a.mu.Unlock()
		if ok && now.Before(e.expires) {
			a.count(a.hits)
			return e, nil
		}
		a.count(a.misses)
	}
	k, err := a.store.KeyByHash(ctx, hash)
	e := cacheEntry{key: k, found: true, expires: now.Add(a.ttl)}
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		e.found = false
	case catalog.Unavailable(err):
		// 503 store_unavailable with Retry-After, never mistaken for a wrong key.
		return cacheEntry{}, catalog.UnavailableError("auth: look up key", err)
	case err != nil:
		return cacheEntry{}, fmt.Errorf("auth: look up key: %w", err)
	default:
		e.id = &Identity{KeyID: k.ID, Prefix: k.Prefix, OwnerID: k.OwnerID, Environment: k.Environment, Plan: k.Plan, KeyIDText: k.ID.String()}
	}
	if a.ttl > 0 {
		a.put(h, e)
	}
	return e, nil
}

func (a *Authenticator) count(c prometheus.Counter) {
	if c != nil {
		c.Inc()
	}
}

func (a *Authenticator) put(h [32]byte, e cacheEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= a.size {
		now := a.now()
		for k, v := range a.cache {
			if !now.Before(v.expires) {
				delete(a.cache, k)
			}
		}
		// Still full of live entries: a flood of distinct keys. Dropping everything costs
		// one lookup per real caller and bounds the memory.
		if len(a.cache) >= a.size {
			clear(a.cache)
		}
	}
	a.cache[h] = e
}

// Forget drops every cached lookup, so that a revocation made by this process takes
// effect at once here (other replicas follow within the TTL).
func (a *Authenticator) Forget() {
	a.mu.Lock()
	clear(a.cache)
	a.mu.Unlock()
}
