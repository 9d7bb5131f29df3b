package app

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/sensorgate/sensorgate/gateway/config"
)

// newRedis is the process's one Redis client, nil without REDIS_URL (the embedded
// default counts in process): the rate limiter, the wrong-key throttle and the stream cap
// share its connection pool, sized by REDIS_URL's pool_size (go-redis: 10 per CPU by
// default), so that one gateway holds one pool against Redis, not one per feature.
func newRedis(cfg config.Config) (*redis.Client, error) {
	if cfg.RedisURL == "" {
		return nil, nil
	}
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	return redis.NewClient(opt), nil
}
