package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/obs"
	"github.com/sensorgate/sensorgate/pkg/settings"
	"github.com/sensorgate/sensorgate/pkg/ttlcache"
)

// Header is the request header that carries the key (docs/spec.md 5).
const Header = "x-api-key"

// DefaultCacheSize bounds the lookup cache so that a flood of random keys cannot grow it
// without limit.
const DefaultCacheSize = 10_000

// DefaultNegativeCacheSize bounds the cache of recently missed key hashes. It is separate
// from the cache of found keys, so that a flood of random keys fills only itself and never
// evicts the keys of real callers.
const DefaultNegativeCacheSize = 10_000

// MinNegativeTTL is the shortest time a missed key hash is remembered, even with the
// positive cache off: a client retrying one wrong key costs one lookup per window. A key
// created after someone presented it is seen within this time.
const MinNegativeTTL = 5 * time.Second

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
	// Scopes are what the caller may do: a key's (all unless created with fewer), a
	// token's granted ones.
	Scopes Scope
	// Audience, for an OAuth access token, is the path of the resource it was issued for
	// (RFC 8707): the token is refused on any other path. Empty for keys.
	Audience string
	// ClientID is the OAuth client that holds the token; empty for keys.
	ClientID string
}

// Token is what a TokenVerifier knows of a valid access token: the key that stands for its
// client's access to the account (revoked with the app), the granted scopes, the audience
// path and the expiry.
type Token struct {
	Key       catalog.APIKey
	Scopes    Scope
	Audience  string
	ClientID  string
	ExpiresAt time.Time
	// Active is false for a token revoked (RFC 7009, a reused code or refresh token).
	Active bool
}

// TokenVerifier checks OAuth access tokens (package oauth): catalog.ErrNotFound for a
// token that is forged or unknown.
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string) (Token, error)
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
	met   *obs.Metrics
	// hits and misses count cache lookups, bound once (no label lookup per request).
	hits, misses prometheus.Counter

	// cache holds lookups of found keys (valid or not) for ttl, keyed by the key's hash;
	// nil when the TTL is 0. Both caches are the one TTL cache type (pkg/ttlcache).
	cache *ttlcache.Cache[[32]byte, cacheEntry]
	// neg remembers hashes the store did not know, for max(CacheTTL, MinNegativeTTL).
	neg *ttlcache.Cache[[32]byte, struct{}]
	// throttle, when set, limits wrong keys per client address (429 over the limit).
	throttle Throttle
	// tokens, when set, checks Bearer values that are not API keys (OAuth access tokens).
	tokens TokenVerifier
	// challenge is the WWW-Authenticate of a 401 up to the resource path (RFC 9728), empty
	// without a resource origin.
	challenge string
}

// cacheEntry remembers one lookup, found or not.
type cacheEntry struct {
	key   catalog.APIKey
	found bool
	// id is the identity of a found key, built once for every request that presents it;
	// shared, so never modified.
	id *Identity
}

// keyEntryBytes is what one positive cache entry holds beyond its strings: the hash key,
// the APIKey and Identity structs, the map and queue overhead.
const keyEntryBytes = 32 + 400 + ttlcache.EntryOverhead

// keyEntrySize counts an entry's strings too, so the byte bound holds whatever the names.
func keyEntrySize(_ [32]byte, e cacheEntry) int64 {
	k := e.key
	n := len(k.Name) + len(k.Prefix) + len(k.Hash) + len(k.Environment) + len(k.Plan)
	if e.id != nil {
		n += len(e.id.KeyIDText) + len(e.id.Prefix) + len(e.id.Environment) + len(e.id.Plan)
	}
	return int64(n) + keyEntryBytes
}

// missEntryBytes is what one negative cache entry holds: the hash and the overhead.
const missEntryBytes = 32 + ttlcache.EntryOverhead

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
	// NegativeCacheSize bounds the remembered missed key hashes (default
	// DefaultNegativeCacheSize); they are remembered for max(CacheTTL, MinNegativeTTL).
	NegativeCacheSize int
	// Throttle, when set, counts wrong keys per client address and answers 429 with
	// Retry-After over its limit, before any database lookup (MemoryThrottle,
	// RedisThrottle).
	Throttle Throttle
	// Tokens, when set, admits OAuth access tokens as Bearer credentials.
	Tokens TokenVerifier
	// ResourceOrigin, when set, is the gateway's public origin: a 401 carries
	// WWW-Authenticate with the resource metadata of the path asked (RFC 9728).
	ResourceOrigin string
}

