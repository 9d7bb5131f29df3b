package stream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisLimiter caps the concurrent streams of each key across every gateway replica
// sharing one Redis (docs/live.md "Limits"). Each key has a sorted set of the ids of its
// open streams scored by lease expiry (Redis server time, in ms, so replicas' clocks do
// not matter). Acquire drops the expired members and adds one if fewer than max remain,
// atomically (one Lua script); one refresher per replica renews the leases of all its
// open streams in one pipeline every lease/3, so the streams of a replica that was killed
// without releasing them expire within one lease. When Redis does not answer, the cap
// falls back to this replica's own count (Fallback), logged: a Redis outage must not close
// the streams (docs/live.md).
type RedisLimiter struct {
	rdb      redis.UniversalClient
	prefix   string
	lease    time.Duration
	fallback *MemoryLimiter
	log      *slog.Logger
	timeout  time.Duration

	mu   sync.Mutex
	held map[string]string // stream id -> its set's key
	stop chan struct{}
	done chan struct{}
}

// DefaultLease is the lease of one stream's slot in Redis when none is given: three
// default heartbeats.
const DefaultLease = 3 * DefaultHeartbeat

// acquireScript: KEYS[1] the key's set; ARGV: stream id, max, lease ms. Returns 1 when the
// slot was taken, 0 when the key holds max live streams already.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[3]))
return 1
`)

// renewScript: KEYS the sets, ARGV[1] lease ms, then one stream id per key. Members are
// re-added when missing (an outage longer than a lease pruned them): the streams are open.
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local exp = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i, k in ipairs(KEYS) do
  redis.call('ZADD', k, exp, ARGV[i + 1])
  redis.call('PEXPIRE', k, 2 * tonumber(ARGV[1]))
end
return #KEYS
`)

// NewRedisLimiter returns a limiter keeping its sets under prefix ("<prefix>streams:<key>")
// with the given lease (DefaultLease when <= 0), and starts its refresher; Close stops it.
func NewRedisLimiter(rdb redis.UniversalClient, prefix string, lease time.Duration, log *slog.Logger) *RedisLimiter {
	if lease <= 0 {
		lease = DefaultLease
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &RedisLimiter{rdb: rdb, prefix: prefix + "streams:", lease: lease, fallback: NewMemoryLimiter(), log: log,
		timeout: 2 * time.Second, held: map[string]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	go l.refresh()
	return l
}

// Acquire implements Limiter.
func (l *RedisLimiter) Acquire(ctx context.Context, key string, max int) (func(), error) {
	id, err := newStreamID()
	if err != nil {
		return nil, err
	}
	set := l.prefix + key
	rctx, cancel := context.WithTimeout(ctx, l.timeout)
	ok, err := acquireScript.Run(rctx, l.rdb, []string{set}, id, max, l.lease.Milliseconds()).Int()
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		l.log.WarnContext(ctx, "stream cap: Redis does not answer; counting this replica's streams only", "err", err)
		return l.fallback.Acquire(ctx, key, max)
	}
	if ok == 0 {
		return nil, ErrTooMany
	}
	l.mu.Lock()
	l.held[id] = set
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.held, id)
			l.mu.Unlock()
			// The stream's context is over by now: release under a context of its own.
			rctx, cancel := context.WithTimeout(context.Background(), l.timeout)
			defer cancel()
			if err := l.rdb.ZRem(rctx, set, id).Err(); err != nil {
				l.log.Warn("stream cap: release in Redis failed; the slot expires with its lease", "lease", l.lease, "err", err)
			}
		})
	}, nil
}

// refresh renews the leases of this replica's open streams every lease/3.
func (l *RedisLimiter) refresh() {
	defer close(l.done)
	t := time.NewTicker(l.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		if err := l.Renew(context.Background()); err != nil {
			l.log.Warn("stream cap: renewing leases in Redis failed", "err", err)
		}
	}
}

// renewBatch bounds the keys of one renew script call.
const renewBatch = 500

// Renew extends the lease of every stream this replica holds (the refresher calls it;
// exported for tests).
func (l *RedisLimiter) Renew(ctx context.Context) error {
	l.mu.Lock()
	keys := make([]string, 0, len(l.held))
	args := make([]any, 1, len(l.held)+1)
	args[0] = l.lease.Milliseconds()
	for id, set := range l.held {
		keys = append(keys, set)
		args = append(args, id)
	}
	l.mu.Unlock()
	for len(keys) > 0 {
		n := min(len(keys), renewBatch)
		rctx, cancel := context.WithTimeout(ctx, l.timeout)
		err := renewScript.Run(rctx, l.rdb, keys[:n], append(args[:1:1], args[1:n+1]...)...).Err()
		cancel()
		if err != nil {
			return fmt.Errorf("renew %d stream leases: %w", n, err)
		}
		keys, args = keys[n:], append(args[:1:1], args[n+1:]...)
	}
	return nil
}

// Close stops the refresher (the slots still held expire with their lease).
func (l *RedisLimiter) Close() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

func newStreamID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("stream id: %w", err)
	}
	return hex.EncodeToString(b), nil
}
