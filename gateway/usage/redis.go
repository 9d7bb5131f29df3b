package usage

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// hashTTL keeps an hour's shared counters long enough for the copier to read them after
// the hour ends, whatever a replica's downtime.
const hashTTL = 48 * time.Hour

// Redis is the shared counter of every replica: one hash per hour, a field per key id.
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewRedis returns the shared counters under prefix (e.g. "sensorgate:").
func NewRedis(rdb redis.UniversalClient, prefix string) *Redis {
	return &Redis{rdb: rdb, prefix: prefix + "usage:"}
}

func (r *Redis) hashKey(hour time.Time) string {
	return r.prefix + strconv.FormatInt(hour.UTC().Truncate(time.Hour).Unix(), 10)
}

// AddUsage implements Sink: HINCRBY per key and an EXPIRE, in one pipeline.
func (r *Redis) AddUsage(ctx context.Context, hour time.Time, counts map[uuid.UUID]int64) error {
	k := r.hashKey(hour)
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for id, n := range counts {
			p.HIncrBy(ctx, k, id.String(), n)
		}
		p.Expire(ctx, k, hashTTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("usage: redis HINCRBY: %w", err)
	}
	return nil
}

// Hour returns the shared counts of an hour.
func (r *Redis) Hour(ctx context.Context, hour time.Time) (map[uuid.UUID]int64, error) {
	m, err := r.rdb.HGetAll(ctx, r.hashKey(hour)).Result()
	if err != nil {
		return nil, fmt.Errorf("usage: redis HGETALL: %w", err)
	}
	out := make(map[uuid.UUID]int64, len(m))
	for k, v := range m {
		id, err1 := uuid.Parse(k)
		n, err2 := strconv.ParseInt(v, 10, 64)
		if err1 == nil && err2 == nil {
			out[id] = n
		}
	}
	return out, nil
}

// Keeper is what the copier needs of the catalog.
type Keeper interface {
	SetUsage(ctx context.Context, hour time.Time, counts map[uuid.UUID]int64) error
	PruneUsage(ctx context.Context, before time.Time) (int64, error)
}

// Copier copies the shared counts of the current and the previous hour to the catalog
// (absolute values, so any replica may copy at any time and copies never add up twice),
// and drops hours older than retention.
type Copier struct {
	Redis     *Redis
	Store     Keeper
	Retention time.Duration
	Log       *slog.Logger
	Now       func() time.Time
}

// Copy runs one copy and prune.
func (c *Copier) Copy(ctx context.Context) error {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	hour := now().UTC().Truncate(time.Hour)
	for _, h := range []time.Time{hour.Add(-time.Hour), hour} {
		counts, err := c.Redis.Hour(ctx, h)
		if err != nil {
			return err
		}
		if err := c.Store.SetUsage(ctx, h, counts); err != nil {
			return err
		}
	}
	if c.Retention > 0 {
		if _, err := c.Store.PruneUsage(ctx, hour.Add(-c.Retention)); err != nil {
			return err
		}
	}
	return nil
}

// Run copies every interval until ctx ends.
func (c *Copier) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, interval)
			if err := c.Copy(cctx); err != nil && c.Log != nil {
				c.Log.Warn("usage: copy to the catalog failed; retried at the next interval", "err", err)
			}
			cancel()
		}
	}
}
