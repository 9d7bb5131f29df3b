package app

import (
	"context"
	"errors"
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

// rateLimiting is the limiter middleware and its readiness check.
type rateLimiting struct {
	middleware gin.HandlerFunc
	check      api.Check
	// charge takes n more requests from the caller's budget, as the middleware does for
	// the request itself: what a bulk export pays per started block of rows, and an MCP
	// tool call beyond its POST (gateway/mcp/cost.go).
	charge func(c *gin.Context, n int) error
}

// chargeWith counts n more requests of the caller of c against l, one at a time under
// the same rule and plans as the middleware (each is a local decrement of the Redis
// batcher's lease), and sets the x-ratelimit-* headers to the last one's. A refusal part
// way keeps what was taken: it errs on the side of the budget.
func chargeWith(l ratelimit.Limiter, plans ratelimit.Plans, log *slog.Logger) func(c *gin.Context, n int) error {
	return func(c *gin.Context, n int) error {
		id, ok := auth.FromGin(c)
		if !ok {
			return nil
		}
		for range n {
			v := ratelimit.Check(c.Request.Context(), l, plans, limitIdentity(id), log)
			v.Headers(c.Header)
			if v.Refusal != nil {
				return v.Refusal
			}
		}
		return nil
	}
}

// newRateLimiting counts in Redis (rdb, batched, falling back to local counting or
// refusing when Redis is down) or, without Redis, in process (the embedded default).
func newRateLimiting(cfg config.Config, rdb *redis.Client, reg prometheus.Registerer, log *slog.Logger) (rateLimiting, error) {
	identify := func(c *gin.Context) (ratelimit.Identity, bool) {
		id, ok := auth.FromGin(c)
		if !ok {
			return ratelimit.Identity{}, false
		}
		return limitIdentity(id), true
	}
	local := ratelimit.NewMemory(nil)
	if rdb == nil {
		return rateLimiting{
			middleware: ratelimit.Middleware(local, cfg.RateLimit.Plans, identify, log),
			charge:     chargeWith(local, cfg.RateLimit.Plans, log),
			check: api.Check{Name: "ratelimit", Probe: func(context.Context) (any, error) {
				return ratelimit.Status{Backend: "memory"}, nil
			}},
		}, nil
	}
	primary := ratelimit.NewRedis(rdb, redisKeyPrefix, 0)
	fb, err := ratelimit.NewFallback(ratelimit.NewBatcher(primary, 0, 0), local, ratelimit.FallbackOptions{
		FailClosed: cfg.RateLimit.FailClosed, Registerer: reg, Logger: log, Name: "redis",
	})
	if err != nil {
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
	}, nil
}

// limitIdentity is what the limiter knows of a caller: its key id (never the key), its
// environment and plan.
func limitIdentity(id auth.Identity) ratelimit.Identity {
	return ratelimit.Identity{KeyID: id.KeyIDText, Environment: id.Environment, Plan: id.Plan}
}
