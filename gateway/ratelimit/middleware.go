package ratelimit

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// Response headers of SPEC.md 8 and API.md "Rate limits".
const (
	HeaderLimit      = "X-Ratelimit-Limit"
	HeaderRemaining  = "X-Ratelimit-Remaining"
	HeaderReset      = "X-Ratelimit-Reset"
	HeaderRetryAfter = "Retry-After"
)

// Identity is what the limiter needs to know of an authenticated caller.
type Identity struct {
	KeyID       string // the key's id, never the secret
	Environment string // development | production
	Plan        string
}

// IdentityFunc returns the caller that the auth middleware (which runs first) established;
// ok is false on a request that is not authenticated, which the middleware lets through
// untouched (the auth middleware has answered it already).
type IdentityFunc func(c *gin.Context) (id Identity, ok bool)

// Middleware counts each authenticated request against its key's budget, sets the
// x-ratelimit-* headers on every such response, and answers 429 rate_limited with
// Retry-After when the budget is spent. A fail-closed limiter whose backend is down gives
// 503 with Retry-After. A limiter error of any other kind lets the request through (logged):
// the limiter protects the API, it must not become the reason it fails.
func Middleware(l Limiter, plans Plans, identify IdentityFunc, log *slog.Logger) gin.HandlerFunc {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(c *gin.Context) {
		id, ok := identify(c)
		if !ok {
			c.Next()
			return
		}
		limit := plans.For(id.Environment, id.Plan)
		res, err := l.Allow(c.Request.Context(), "key:"+id.KeyID, limit)
		h := c.Writer.Header()
		switch {
		case errors.Is(err, ErrUnavailable):
			h.Set(HeaderLimit, strconv.Itoa(limit.Rate))
			h.Set(HeaderRetryAfter, "1")
			abort(c, http.StatusServiceUnavailable, &apierr.Error{Code: "rate_limit_unavailable", Message: "the rate limiter is unavailable and the gateway is configured to fail closed; retry shortly"})
			return
		case err != nil:
			if c.Request.Context().Err() == nil {
				log.Error("rate limit check failed, request let through", "key_id", id.KeyID, "err", err)
			}
			c.Next()
			return
		}
		h.Set(HeaderLimit, strconv.Itoa(limit.Rate))
		h.Set(HeaderRemaining, strconv.Itoa(res.Remaining))
		h.Set(HeaderReset, strconv.FormatInt(seconds(res.ResetAfter), 10))
		if !res.Allowed {
			h.Set(HeaderRetryAfter, strconv.FormatInt(max(seconds(res.RetryAfter), 1), 10))
			abort(c, http.StatusTooManyRequests, apierr.New(apierr.RateLimited,
				"rate limit of %d requests per %s exceeded for this API key; retry after %d s", limit.Rate, limit.Per(), max(seconds(res.RetryAfter), 1)))
			return
		}
		c.Next()
	}
}

func abort(c *gin.Context, status int, e *apierr.Error) {
	c.Header("Cache-Control", "no-store")
	c.AbortWithStatusJSON(status, e)
}
