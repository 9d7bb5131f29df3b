// Package ratelimit counts requests per API key (docs/api-decisions.md "Rate limits") with GCRA, in Redis
// through redis_rate so that every gateway replica shares one budget, or in process for the
// embedded default, behind one Limiter interface; it also holds the wrappers that make the
// Redis path fast (Batcher) and survivable (Fallback), the plan table, and the Gin middleware
// that sets the x-ratelimit-* headers.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limit is a GCRA budget: Rate requests per Period, of which at most Burst at once.
type Limit struct {
	Rate   int
	Period time.Duration
	Burst  int
}

// PerHour is rate requests an hour with a burst of the whole budget, the form docs/spec.md 8 uses.
func PerHour(rate int) Limit { return Limit{Rate: rate, Period: time.Hour, Burst: rate} }

// Interval is the time one request's worth of budget takes to come back.
func (l Limit) Interval() time.Duration {
	if l.Rate <= 0 {
		return 0
	}
	return l.Period / time.Duration(l.Rate)
}

// ErrInvalidLimit wraps every error of Limit.Validate.
var ErrInvalidLimit = errors.New("invalid rate limit")

// Validate reports a limit that cannot be enforced.
func (l Limit) Validate() error {
	switch {
	case l.Rate <= 0:
		return fmt.Errorf("%w: rate %d must be positive", ErrInvalidLimit, l.Rate)
	case l.Period <= 0:
		return fmt.Errorf("%w: period %s must be positive", ErrInvalidLimit, l.Period)
	case l.Burst <= 0:
		return fmt.Errorf("%w: burst %d must be positive", ErrInvalidLimit, l.Burst)
	case l.Interval() <= 0:
		return fmt.Errorf("%w: rate %d per %s is finer than a nanosecond", ErrInvalidLimit, l.Rate, l.Period)
	}
	return nil
}

// Per names the period for messages: "hour", "minute", "second", "day", or a duration.
func (l Limit) Per() string {
	switch l.Period {
	case time.Second:
		return "second"
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	}
	return l.Period.String()
}

func (l Limit) String() string {
	return fmt.Sprintf("%d/%s(burst %d)", l.Rate, l.Period, l.Burst)
}

// Result is the decision on one request.
type Result struct {
	Limit   Limit
	Allowed bool
	// Remaining is how many more requests would be allowed right now.
	Remaining int
	// RetryAfter is how long a refused request must wait (0 when allowed).
	RetryAfter time.Duration
	// ResetAfter is how long until the budget is full again.
	ResetAfter time.Duration
}

// Batch is the decision on up to n requests taken at once: the first Allowed of them pass.
type Batch struct {
	Limit      Limit
	Allowed    int
	Remaining  int // after the allowed ones
	RetryAfter time.Duration
	ResetAfter time.Duration
}

// Result returns the decision of the i-th request (from 0) of the batch, so that each caller
// of a batch sees the remaining count and reset time it would have seen alone.
func (b Batch) Result(i int) Result {
	if i >= b.Allowed {
		retry := b.RetryAfter
		if retry <= 0 {
			// The batch ran out part way: the next unit comes back after one interval
			// minus the slack the last allowed unit left.
			retry = b.Limit.Interval()
		}
		return Result{Limit: b.Limit, Allowed: false, Remaining: 0, RetryAfter: retry, ResetAfter: b.ResetAfter}
	}
	later := b.Allowed - 1 - i // requests of the batch allowed after this one
	reset := b.ResetAfter - time.Duration(later)*b.Limit.Interval()
	if reset < 0 {
		reset = 0
	}
	return Result{Limit: b.Limit, Allowed: true, Remaining: b.Remaining + later, ResetAfter: reset}
}

// Limiter decides whether a request of key fits its budget. Implementations are safe for
// concurrent use.
type Limiter interface {
	Allow(ctx context.Context, key string, l Limit) (Result, error)
}

// Backend is a Limiter that can also decide on several requests in one step, which is what
// lets a Batcher answer many concurrent requests of one key with one Redis round trip.
type Backend interface {
	Limiter
	// AllowUpTo takes up to n requests from the budget and says how many it took.
	AllowUpTo(ctx context.Context, key string, l Limit, n int) (Batch, error)
}

// ErrUnavailable is returned by a fail-closed Fallback while its primary limiter is down.
var ErrUnavailable = errors.New("rate limiter unavailable")

// DevelopmentLimit returns the development keys' budget, 1000 requests an hour (docs/spec.md 8).
func DevelopmentLimit() Limit { return PerHour(1000) }

// Plans maps production plans to budgets. A production key whose plan is not listed gets
// the "default" plan when one is configured, else the development budget.
type Plans map[string]Limit

// ParsePlans parses RATE_LIMIT_PLANS, e.g. "free=1000/h,pro=10000/h". A unit is s, m, h or
// d (also second, minute, hour, day); an optional ":burst" follows, e.g. "pro=10000/h:500".
// The burst defaults to the rate, as in docs/spec.md's "1000 requests per hour".
func ParsePlans(s string) (Plans, error) {
	out := Plans{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, spec, ok := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("rate limit plan %q: want name=rate/unit, e.g. pro=10000/h", item)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("rate limit plan %q: given twice", name)
		}
		l, err := ParseLimit(spec)
		if err != nil {
			return nil, fmt.Errorf("rate limit plan %q: %w", name, err)
		}
		out[name] = l
	}
	return out, nil
}

// ParseLimit parses "1000/h" or "1000/h:100" (burst).
func ParseLimit(spec string) (Limit, error) {
	spec = strings.TrimSpace(spec)
	rateS, rest, ok := strings.Cut(spec, "/")
	if !ok {
		return Limit{}, fmt.Errorf("%q: want rate/unit, e.g. 1000/h", spec)
	}
	unit, burstS, hasBurst := strings.Cut(rest, ":")
	rate, err := strconv.Atoi(strings.TrimSpace(rateS))
	if err != nil || rate <= 0 {
		return Limit{}, fmt.Errorf("%q: rate %q is not a positive integer", spec, rateS)
	}
	var period time.Duration
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "s", "sec", "second":
		period = time.Second
	case "m", "min", "minute":
		period = time.Minute
	case "h", "hour":
		period = time.Hour
	case "d", "day":
		period = 24 * time.Hour
	default:
		return Limit{}, fmt.Errorf("%q: unit %q is not one of s, m, h, d", spec, unit)
	}
	l := Limit{Rate: rate, Period: period, Burst: rate}
	if hasBurst {
		b, err := strconv.Atoi(strings.TrimSpace(burstS))
		if err != nil || b <= 0 {
			return Limit{}, fmt.Errorf("%q: burst %q is not a positive integer", spec, burstS)
		}
		l.Burst = b
	}
	if err := l.Validate(); err != nil {
		return Limit{}, fmt.Errorf("%q: %w", spec, err)
	}
	return l, nil
}

// For returns the budget of a key of the given environment and plan.
func (p Plans) For(environment, plan string) Limit {
	if environment != "production" {
		return DevelopmentLimit()
	}
	if l, ok := p[plan]; ok {
		return l
	}
	if l, ok := p["default"]; ok {
		return l
	}
	return DevelopmentLimit()
}

// seconds rounds d up to whole seconds, the unit of the x-ratelimit-reset and Retry-After
// headers: rounding down would tell a client to come back before it may.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(math.Ceil(d.Seconds()))
}
