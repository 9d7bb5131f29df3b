package app

import (
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/sensorgate/sensorgate/gateway/auth"
)

// newKeyThrottle is the wrong-key throttle of the authenticator (docs/security.md): in
// Redis when the gateway has one (rdb), so that every replica counts an address's wrong
// keys together, in process otherwise.
func newKeyThrottle(rdb *redis.Client, log *slog.Logger) auth.Throttle {
	if rdb == nil {
		return auth.NewMemoryThrottle(0, 0, nil)
	}
	return auth.NewRedisThrottle(rdb, redisKeyPrefix, 0, 0, log)
}
