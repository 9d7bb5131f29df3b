package live

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// KeyPrefix namespaces the logs in a shared Redis: one stream per service,
// <prefix>live:<service id>.
const KeyPrefix = "sensorgate:"

// Redis is the log as a Redis Stream shared by every replica of a service: entry ids are
// the positions (Redis orders them across writers), XADD trims by MINID to Retention, and
// the log outlives service restarts.
type Redis struct {
	rdb       redis.UniversalClient
	key       string
	retention time.Duration
	now       func() time.Time
	owned     bool
}

// NewRedis returns the log of service serviceID in the Redis at url (redis://...).
// prefix "" takes KeyPrefix; tests give each their own.
func NewRedis(ctx context.Context, url, prefix, serviceID string) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("live: REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("live: Redis at %s does not answer: %w", opt.Addr, err)
	}
	if prefix == "" {
		prefix = KeyPrefix
	}
	return &Redis{rdb: rdb, key: prefix + "live:" + serviceID, retention: Retention, now: time.Now, owned: true}, nil
}

// Backend implements Log.
func (r *Redis) Backend() string { return "redis" }

// Close implements Log.
func (r *Redis) Close() error {
	if r.owned {
		return r.rdb.Close()
	}
	return nil
}

// Append implements Log: one pipelined round trip of XADDs, in order.
func (r *Redis) Append(ctx context.Context, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	minID := strconv.FormatInt(r.now().Add(-r.retention).UnixMilli(), 10)
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range entries {
			p.XAdd(ctx, &redis.XAddArgs{Stream: r.key, MinID: minID, Approx: true, ID: "*", Values: []any{"e", e.Body}})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("live: XADD %s: %w", r.key, err)
	}
	return nil
}

// Read implements Log.
func (r *Redis) Read(ctx context.Context, after *contract.Position, limit int, wait time.Duration) (Page, error) {
	if limit <= 0 {
		limit = contract.DefaultEventsLimit
	}
	var p Page
	if after != nil {
		block := time.Duration(-1) // no BLOCK argument: answer at once
		if wait > 0 {
			block = max(wait, time.Millisecond)
		}
		res, err := r.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{r.key, after.String()}, Count: int64(limit), Block: block}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return p, fmt.Errorf("live: XREAD %s: %w", r.key, err)
		}
		for _, s := range res {
			for _, m := range s.Messages {
				pos, err := contract.ParsePosition(m.ID)
				if err != nil {
					return p, fmt.Errorf("live: entry id %q: %w", m.ID, err)
				}
				body, _ := m.Values["e"].(string)
				p.Positions = append(p.Positions, pos)
				p.Entries = append(p.Entries, Entry{Body: []byte(body)})
			}
		}
	}
	// The head and the oldest entry: one round trip after the read, so that Last is never
	// before the entries returned.
	var head, first *redis.XMessageSliceCmd
	_, err := r.rdb.Pipelined(ctx, func(pp redis.Pipeliner) error {
		head = pp.XRevRangeN(ctx, r.key, "+", "-", 1)
		first = pp.XRangeN(ctx, r.key, "-", "+", 1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return p, fmt.Errorf("live: head of %s: %w", r.key, err)
	}
	if h := head.Val(); len(h) > 0 {
		if p.Last, err = contract.ParsePosition(h[0].ID); err != nil {
			return p, err
		}
	}
	// An empty stream leaves Last at 0-0: everything appended later is after it.
	if f := first.Val(); len(f) > 0 {
		o, err := contract.ParsePosition(f[0].ID)
		if err != nil {
			return p, err
		}
		p.Oldest = &o
	}
	if n := len(p.Positions); n > 0 && p.Last.Compare(p.Positions[n-1]) < 0 {
		p.Last = p.Positions[n-1]
	}
	return p, nil
}
