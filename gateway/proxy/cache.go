package proxy

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
)

// Cache defaults.
const (
	// DefaultCacheTTL is the freshness bound of a cached answer. Readings change every few
	// minutes (NDBC every 10, NWS hourly), so a few seconds of staleness is invisible to
	// clients while a hot sensor costs one upstream call per TTL instead of one per request.
	DefaultCacheTTL = 3 * time.Second
	// MaxCacheTTL keeps the bound short whatever the configuration says.
	MaxCacheTTL        = time.Minute
	DefaultCacheItems  = 10_000
	DefaultCacheMaxLen = 256 << 10
)

// Cache holds recent upstream answers for a short freshness bound and coalesces concurrent
// misses of one key into one upstream call (singleflight): a burst of identical requests
// makes one call whatever the TTL, and with TTL 0 only the coalescing remains. It caches
// 200 and 404 answers (both are facts about the data); errors are never cached.
type Cache struct {
	ttl      time.Duration
	maxItems int
	maxLen   int
	now      func() time.Time

	items *ttlMap[*Response]
	group singleflight.Group

	lookups              *prometheus.CounterVec
	hits, shared, misses prometheus.Counter // bound once: no label lookup per request
}

// CacheOptions configure a Cache.
type CacheOptions struct {
	TTL        time.Duration // 0 disables storing (coalescing stays)
	MaxItems   int
	MaxLen     int // larger bodies are passed on but not kept
	Now        func() time.Time
	Registerer prometheus.Registerer
}

// NewCache returns an empty cache. A TTL above MaxCacheTTL is an error, so that a typo in
// the configuration cannot serve hour-old readings.
func NewCache(o CacheOptions) (*Cache, error) {
	if o.TTL < 0 || o.TTL > MaxCacheTTL {
		return nil, fmt.Errorf("proxy: cache TTL %s: want 0 to %s", o.TTL, MaxCacheTTL)
	}
	if o.MaxItems <= 0 {
		o.MaxItems = DefaultCacheItems
	}
	if o.MaxLen <= 0 {
		o.MaxLen = DefaultCacheMaxLen
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Cache{
		ttl: o.TTL, maxItems: o.MaxItems, maxLen: o.MaxLen, now: o.Now,
		items: newTTLMap[*Response](o.TTL, o.MaxItems),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sensorgate_proxy_cache_lookups_total",
			Help: "Readings cache lookups by result: hit (fresh answer), shared (joined an in-flight call), miss (made the upstream call).",
		}, []string{"result"}),
	}
	c.hits, c.shared, c.misses = c.lookups.WithLabelValues("hit"), c.lookups.WithLabelValues("shared"), c.lookups.WithLabelValues("miss")
	if o.Registerer != nil {
		if err := o.Registerer.Register(c.lookups); err != nil {
			return nil, fmt.Errorf("register cache metrics: %w", err)
		}
	}
	return c, nil
}

// TTL is the freshness bound.
func (c *Cache) TTL() time.Duration { return c.ttl }

// Get returns the fresh answer of key, if any.
func (c *Cache) Get(key string) (*Response, bool) {
	if c.ttl <= 0 {
		return nil, false
	}
	r, _, ok := c.items.get(key, c.now())
	return r, ok
}

// Do returns the fresh answer of key, or joins the in-flight fetch of key, or fetches.
// fetch runs detached from the caller's cancellation (other callers may be waiting on it);
// it must bound itself, as Upstreams.Get does with its route deadline. A caller whose
// context ended meanwhile gets its context's error when the call returns.
func (c *Cache) Do(ctx context.Context, key string, fetch func(context.Context) (*Response, error)) (*Response, error) {
	if r, ok := c.Get(key); ok {
		c.hits.Inc()
		return r, nil
	}
	// The call runs on this goroutine (no goroutine per miss, as DoChan would start),
	// detached from its cancellation because others may be waiting on it; fetch bounds
	// it with the route deadline, which also bounds how long a caller that gave up waits.
	detached := context.WithoutCancel(ctx)
	v, err, shared := c.group.Do(key, func() (any, error) {
		// A caller that arrived just after the previous call finished finds its answer.
		if r, ok := c.Get(key); ok {
			return r, nil
		}
		r, err := fetch(detached)
		if err != nil {
			return nil, err
		}
		c.put(key, r)
		return r, nil
	})
	if shared {
		c.shared.Inc()
	} else {
		c.misses.Inc()
	}
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return v.(*Response), nil
}

func (c *Cache) put(key string, r *Response) {
	if c.ttl <= 0 || len(r.Body) > c.maxLen || (r.Status != 200 && r.Status != 404) {
		return
	}
	c.items.put(key, r, r.FetchedAt, c.now())
}

// Len is the number of answers held.
func (c *Cache) Len() int {
	return c.items.len()
}
