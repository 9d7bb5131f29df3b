package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/singleflight"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ttlcache"
)

// SensorLookup is the part of Store that resolves a sensor reference.
type SensorLookup interface {
	Sensor(ctx context.Context, id uuid.UUID) (Sensor, error)
	SensorByExternalID(ctx context.Context, externalID string) (Sensor, error)
}

// IsSensorUUID reports whether ref is a sensor UUID in the canonical dashed form that
// docs/spec.md 4 names (36 characters); other spellings uuid.Parse accepts are taken as
// external ids.
func IsSensorUUID(ref string) (uuid.UUID, bool) {
	if len(ref) != 36 {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(ref)
	return id, err == nil
}

// ResolveSensor finds the sensor a path :id names: its UUID (with dashes) or its provider's
// external id. A UUID that names no sensor is tried as an external id too, since a provider
// may use UUIDs. Errors are *apierr.Error (400 invalid_parameter for an id that cannot be
// an external id, 404 sensor_not_found) or a wrapped store error.
func ResolveSensor(ctx context.Context, s SensorLookup, ref string) (Sensor, error) {
	if id, ok := IsSensorUUID(ref); ok {
		sn, err := s.Sensor(ctx, id)
		if err == nil {
			return sn, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return sn, fmt.Errorf("resolve sensor %s: %w", id, err)
		}
	}
	if err := contract.ValidExternalID(ref); err != nil {
		return Sensor{}, apierr.Invalid("id", "want a sensor UUID or a provider's external id: %v", err)
	}
	sn, err := s.SensorByExternalID(ctx, ref)
	if errors.Is(err, ErrNotFound) {
		return sn, apierr.New(apierr.SensorNotFound, "sensor %q not found", ref)
	}
	if err != nil {
		return sn, fmt.Errorf("resolve sensor %q: %w", ref, err)
	}
	return sn, nil
}

// Resolver is the gateway's one sensor resolver: ResolveSensor behind a short-lived cache
// keyed by the reference as the caller spelled it, with concurrent misses of one reference
// coalesced into one catalog query. REST (sensor, readings, streams), MCP, alerts and OGC
// resolve through it, so a sensor is found, refused or missed the same way on every face.
type Resolver struct {
	lookup SensorLookup
	cache  *ttlcache.Cache[string, Sensor]
	group  singleflight.Group
	now    func() time.Time
}

// DefaultResolveTTL bounds how long a resolved sensor is trusted. The catalog changes only
// by sync (every SYNC_INTERVAL), so a few seconds more of a sensor's old record is
// invisible.
const DefaultResolveTTL = 5 * time.Second

// resolverBytes bounds the cache: 10,000 sensors of about 800 bytes.
const resolverBytes = 8 << 20

// NewResolver returns a resolver over l that trusts a resolved sensor for ttl (0:
// DefaultResolveTTL; negative: no cache, every call asks the catalog).
func NewResolver(l SensorLookup, ttl time.Duration) *Resolver {
	r := &Resolver{lookup: l, now: time.Now}
	if ttl == 0 {
		ttl = DefaultResolveTTL
	}
	if ttl > 0 {
		r.cache = ttlcache.New(ttl, 10_000, resolverBytes, func(k string, s Sensor) int64 {
			n := len(s.ExternalID) + len(s.Name) + len(s.Description) + len(s.ServiceID) + len(s.ProviderSlug) +
				len(s.ProviderName) + len(s.FeedSlug) + len(s.FeedName) + len(s.SensorType) + len(s.Status)
			for _, d := range s.DataTypes {
				n += len(d) + 16
			}
			return ttlcache.KeySize(k) + int64(n) + 512 + ttlcache.EntryOverhead
		})
	}
	return r
}

// Resolve finds the sensor ref names (ResolveSensor's rules and errors). A miss is not
// cached: a sensor that sync adds is found at once.
func (r *Resolver) Resolve(ctx context.Context, ref string) (Sensor, error) {
	if r.cache == nil {
		return ResolveSensor(ctx, r.lookup, ref)
	}
	if s, _, ok := r.cache.Get(ref, r.now()); ok {
		return s, nil
	}
	v, err, _ := r.group.Do(ref, func() (any, error) {
		s, err := ResolveSensor(ctx, r.lookup, ref)
		if err != nil {
			return nil, err
		}
		now := r.now()
		r.cache.Put(ref, s, now, now)
		return s, nil
	})
	if err != nil {
		return Sensor{}, err
	}
	return v.(Sensor), nil
}