// New returns an Authenticator over the store.
func New(store KeyStore, opt Options) (*Authenticator, error) {
	if opt.Environment != catalog.EnvDevelopment && opt.Environment != catalog.EnvProduction {
		return nil, fmt.Errorf("auth: environment %q is neither %s nor %s", opt.Environment, catalog.EnvDevelopment, catalog.EnvProduction)
	}
	if opt.CacheTTL < 0 {
		return nil, fmt.Errorf("auth: negative cache TTL %s", opt.CacheTTL)
	}
	settings.Default(&opt.CacheSize, DefaultCacheSize)
	if opt.Now == nil {
		opt.Now = time.Now
	}
	settings.Default(&opt.NegativeCacheSize, DefaultNegativeCacheSize)
	a := &Authenticator{
		store: store, env: opt.Environment, ttl: opt.CacheTTL, now: opt.Now, met: opt.Metrics,
		// Bounded in entries and in bytes (an entry with the longest names a key may have
		// still fits CacheSize of them); missed hashes in a cache of their own, so a flood
		// of random keys never evicts the keys of real callers.
		neg: ttlcache.New(max(opt.CacheTTL, MinNegativeTTL), opt.NegativeCacheSize, int64(opt.NegativeCacheSize)*missEntryBytes,
			func([32]byte, struct{}) int64 { return missEntryBytes }),
		throttle: opt.Throttle,
		tokens:   opt.Tokens,
	}
	if opt.ResourceOrigin != "" {
		a.challenge = `Bearer resource_metadata="` + opt.ResourceOrigin + WellKnownResource
	}
	if opt.CacheTTL > 0 {
		a.cache = ttlcache.New(opt.CacheTTL, opt.CacheSize, int64(opt.CacheSize)*(keyEntryBytes+1024), keyEntrySize)
	}
	if opt.Metrics != nil {
		a.hits, a.misses = opt.Metrics.KeyCache.WithLabelValues(obs.CacheHit), opt.Metrics.KeyCache.WithLabelValues(obs.CacheMiss)
	}
	return a, nil
}

// authenticate returns the cached, shared identity of a presented key (the middleware
// puts it in the request context without copying it). The errors are *apierr.Error:
// missing_api_key for an empty key, invalid_api_key for an unknown, revoked or
// other-environment key, and past the throttle's limit 429 rate_limited, a *ThrottledError
// saying when to retry. A store failure is returned wrapped (an internal error), never
// mistaken for an invalid key, and is not cached.
//
// The order bounds what a wrong key costs: a key in the positive cache answers at once; a
// hash missed recently (negative cache) is refused without a lookup; an address over the
// throttle's limit is refused without a lookup; only then is the store asked. The stored
// hash is compared with the computed one in constant time; maps and the store are keyed by
// the hash, never by the secret.
//
// addr gives the client address only when a wrong key must be counted or the throttle
// asked: a known key, the common case, never needs it (Gin's ClientIP parses and formats
// the peer address, an allocation per request).
func (a *Authenticator) authenticate(ctx context.Context, secret string, addr func() string) (*Identity, error) {
	if secret == "" {
		return nil, apierr.New(apierr.MissingAPIKey, "missing API key: send it in the %s header", Header)
	}
	if len(secret) > MaxKeyLen {
		a.miss(ctx, addr())
		return nil, invalidKey()
	}
	// The hash is computed over a copy on the stack: Hash's []byte(secret) and its
	// returned slice were two allocations per request.
	var buf [MaxKeyLen]byte
	h := sha256.Sum256(buf[:copy(buf[:], secret)])
	e, ok := a.cached(h)
	if !ok {
		if a.missedRecently(h) {
			a.miss(ctx, addr())
			return nil, invalidKey()
		}
		if a.throttle != nil {
			if d, blocked := a.throttle.Blocked(ctx, addr()); blocked {
				return nil, &ThrottledError{RetryAfter: d}
			}
		}
		var err error
		if e, err = a.lookup(ctx, h, secret); err != nil {
			return nil, err
		}
	}
	k := e.key
	// An expiry (a rotated key's grace) is checked against the clock on every request, so a
	// cached key stops at its expires_at exactly; keys without one pay no clock read.
	if !e.found || subtle.ConstantTimeCompare(k.Hash, h[:]) != 1 || k.RevokedAt != nil || k.Environment != a.env ||
		(k.ExpiresAt != nil && !a.now().Before(*k.ExpiresAt)) {
		a.miss(ctx, addr())
		return nil, invalidKey()
	}
	return e.id, nil
}

// ThrottledError is the answer to an address past the throttle's limit of wrong keys: 429
// rate_limited (errors.As finds the *apierr.Error) with RetryAfter for the header.
type ThrottledError struct{ RetryAfter time.Duration }

func (e *ThrottledError) Error() string { return e.api().Error() }

func (e *ThrottledError) api() *apierr.Error {
	return apierr.New(apierr.RateLimited, "too many invalid API keys from this address; retry in %d s", e.Seconds())
}

// Seconds is RetryAfter rounded up to whole seconds (at least 1), the unit of Retry-After.
func (e *ThrottledError) Seconds() int {
	return max(1, int((e.RetryAfter+time.Second-1)/time.Second))
}

// Unwrap gives errors.As the client-facing error.
func (e *ThrottledError) Unwrap() error { return e.api() }

func (a *Authenticator) miss(ctx context.Context, addr string) {
	if a.throttle != nil {
		a.throttle.Miss(ctx, addr)
	}
}

