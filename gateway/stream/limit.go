package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/ginerr"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// DefaultMaxPerKey is the number of streams one API key may hold open at once
// (docs/live.md); one more is refused with 429.
const DefaultMaxPerKey = 5

// ErrTooMany: the key already holds its cap of open streams.
var ErrTooMany = errors.New("stream: too many open streams for this key")

// Limiter caps the concurrent streams of each key.
type Limiter interface {
	// Acquire takes one of key's max slots, or returns ErrTooMany; release gives it back.
	Acquire(ctx context.Context, key string, max int) (release func(), err error)
}

// MemoryLimiter counts the streams open on this replica.
type MemoryLimiter struct {
	mu   sync.Mutex
	open map[string]int
}

// NewMemoryLimiter returns an empty limiter.
func NewMemoryLimiter() *MemoryLimiter { return &MemoryLimiter{open: map[string]int{}} }

// Acquire implements Limiter.
func (l *MemoryLimiter) Acquire(_ context.Context, key string, max int) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key] >= max {
		return nil, ErrTooMany
	}
	l.open[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.open[key]--; l.open[key] <= 0 {
				delete(l.open, key)
			}
		})
	}, nil
}

// CapRetryAfter is the Retry-After (seconds) of a stream refused by the cap.
const CapRetryAfter = "10"

// Cap is the per-key cap on open streams (docs/live.md): the readings streams, the alert
// stream and MCP subscriptions draw on the same slots of the same Limiter, so a key holds
// at most Max of them together, on every replica when the Limiter is Redis's.
type Cap struct {
	Limiter Limiter
	Max     int
}

// NewCap returns a cap of max streams per key on l (a MemoryLimiter when nil; max
// DefaultMaxPerKey when not positive).
func NewCap(l Limiter, max int) Cap {
	if l == nil {
		l = NewMemoryLimiter()
	}
	if max <= 0 {
		max = DefaultMaxPerKey
	}
	return Cap{Limiter: l, Max: max}
}

// Acquire takes one of the caller's slots for the stream c is about to open. When it
// cannot, it has answered c (429 rate_limited with Retry-After, or the limiter's failure)
// and returns false.
func (cp Cap) Acquire(c *gin.Context) (release func(), ok bool) {
	key := "anonymous"
	if id, ok := auth.FromGin(c); ok {
		key = id.KeyIDText
	}
	release, err := cp.Limiter.Acquire(c.Request.Context(), key, cp.Max)
	if errors.Is(err, ErrTooMany) {
		c.Header("Retry-After", CapRetryAfter)
		ginerr.Fail(c, apierr.New(apierr.RateLimited, "this key already has %d open streams (reading streams, the alert stream and MCP subscriptions together), the most allowed; close one first", cp.Max))
		return nil, false
	}
	if err != nil {
		ginerr.Fail(c, fmt.Errorf("stream cap: %w", err))
		return nil, false
	}
	return release, true
}
