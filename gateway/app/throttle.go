package app

import (
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/config"
)

// newKeyThrottle is the wrong-key throttle of the authenticator (docs/security.md): in
// Redis when REDIS_URL is set, so that every replica counts an address's wrong keys
// together, in process otherwise. It has its own small Redis client, apart from the rate
// limiter's batching one, so that neither waits for the other.
func newKeyThrottle(cfg config.Config, log *slog.Logger) (auth.Throttle, func() error, error) {
	if cfg.RedisURL == "" {
		return auth.NewMemoryThrottle(0, 0, nil), func() error { return nil }, nil
	}
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	opt.PoolSize = 4
	rdb := redis.NewClient(opt)
	return auth.NewRedisThrottle(rdb, redisKeyPrefix, 0, 0, log), rdb.Close, nil
}
