package readings

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/settings"
	"github.com/sensorgate/sensorgate/pkg/ttlcache"
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
	// DefaultCacheBytes bounds what the readings cache holds: answers and keys, counted in
	// bytes, because one 500-reading page weighs as much as a thousand latest readings.
	DefaultCacheBytes = 64 << 20
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

	items *ttlcache.Cache[string, *contract.Response]
	mu    sync.Mutex       // guards calls
	calls map[string]*call // in-flight fetches by key

	lookups              *prometheus.CounterVec
	hits, shared, misses prometheus.Counter // bound once: no label lookup per request
}

// CacheOptions configure a Cache.
type CacheOptions struct {
	TTL        time.Duration // 0 disables storing (coalescing stays)
	MaxItems   int
	MaxLen     int   // larger bodies are passed on but not kept
	MaxBytes   int64 // bound of the whole cache (DefaultCacheBytes when 0)
	Now        func() time.Time
	Registerer prometheus.Registerer
}

// NewCache returns an empty cache. A TTL above MaxCacheTTL is an error, so that a typo in
// the configuration cannot serve hour-old readings.
func NewCache(o CacheOptions) (*Cache, error) {
	if o.TTL < 0 || o.TTL > MaxCacheTTL {
		return nil, fmt.Errorf("readings: cache TTL %s: want 0 to %s", o.TTL, MaxCacheTTL)
	}
	settings.Default(&o.MaxItems, DefaultCacheItems)
	settings.Default(&o.MaxLen, DefaultCacheMaxLen)
	settings.Default(&o.MaxBytes, DefaultCacheBytes)
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Cache{
		ttl: o.TTL, maxItems: o.MaxItems, maxLen: o.MaxLen, now: o.Now,
		items: ttlcache.New(o.TTL, o.MaxItems, o.MaxBytes, responseSize),
		calls: map[string]*call{},
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sensorgate_proxy_cache_lookups_total",
			Help: "Readings cache lookups by result: hit (fresh answer), shared (joined an in-flight call), miss (made the upstream call).",
		}, []string{"result"}),
	}
	c.hits, c.shared, c.misses = c.lookups.WithLabelValues("hit"), c.lookups.WithLabelValues("shared"), c.lookups.WithLabelValues("miss")
	size := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sensorgate_proxy_cache_bytes",
		Help: "Bytes held by the readings cache (answers, keys and per-entry overhead), bounded by its byte limit.",
	}, func() float64 { return float64(c.items.Bytes()) })
	if o.Registerer != nil {
		for _, m := range []prometheus.Collector{c.lookups, size} {
			if err := o.Registerer.Register(m); err != nil {
				return nil, fmt.Errorf("register cache metrics: %w", err)
			}
		}
	}
	return c, nil
}

// TTL is the freshness bound.
func (c *Cache) TTL() time.Duration { return c.ttl }

// Get returns the fresh answer of key, if any.
func (c *Cache) Get(key string) (*contract.Response, bool) {
	if c.ttl <= 0 {
		return nil, false
	}
	r, _, ok := c.items.Get(key, c.now())
	return r, ok
}

// Do returns the fresh answer of key, or joins the in-flight fetch of key, or fetches.
// The fetch runs on the first caller's goroutine (no goroutine per miss) under a context
// of its own, which keeps the first caller's values (request id, span) and is cancelled
// only when every caller waiting for it has gone: a client that hangs up cancels its
// upstream call unless others were coalesced with it, who still get the answer. fetch
// must bound itself, as contract.Client does with its route deadline. A caller whose context
// ended gets its context's error.
func (c *Cache) Do(ctx context.Context, key string, fetch func(context.Context) (*contract.Response, error)) (*contract.Response, error) {
	if r, ok := c.Get(key); ok {
		c.hits.Inc()
		return r, nil
	}
	c.mu.Lock()
	if cl, ok := c.calls[key]; ok {
		cl.waiters++
		c.mu.Unlock()
		c.shared.Inc()
		select {
		case <-cl.done:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return cl.resp, cl.err
		case <-ctx.Done():
			c.leave(key, cl)
			return nil, ctx.Err()
		}
	}
	// A caller that arrived just after the previous call finished finds its answer.
	if r, ok := c.Get(key); ok {
		c.mu.Unlock()
		c.hits.Inc()
		return r, nil
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cl := &call{done: make(chan struct{}), waiters: 1, cancel: cancel}
	c.calls[key] = cl
	c.mu.Unlock()
	c.misses.Inc()

	stop := context.AfterFunc(ctx, func() { c.leave(key, cl) })
	r, err := fetch(fctx)
	stop()
	if err == nil {
		c.put(key, r) // before the call leaves the table, so no caller misses both
	}
	c.mu.Lock()
	if c.calls[key] == cl {
		delete(c.calls, key)
	}
	c.mu.Unlock()
	cl.resp, cl.err = r, err
	close(cl.done)
	cancel()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return r, err
}

// call is one in-flight fetch and the callers waiting for it.
type call struct {
	done    chan struct{} // closed when resp and err are set
	resp    *contract.Response
	err     error
	waiters int // guarded by Cache.mu
	cancel  context.CancelFunc
}

// leave takes a caller that has gone off cl; the last one cancels the fetch, and the call
// leaves the table so that a new caller starts afresh instead of joining a cancelled call.
func (c *Cache) leave(key string, cl *call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl.waiters--
	if cl.waiters > 0 {
		return
	}
	if c.calls[key] == cl {
		delete(c.calls, key)
	}
	cl.cancel()
}

func (c *Cache) put(key string, r *contract.Response) {
	if c.ttl <= 0 || len(r.Body) > c.maxLen || (r.Status != 200 && r.Status != 404) {
		return
	}
	c.items.Put(key, r, r.FetchedAt, c.now())
}

// Len is the number of answers held.
func (c *Cache) Len() int {
	return c.items.Len()
}

// responseSize is what a cached answer costs: its key, body, header values and overhead.
func responseSize(key string, r *contract.Response) int64 {
	return int64(len(key)+len(r.Body)+len(r.ContentType)+len(r.ETag)) + ttlcache.EntryOverhead + 128
}

// Bytes is the size of what the cache holds, as its byte bound counts it.
func (c *Cache) Bytes() int64 { return c.items.Bytes() }
