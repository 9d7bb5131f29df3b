package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sensorgate/sensorgate/pkg/settings"
)

// DefaultRetryEvery is how often a degraded Fallback tries its primary again.
const DefaultRetryEvery = time.Second

// FallbackOptions tune a Fallback.
type FallbackOptions struct {
	// FailClosed refuses every request with ErrUnavailable while the primary is down,
	// instead of counting them locally (RATE_LIMIT_FAIL_CLOSED).
	FailClosed bool
	// RetryEvery is how often one request tries the primary again while degraded.
	RetryEvery time.Duration
	// Registerer receives the limiter metrics; nil registers nothing.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Name says what the primary is ("redis"), for Status and logs.
	Name string
}

// Status is the limiter's state, for /readyz detail.
type Status struct {
	Backend    string    `json:"backend"`
	Degraded   bool      `json:"degraded"`
	FailClosed bool      `json:"fail_closed"`
	Since      time.Time `json:"since,omitzero"`
	LastError  string    `json:"last_error,omitempty"`
}

// Fallback decides with its primary (Redis) and, when the primary fails, with a local
// limiter (or refuses, fail-closed) until the primary answers again: a Redis outage degrades
// rate limiting to per-replica budgets instead of taking the API down. While degraded, one
// request per RetryEvery tries the primary, so recovery needs no restart and a dead Redis
// costs at most one timeout per interval.
type Fallback struct {
	primary Limiter
	local   Limiter
	opt     FallbackOptions

	degraded atomic.Bool
	nextTry  atomic.Int64 // unix nanoseconds

	mu        sync.Mutex
	since     time.Time
	lastError string

	degradedGauge prometheus.Gauge
	backendErrors prometheus.Counter
	decisions     *prometheus.CounterVec
	// The decision counters by result and source, bound once: no label lookup per request.
	allowedPrimary, limitedPrimary, allowedLocal, limitedLocal, unavailableLocal prometheus.Counter
}

var _ Limiter = (*Fallback)(nil)

// NewFallback wraps primary with local as the fallback.
func NewFallback(primary, local Limiter, opt FallbackOptions) (*Fallback, error) {
	settings.Default(&opt.RetryEvery, DefaultRetryEvery)
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Name == "" {
		opt.Name = "redis"
	}
	f := &Fallback{
		primary: primary,
		local:   local,
		opt:     opt,
		degradedGauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sensorgate_ratelimit_degraded",
			Help: "1 while the shared rate limiter (Redis) is unreachable and the gateway counts locally (or refuses, fail-closed).",
		}),
		backendErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sensorgate_ratelimit_backend_errors_total",
			Help: "Rate limiter calls to the shared backend that failed.",
		}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sensorgate_ratelimit_decisions_total",
			Help: "Rate limit decisions by result (allowed, limited, unavailable) and by where they were made (primary, local).",
		}, []string{"result", "source"}),
	}
	f.allowedPrimary, f.limitedPrimary = f.decisions.WithLabelValues("allowed", "primary"), f.decisions.WithLabelValues("limited", "primary")
	f.allowedLocal, f.limitedLocal = f.decisions.WithLabelValues("allowed", "local"), f.decisions.WithLabelValues("limited", "local")
	f.unavailableLocal = f.decisions.WithLabelValues("unavailable", "local")
	if opt.Registerer != nil {
		for _, c := range []prometheus.Collector{f.degradedGauge, f.backendErrors, f.decisions} {
			if err := opt.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("register rate limit metrics: %w", err)
			}
		}
	}
	return f, nil
}

// Allow implements Limiter.
func (f *Fallback) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	if f.degraded.Load() {
		now := time.Now().UnixNano()
		next := f.nextTry.Load()
		if now < next || !f.nextTry.CompareAndSwap(next, now+int64(f.opt.RetryEvery)) {
			return f.fallback(ctx, key, l)
		}
		// This request probes the primary.
	}
	res, err := f.primary.Allow(ctx, key, l)
	if err == nil {
		if f.degraded.Load() {
			f.recovered()
		}
		f.count(res, f.allowedPrimary, f.limitedPrimary)
		return res, nil
	}
	if ctx.Err() != nil {
		// The client went away; that says nothing about the primary.
		return Result{}, fmt.Errorf("rate limit: %w", ctx.Err())
	}
	if errors.Is(err, ErrInvalidLimit) {
		return Result{}, err
	}
	f.backendErrors.Inc()
	f.degrade(err)
	return f.fallback(ctx, key, l)
}

func (f *Fallback) fallback(ctx context.Context, key string, l Limit) (Result, error) {
	if f.opt.FailClosed {
		f.unavailableLocal.Inc()
		return Result{Limit: l}, ErrUnavailable
	}
	res, err := f.local.Allow(ctx, key, l)
	if err != nil {
		return Result{}, fmt.Errorf("local rate limit: %w", err)
	}
	f.count(res, f.allowedLocal, f.limitedLocal)
	return res, nil
}

func (f *Fallback) count(res Result, allowed, limited prometheus.Counter) {
	if res.Allowed {
		allowed.Inc()
	} else {
		limited.Inc()
	}
}

func (f *Fallback) degrade(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastError = err.Error()
	if f.degraded.Load() {
		return
	}
	f.since = time.Now()
	f.nextTry.Store(time.Now().Add(f.opt.RetryEvery).UnixNano())
	f.degraded.Store(true)
	f.degradedGauge.Set(1)
	mode := "counting locally"
	if f.opt.FailClosed {
		mode = "refusing requests (fail-closed)"
	}
	f.opt.Logger.Warn("rate limiter backend down, "+mode, "backend", f.opt.Name, "err", err)
}

func (f *Fallback) recovered() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.degraded.Load() {
		return
	}
	f.degraded.Store(false)
	f.degradedGauge.Set(0)
	f.opt.Logger.Info("rate limiter backend back", "backend", f.opt.Name, "down_for", time.Since(f.since).Round(time.Millisecond))
	f.since = time.Time{}
}

// Status reports the limiter's state.
func (f *Fallback) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := Status{Backend: f.opt.Name, Degraded: f.degraded.Load(), FailClosed: f.opt.FailClosed}
	if s.Degraded {
		s.Since = f.since
		s.LastError = f.lastError
	}
	return s
}
