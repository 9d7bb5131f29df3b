package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sensorgate/sensorgate/gateway/api"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/config"
	"github.com/sensorgate/sensorgate/gateway/ratelimit"
)

// redisKeyPrefix namespaces the gateway's counters in a shared Redis.
const redisKeyPrefix = "sensorgate:"

// rateLimiting is the limiter middleware, its readiness check and what to close at exit.
type rateLimiting struct {
	middleware gin.HandlerFunc
	check      api.Check
	// charge takes one more request from the caller's budget, as the middleware does for
	// the request itself: what a bulk export pays per started block of rows.
	charge func(c *gin.Context) error
	close  func() error
	// rdb is the limiter's Redis client (nil without REDIS_URL), shared with the usage
	// counters and the sign-in throttle of the account dashboard.
	rdb redis.UniversalClient
}

// chargeWith counts one more request of the caller of c against l, under the same rule
// and plans as the middleware.
func chargeWith(l ratelimit.Limiter, plans ratelimit.Plans, log *slog.Logger) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		id, ok := auth.FromGin(c)
		if !ok {
			return nil
		}
		v := ratelimit.Check(c.Request.Context(), l, plans, limitIdentity(id), log)
		if v.Refusal != nil {
			return v.Refusal
		}
		return nil
	}
}

// newRateLimiting counts in Redis (REDIS_URL, batched, falling back to local counting or
// refusing when Redis is down) or, without Redis, in process (the embedded default).
func newRateLimiting(cfg config.Config, reg prometheus.Registerer, log *slog.Logger) (rateLimiting, error) {
	identify := func(c *gin.Context) (ratelimit.Identity, bool) {
		id, ok := auth.FromGin(c)
		if !ok {
			return ratelimit.Identity{}, false
		}
		return limitIdentity(id), true
	}
	local := ratelimit.NewMemory(nil)
	if cfg.RedisURL == "" {
		return rateLimiting{
			middleware: ratelimit.Middleware(local, cfg.RateLimit.Plans, identify, log),
			charge:     chargeWith(local, cfg.RateLimit.Plans, log),
			check: api.Check{Name: "ratelimit", Probe: func(context.Context) (any, error) {
				return ratelimit.Status{Backend: "memory"}, nil
			}},
			close: func() error { return nil },
		}, nil
	}
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return rateLimiting{}, fmt.Errorf("REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(opt)
	primary := ratelimit.NewRedis(rdb, redisKeyPrefix, 0)
	fb, err := ratelimit.NewFallback(ratelimit.NewBatcher(primary, 0, 0), local, ratelimit.FallbackOptions{
		FailClosed: cfg.RateLimit.FailClosed, Registerer: reg, Logger: log, Name: "redis",
	})
	if err != nil {
		_ = rdb.Close()
		return rateLimiting{}, err
	}
	return rateLimiting{
		middleware: ratelimit.Middleware(fb, cfg.RateLimit.Plans, identify, log),
		charge:     chargeWith(fb, cfg.RateLimit.Plans, log),
		// Not critical: with Redis down the gateway keeps serving under the local limiter
		// (or refuses, fail-closed), and says so here.
		check: api.Check{Name: "redis", Critical: cfg.RateLimit.FailClosed, Probe: func(ctx context.Context) (any, error) {
			st := fb.Status()
			if err := primary.Ping(ctx); err != nil {
				return st, err
			}
			if st.Degraded {
				return st, errors.New("rate limiting is degraded: " + st.LastError)
			}
			return st, nil
		}},
		close: rdb.Close,
		rdb:   rdb,
	}, nil
}

// limitIdentity is what the limiter knows of a caller: its key id (never the key), its
// environment and plan.
func limitIdentity(id auth.Identity) ratelimit.Identity {
	return ratelimit.Identity{KeyID: id.KeyIDText, Environment: id.Environment, Plan: id.Plan}
}
