package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// Response headers of docs/spec.md 8 and docs/api-decisions.md "Rate limits".
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

// Verdict is the limiter's answer for one authenticated request: the header values every
// such response carries (empty: not set) and, for a refused request, the error to answer
// (429 rate_limited, or 503 rate_limit_unavailable).
type Verdict struct {
	Limit, Remaining, Reset, RetryAfter string
	// Refusal is nil for an admitted request.
	Refusal *apierr.Error
}

// Check counts one request of id against its key's budget. A fail-closed limiter whose
// backend is down refuses with 503 and Retry-After; a limiter error of any other kind lets
// the request through (logged): the limiter protects the API, it must not become the reason
// it fails. Middleware decides through it.
func Check(ctx context.Context, l Limiter, plans Plans, id Identity, log *slog.Logger) Verdict {
	limit := plans.For(id.Environment, id.Plan)
	res, err := l.Allow(ctx, "key:"+id.KeyID, limit)
	switch {
	case errors.Is(err, ErrUnavailable):
		return Verdict{Limit: strconv.Itoa(limit.Rate), RetryAfter: "1",
			Refusal: &apierr.Error{Code: apierr.RateLimitUnavailable, Message: "the rate limiter is unavailable and the gateway is configured to fail closed; retry shortly"}}
	case err != nil:
		if ctx.Err() == nil && log != nil {
			log.Error("rate limit check failed, request let through", "key_id", id.KeyID, "err", err)
		}
		return Verdict{}
	}
	// The three numbers are formatted into one string and sliced: one allocation per
	// request instead of three.
	var buf [64]byte
	b := strconv.AppendInt(buf[:0], int64(limit.Rate), 10)
	i := len(b)
	b = strconv.AppendInt(b, int64(res.Remaining), 10)
	j := len(b)
	b = strconv.AppendInt(b, seconds(res.ResetAfter), 10)
	all := string(b)
	v := Verdict{Limit: all[:i], Remaining: all[i:j], Reset: all[j:]}
	if !res.Allowed {
		retry := max(seconds(res.RetryAfter), 1)
		v.RetryAfter = strconv.FormatInt(retry, 10)
		v.Refusal = apierr.New(apierr.RateLimited, "rate limit of %d requests per %s exceeded for this API key; retry after %d s", limit.Rate, limit.Per(), retry)
	}
	return v
}

// Headers calls set for each header of the verdict that has a value.
func (v Verdict) Headers(set func(name, value string)) {
	for _, h := range [...]struct{ name, value string }{{HeaderLimit, v.Limit}, {HeaderRemaining, v.Remaining}, {HeaderReset, v.Reset}, {HeaderRetryAfter, v.RetryAfter}} {
		if h.value != "" {
			set(h.name, h.value)
		}
	}
}

// setHeaders sets the verdict's headers on h (names canonical already) with one
// allocation for all their values: each header gets a capacity-1 window of one array, so
// a later Add to one of them copies instead of writing into its neighbour.
func (v Verdict) setHeaders(h http.Header) {
	vals := new([4]string)
	for i, hv := range [...]struct{ name, value string }{{HeaderLimit, v.Limit}, {HeaderRemaining, v.Remaining}, {HeaderReset, v.Reset}, {HeaderRetryAfter, v.RetryAfter}} {
		if hv.value != "" {
			vals[i] = hv.value
			h[hv.name] = vals[i : i+1 : i+1]
		}
	}
}

// Middleware counts each authenticated request against its key's budget (Check), sets the
// x-ratelimit-* headers on every such response, and answers 429 rate_limited with
// Retry-After when the budget is spent, or 503 when a fail-closed limiter is down.
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
		v := Check(c.Request.Context(), l, plans, id, log)
		v.setHeaders(c.Writer.Header())
		if v.Refusal != nil {
			// The one error writer (pkg/apierr): the same envelope, Content-Type, no-store
			// and nosniff as every other error; the x-ratelimit-* and Retry-After headers
			// set above stay.
			c.Abort()
			apierr.Write(c.Writer, v.Refusal)
			return
		}
		c.Next()
	}
}
