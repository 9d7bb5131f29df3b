package auth

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sensorgate/sensorgate/pkg/settings"
)

// Defaults of the failed-key throttle: an address that presents more than
// DefaultMissLimit wrong keys within DefaultMissWindow gets 429 until the window ends. A
// client with one mistyped key hits the negative cache, not this limit, long before it
// matters; a key-space scan from one address costs the database DefaultMissLimit lookups
// per window instead of one per guess.
const (
	DefaultMissLimit  = 20
	DefaultMissWindow = time.Minute
	// maxThrottleAddrs bounds the in-process throttle's table.
	maxThrottleAddrs = 100_000
)

// Throttle counts failed key checks per client address. Blocked is asked only before a
// database lookup (a key already in the positive cache never waits for it), Miss after a
// wrong key.
type Throttle interface {
	// Blocked reports whether addr has used up its misses, and for how long.
	Blocked(ctx context.Context, addr string) (retryAfter time.Duration, blocked bool)
	// Miss records one wrong key presented by addr.
	Miss(ctx context.Context, addr string)
}

// ThrottleKey is the unit an address is counted in: the IP itself for IPv4, its /64 for
// IPv6 (one host usually holds a whole /64, so counting single addresses would not slow
// it). Anything that is not an IP is counted as given.
func ThrottleKey(addr string) string {
	ip := net.ParseIP(addr)
	if ip == nil {
		return addr
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// MemoryThrottle counts misses in fixed windows in this process: the embedded default, and
// RedisThrottle's fallback while Redis is down.
type MemoryThrottle struct {
	limit  int
	window time.Duration
	now    func() time.Time

	mu    sync.Mutex
	addrs map[string]*missWindow
}

type missWindow struct {
	n   int
	end time.Time
}

// NewMemoryThrottle returns a throttle allowing limit misses per window per address
// (defaults DefaultMissLimit, DefaultMissWindow for zero values; now defaults to time.Now).
func NewMemoryThrottle(limit int, window time.Duration, now func() time.Time) *MemoryThrottle {
	settings.Default(&limit, DefaultMissLimit)
	settings.Default(&window, DefaultMissWindow)
	if now == nil {
		now = time.Now
	}
	return &MemoryThrottle{limit: limit, window: window, now: now, addrs: map[string]*missWindow{}}
}

// Blocked implements Throttle.
func (m *MemoryThrottle) Blocked(_ context.Context, addr string) (time.Duration, bool) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.addrs[ThrottleKey(addr)]
	if !ok || !now.Before(w.end) || w.n < m.limit {
		return 0, false
	}
	return w.end.Sub(now), true
}

// Miss implements Throttle.
func (m *MemoryThrottle) Miss(_ context.Context, addr string) {
	now := m.now()
	k := ThrottleKey(addr)
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.addrs[k]
	if !ok || !now.Before(w.end) {
		if !ok && len(m.addrs) >= maxThrottleAddrs {
			m.prune(now)
		}
		w = &missWindow{end: now.Add(m.window)}
		m.addrs[k] = w
	}
	w.n++
}

// prune drops ended windows and, if the table is still full (misses from a huge number of
// addresses at once), half of the rest: the memory stays bounded, and a dropped address
// starts a new window.
func (m *MemoryThrottle) prune(now time.Time) {
	for k, w := range m.addrs {
		if !now.Before(w.end) {
			delete(m.addrs, k)
		}
	}
	drop := len(m.addrs) - maxThrottleAddrs/2
	for k := range m.addrs {
		if drop <= 0 {
			break
		}
		delete(m.addrs, k)
		drop--
	}
}

// RedisThrottle counts misses in Redis, so that every replica sees an address's misses at
// every other replica: a scan spread over replicas is slowed as much as one against a
// single gateway. While Redis fails it counts in process (Fallback) and logs the first
// failure of each outage.
type RedisThrottle struct {
	rdb      redis.UniversalClient
	prefix   string
	limit    int
	window   time.Duration
	fallback *MemoryThrottle
	log      *slog.Logger
	down     atomic.Bool
}

// NewRedisThrottle returns a throttle over rdb with keys under prefix (limit and window
// default as for NewMemoryThrottle; log defaults to discarding).
func NewRedisThrottle(rdb redis.UniversalClient, prefix string, limit int, window time.Duration, log *slog.Logger) *RedisThrottle {
	fb := NewMemoryThrottle(limit, window, nil)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &RedisThrottle{rdb: rdb, prefix: prefix + "authmiss:", limit: fb.limit, window: fb.window, fallback: fb, log: log}
}

// Blocked implements Throttle: one GET and PTTL in a pipeline.
func (r *RedisThrottle) Blocked(ctx context.Context, addr string) (time.Duration, bool) {
	k := r.prefix + ThrottleKey(addr)
	var get *redis.StringCmd
	var ttl *redis.DurationCmd
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, k)
		ttl = p.PTTL(ctx, k)
		return nil
	})
	if err != nil && err != redis.Nil { //nolint:errorlint // go-redis returns the sentinel itself
		r.failed(err)
		return r.fallback.Blocked(ctx, addr)
	}
	r.recovered()
	n, _ := strconv.Atoi(get.Val())
	if n < r.limit {
		return r.fallback.Blocked(ctx, addr) // misses counted locally during an outage still hold
	}
	d := ttl.Val()
	if d <= 0 {
		d = r.window
	}
	return d, true
}

// Miss implements Throttle: INCR and, for the window's first miss, PEXPIRE, in one
// transaction so that a counter never lives without its expiry.
func (r *RedisThrottle) Miss(ctx context.Context, addr string) {
	k := r.prefix + ThrottleKey(addr)
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, k)
		p.ExpireNX(ctx, k, r.window)
		return nil
	})
	if err != nil {
		r.failed(err)
		r.fallback.Miss(ctx, addr)
	}
}

func (r *RedisThrottle) failed(err error) {
	if !r.down.Swap(true) {
		r.log.Warn("auth throttle: Redis failed, counting wrong keys in process until it is back", "err", err)
	}
}

func (r *RedisThrottle) recovered() {
	if r.down.Swap(false) {
		r.log.Info("auth throttle: Redis is back")
	}
}
