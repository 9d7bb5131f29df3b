package ratelimit

import (
	"context"
	"sync"
	"time"
)

// Memory is the in-process GCRA limiter of the embedded default and the fallback while
// Redis is down. It keeps the same state as the Redis script (a theoretical arrival time per
// key) in integer nanoseconds, so its decisions are the ones Redis would make for one replica.
type Memory struct {
	now func() time.Time

	mu        sync.Mutex
	tat       map[stateKey]time.Time
	nextSweep time.Time
}

var _ Backend = (*Memory)(nil)

// NewMemory returns an empty in-process limiter. now is the clock (time.Now when nil);
// tests pass their own to step through time without sleeping.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, tat: make(map[stateKey]time.Time)}
}

// Allow implements Limiter.
func (m *Memory) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	b, err := m.AllowUpTo(ctx, key, l, 1)
	if err != nil {
		return Result{}, err
	}
	return b.Result(0), nil
}

// AllowUpTo implements Backend.
func (m *Memory) AllowUpTo(_ context.Context, key string, l Limit, n int) (Batch, error) {
	if err := l.Validate(); err != nil {
		return Batch{}, err
	}
	if n < 1 {
		n = 1
	}
	k := stateKey{key, l}
	emission := l.Interval()
	burstOffset := emission * time.Duration(l.Burst)

	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.sweep(now)
	tat, ok := m.tat[k]
	if !ok || tat.Before(now) {
		tat = now
	}
	diff := now.Sub(tat.Add(-burstOffset))
	remaining := int(diff / emission)
	if remaining < 1 {
		return Batch{Limit: l, Allowed: 0, Remaining: 0, RetryAfter: emission - diff, ResetAfter: tat.Sub(now)}, nil
	}
	cost := min(n, remaining)
	newTat := tat.Add(emission * time.Duration(cost))
	m.tat[k] = newTat
	return Batch{Limit: l, Allowed: cost, Remaining: remaining - cost, ResetAfter: newTat.Sub(now)}, nil
}

// stateKey separates the budgets of one key under different limits (a plan change starts
// a fresh budget), as the batcher's queues do.
type stateKey struct {
	key   string
	limit Limit
}

// sweep drops keys whose budget is full again (their state equals a fresh key's), at most
// once a minute, so the map holds only keys active within their period.
func (m *Memory) sweep(now time.Time) {
	if now.Before(m.nextSweep) {
		return
	}
	m.nextSweep = now.Add(time.Minute)
	for k, t := range m.tat {
		if !t.After(now) {
			delete(m.tat, k)
		}
	}
}

// Len is the number of keys held, for tests and metrics.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tat)
}

var _ Refunder = (*Memory)(nil)

// Refund gives back n requests taken but not spent (see Redis.Refund).
func (m *Memory) Refund(_ context.Context, key string, l Limit, n int) error {
	if err := l.Validate(); err != nil {
		return err
	}
	k := stateKey{key, l}
	m.mu.Lock()
	defer m.mu.Unlock()
	tat, ok := m.tat[k]
	if !ok || n <= 0 {
		return nil
	}
	now := m.now()
	tat = tat.Add(-l.Interval() * time.Duration(n))
	if tat.After(now) {
		m.tat[k] = tat
	} else {
		delete(m.tat, k)
	}
	return nil
}