// missedRecently reports whether the store did not know h within the negative TTL.
func (a *Authenticator) missedRecently(h [32]byte) bool {
	_, _, ok := a.neg.Get(h, a.now())
	return ok
}

// rememberMiss records h as unknown; the cache drops expired entries and then the oldest
// when it is full: memory stays bounded under any flood.
func (a *Authenticator) rememberMiss(h [32]byte) {
	now := a.now()
	a.neg.Put(h, struct{}{}, now, now)
}

// invalidKey does not say whether the key is unknown, revoked or of the other environment:
// that would tell a holder of a stolen key what to try next.
func invalidKey() *apierr.Error {
	return apierr.New(apierr.InvalidAPIKey, "invalid API key: it is unknown, revoked, or of another environment than this gateway's")
}

// cached returns the positive cache's entry of h while it is fresh.
func (a *Authenticator) cached(h [32]byte) (cacheEntry, bool) {
	if a.cache == nil {
		return cacheEntry{}, false
	}
	if e, _, ok := a.cache.Get(h, a.now()); ok {
		a.count(a.hits)
		return e, true
	}
	a.count(a.misses)
	return cacheEntry{}, false
}

// lookup asks the store for h; a found key (valid or not) goes to the positive cache, an
// unknown one to the negative cache.
func (a *Authenticator) lookup(ctx context.Context, h [32]byte, secret string) (cacheEntry, error) {
	now := a.now()
	if a.tokens != nil && !IsKey(secret) {
		return a.lookupToken(ctx, h, secret, now)
	}
	k, err := a.store.KeyByHash(ctx, h[:])
	e := cacheEntry{key: k, found: true}
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		a.rememberMiss(h)
		return cacheEntry{}, nil
	case catalog.Unavailable(err):
		// 503 store_unavailable with Retry-After, never mistaken for a wrong key.
		return cacheEntry{}, catalog.UnavailableError("auth: look up key", err)
	case err != nil:
		return cacheEntry{}, fmt.Errorf("auth: look up key: %w", err)
	default:
		e.id = &Identity{KeyID: k.ID, Prefix: k.Prefix, OwnerID: k.OwnerID, Environment: k.Environment, Plan: k.Plan, KeyIDText: k.ID.String(),
			Scopes: KeyScopes(k.Scopes)}
	}
	if a.cache != nil {
		// As of the time the lookup started: a revocation committed after it is seen
		// within KEY_CACHE_TTL of that moment, never later.
		a.cache.Put(h, e, now, a.now())
	}
	return e, nil
}

func (a *Authenticator) count(c prometheus.Counter) {
	if c != nil {
		c.Inc()
	}
}

// UseTokens admits OAuth access tokens checked by v as Bearer credentials, and has a 401
// name the resource metadata of origin (RFC 9728). Called once while the gateway is wired,
// before it serves (the authorization server needs the dashboard, which needs this
// authenticator).
func (a *Authenticator) UseTokens(v TokenVerifier, origin string) {
	a.tokens = v
	if origin != "" {
		a.challenge = `Bearer resource_metadata="` + origin + WellKnownResource
	}
}

// Forget drops every cached lookup, so that a revocation made by this process takes
// effect at once here (other replicas follow within the TTL).
func (a *Authenticator) Forget() {
	if a.cache != nil {
		a.cache.Clear()
	}
	a.neg.Clear()
}

// lookupToken asks the token verifier for an access token and caches the answer like a
// key's, for at most KEY_CACHE_TTL: a revoked app or token is refused on every replica
// within it. The entry's key carries the token's hash (the constant-time comparison), its
// expiry (the token's or the key's, whichever is sooner) and a revocation when the token is
// no longer active.
func (a *Authenticator) lookupToken(ctx context.Context, h [32]byte, secret string, now time.Time) (cacheEntry, error) {
	t, err := a.tokens.VerifyToken(ctx, secret)
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		a.rememberMiss(h)
		return cacheEntry{}, nil
	case catalog.Unavailable(err):
		return cacheEntry{}, catalog.UnavailableError("auth: look up token", err)
	case err != nil:
		return cacheEntry{}, fmt.Errorf("auth: look up token: %w", err)
	}
	k := t.Key
	k.Hash = h[:]
	if k.ExpiresAt == nil || t.ExpiresAt.Before(*k.ExpiresAt) {
		k.ExpiresAt = &t.ExpiresAt
	}
	if !t.Active && k.RevokedAt == nil {
		k.RevokedAt = &now
	}
	e := cacheEntry{key: k, found: true, id: &Identity{KeyID: k.ID, Prefix: k.Prefix, OwnerID: k.OwnerID, Environment: k.Environment,
		Plan: k.Plan, KeyIDText: k.ID.String(), Scopes: t.Scopes & KeyScopes(k.Scopes), Audience: t.Audience, ClientID: t.ClientID}}
	if a.cache != nil {
		a.cache.Put(h, e, now, a.now())
	}
	return e, nil
}
