package ratelimit

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// DefaultRedisTimeout bounds one limiter call to Redis: a Redis that hangs must cost a
// request a fraction of its budget, then the Fallback takes over.
const DefaultRedisTimeout = 250 * time.Millisecond

// Redis is the shared limiter: GCRA state lives in Redis under "rate:"+prefix+key, so every
// gateway replica draws on one budget. Single requests go through redis_rate's script;
// batches go through allowUpTo, which keeps the same state in the same key.
type Redis struct {
	rdb     redis.UniversalClient
	rl      *redis_rate.Limiter
	prefix  string
	timeout time.Duration
}

var _ Backend = (*Redis)(nil)

// NewRedis returns a limiter on rdb. prefix namespaces the keys (e.g. "sensorgate:"), and
// timeout bounds each call (DefaultRedisTimeout when zero).
func NewRedis(rdb redis.UniversalClient, prefix string, timeout time.Duration) *Redis {
	if timeout <= 0 {
		timeout = DefaultRedisTimeout
	}
	return &Redis{rdb: rdb, rl: redis_rate.NewLimiter(rdb), prefix: prefix, timeout: timeout}
}

// Allow implements Limiter with one redis_rate call.
func (r *Redis) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	if err := l.Validate(); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	res, err := r.rl.AllowN(ctx, r.prefix+key, redis_rate.Limit{Rate: l.Rate, Burst: l.Burst, Period: l.Period}, 1)
	if err != nil {
		return Result{}, fmt.Errorf("redis rate limit %q: %w", key, err)
	}
	out := Result{Limit: l, Allowed: res.Allowed > 0, Remaining: remainingFrom(l, res.ResetAfter), ResetAfter: max(res.ResetAfter, 0)}
	if !out.Allowed {
		out.RetryAfter = max(res.RetryAfter, time.Millisecond)
	}
	return out, nil
}

// AllowUpTo implements Backend: n requests decided in one round trip.
func (r *Redis) AllowUpTo(ctx context.Context, key string, l Limit, n int) (Batch, error) {
	if err := l.Validate(); err != nil {
		return Batch{}, err
	}
	if n <= 1 {
		res, err := r.Allow(ctx, key, l)
		if err != nil {
			return Batch{}, err
		}
		b := Batch{Limit: l, Remaining: res.Remaining, RetryAfter: res.RetryAfter, ResetAfter: res.ResetAfter}
		if res.Allowed {
			b.Allowed = 1
		}
		return b, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	v, err := allowUpTo.Run(ctx, r.rdb, []string{"rate:" + r.prefix + key}, l.Burst, l.Rate, l.Period.Seconds(), n).Slice()
	if err != nil {
		return Batch{}, fmt.Errorf("redis rate limit %q (batch of %d): %w", key, n, err)
	}
	if len(v) != 4 {
		return Batch{}, fmt.Errorf("redis rate limit %q: script answered %d values, want 4", key, len(v))
	}
	allowed, ok1 := v[0].(int64)
	remaining, ok2 := v[1].(int64)
	retryS, ok3 := v[2].(string)
	resetS, ok4 := v[3].(string)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return Batch{}, fmt.Errorf("redis rate limit %q: unexpected script answer %v", key, v)
	}
	retry, err := strconv.ParseFloat(retryS, 64)
	if err != nil {
		return Batch{}, fmt.Errorf("redis rate limit %q: retry_after %q: %w", key, retryS, err)
	}
	reset, err := strconv.ParseFloat(resetS, 64)
	if err != nil {
		return Batch{}, fmt.Errorf("redis rate limit %q: reset_after %q: %w", key, resetS, err)
	}
	b := Batch{Limit: l, Allowed: int(allowed), Remaining: int(remaining), ResetAfter: max(secondsDur(reset), 0)}
	if b.Allowed == 0 {
		b.RetryAfter = max(secondsDur(retry), time.Millisecond)
	}
	return b, nil
}

// Ping reports whether Redis answers, for readiness checks.
func (r *Redis) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := r.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	return nil
}

// remainingFrom derives the remaining count from the time until the budget is full:
// redis_rate truncates a float that rounding leaves a hair under the whole number (3.6 s
// per request of 1000/h is not exact in binary), which would show 998 after the first
// request of 1000. The decision itself is redis_rate's; only the reported count is
// corrected.
func remainingFrom(l Limit, resetAfter time.Duration) int {
	if resetAfter <= 0 {
		return l.Burst
	}
	used := math.Ceil(resetAfter.Seconds()/l.Interval().Seconds() - 1e-6)
	return max(l.Burst-int(used), 0)
}

func secondsDur(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// allowUpTo is redis_rate's GCRA (same key, same epoch, same stored theoretical arrival
// time) deciding on up to n requests at once. Unlike redis_rate's allowAtMost it takes only
// whole requests, so a batch never consumes a fraction of budget it does not admit. The
// 1e-6 slack absorbs float rounding of the 16-digit clock (a request may pass some
// microseconds early; never more than the budget over a period).
var allowUpTo = redis.NewScript(`
redis.replicate_commands()

local key = KEYS[1]
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local n = tonumber(ARGV[4])

local emission_interval = period / rate
local burst_offset = emission_interval * burst

local jan_1_2017 = 1483228800
local now = redis.call("TIME")
now = (now[1] - jan_1_2017) + (now[2] / 1000000)

local tat = redis.call("GET", key)
if not tat then
  tat = now
else
  tat = tonumber(tat)
end
tat = math.max(tat, now)

local diff = now - (tat - burst_offset)
local remaining = math.floor(diff / emission_interval + 1e-6)
if remaining < 1 then
  return {0, 0, tostring(emission_interval - diff), tostring(tat - now)}
end

local cost = math.min(n, remaining)
local new_tat = tat + emission_interval * cost
local reset_after = new_tat - now
if reset_after > 0 then
  redis.call("SET", key, new_tat, "EX", math.ceil(reset_after))
end
return {cost, remaining - cost, tostring(-1), tostring(reset_after)}
`)

var _ Refunder = (*Redis)(nil)

// Refund gives back n requests taken with AllowUpTo but not spent: the stored theoretical
// arrival time moves back n intervals, never before now (a budget cannot be fuller than
// full). Requests taken since by anyone stay counted, so refunds never admit more than the
// budget.
func (r *Redis) Refund(ctx context.Context, key string, l Limit, n int) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if n <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := refund.Run(ctx, r.rdb, []string{"rate:" + r.prefix + key}, l.Burst, l.Rate, l.Period.Seconds(), n).Err(); err != nil {
		return fmt.Errorf("redis rate limit %q: refund %d: %w", key, n, err)
	}
	return nil
}

var refund = redis.NewScript(`
redis.replicate_commands()

local key = KEYS[1]
local rate = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local emission_interval = period / rate

local tat = redis.call("GET", key)
if not tat then
  return 0
end
local jan_1_2017 = 1483228800
local now = redis.call("TIME")
now = (now[1] - jan_1_2017) + (now[2] / 1000000)

local new_tat = math.max(tonumber(tat) - emission_interval * n, now)
local reset_after = new_tat - now
if reset_after > 0 then
  redis.call("SET", key, new_tat, "EX", math.ceil(reset_after))
else
  redis.call("DEL", key)
end
return 1
`)
