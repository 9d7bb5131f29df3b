package stream

import (
	"context"
	"errors"
	"sync"
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
