package ratelimit

import (
	"context"
	"sync"
	"time"
)

// Batcher defaults.
const (
	// DefaultMaxBatch caps how many waiting requests one backend call decides.
	DefaultMaxBatch = 512
	// DefaultMaxLease caps the requests of budget one replica holds ahead of demand.
	DefaultMaxLease = 256
	// DefaultLeaseTTL is how long a lease may go unused before it is given back.
	DefaultLeaseTTL = time.Second
	// leaseShare bounds a lease to this fraction of what the backend said remains, so that
	// replicas leave each other most of a budget and small budgets are never leased.
	leaseShare = 8
)

// Refunder gives back requests of budget taken but not spent (package Redis does, with a
// script that moves the GCRA state back by as many intervals, never past "full").
type Refunder interface {
	Refund(ctx context.Context, key string, l Limit, n int) error
}

// Batcher cuts the backend round trips of a busy key without ever admitting more than the
// budget, in two ways:
//
//   - Group commit: while a call for a key is in flight, later requests of that key wait,
//     and when it returns they are decided together by one AllowUpTo. A lone request pays
//     exactly one round trip, as without a Batcher.
//   - Lease (when the backend is a Refunder): a call for a busy key also takes some
//     requests of budget ahead of demand (at most as many as the key used since the
//     previous call, DefaultMaxLease, and an eighth of what remains), and the next
//     requests spend them without a round trip. The backend debited them already, so
//     every replica together still admits at most the budget; a lease unused after its
//     TTL is refunded. With a lease, x-ratelimit-remaining counts this replica's unspent
//     lease as remaining (other replicas' leases show as spent until used or refunded).
//
// Every admitted request was debited by the shared backend before it was admitted.
type Batcher struct {
	backend  Backend
	refunder Refunder // nil: no leases
	max      int
	timeout  time.Duration
	maxLease int
	leaseTTL time.Duration
	now      func() time.Time

	mu     sync.Mutex
	queues map[stateKey]*queue
}

// queue is one key's state: requests waiting for the call in flight, and its lease.
type queue struct {
	waiting []chan answer
	busy    bool
	// served counts requests admitted since the last backend call: the demand a lease
	// is sized by.
	served int
	// known and lastRemaining are what the backend said remains, as of the last call.
	known         bool
	lastRemaining int
	// The lease: tokens requests of budget already debited, valid until leaseEnd;
	// remaining and resetAt are the backend's figures when it was taken.
	tokens    int
	leaseEnd  time.Time
	remaining int
	resetAt   time.Time
}

type answer struct {
	res Result
	err error
}

var _ Limiter = (*Batcher)(nil)

// NewBatcher wraps backend. maxBatch caps a batch (DefaultMaxBatch when <= 0); timeout
// bounds a batch call, which belongs to no single request (2*DefaultRedisTimeout when 0).
// Leases are on when backend is a Refunder (see WithLease).
func NewBatcher(backend Backend, maxBatch int, timeout time.Duration) *Batcher {
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	if timeout <= 0 {
		timeout = 2 * DefaultRedisTimeout
	}
	b := &Batcher{backend: backend, max: maxBatch, timeout: timeout, maxLease: DefaultMaxLease,
		leaseTTL: DefaultLeaseTTL, now: time.Now, queues: make(map[stateKey]*queue)}
	b.refunder, _ = backend.(Refunder)
	return b
}

// WithLease sets the lease bounds; maxLease 0 turns leases off.
func (b *Batcher) WithLease(maxLease int, ttl time.Duration) *Batcher {
	b.maxLease = max(maxLease, 0)
	if ttl > 0 {
		b.leaseTTL = ttl
	}
	return b
}

// Allow implements Limiter.
func (b *Batcher) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	qk := stateKey{key, l}
	now := b.now()
	b.mu.Lock()
	q := b.queues[qk]
	if q == nil {
		q = &queue{}
		b.queues[qk] = q
	}
	if q.tokens > 0 {
		if now.Before(q.leaseEnd) {
			q.tokens--
			q.served++
			res := Result{Limit: l, Allowed: true, Remaining: q.remaining + q.tokens,
				ResetAfter: max(q.resetAt.Sub(now)-time.Duration(q.tokens)*l.Interval(), 0)}
			b.mu.Unlock()
			return res, nil
		}
		b.refundLocked(key, l, q)
	}
	if !q.busy {
		// Nobody is asking the backend for this key: ask now, for this request and
		// perhaps a lease.
		q.busy = true
		extra := b.leaseSizeLocked(q)
		b.mu.Unlock()
		res, err := b.fetch(ctx, qk, 1, extra)
		b.drain(qk)
		if err != nil {
			return Result{}, err
		}
		return res.Result(0), nil
	}
	ch := make(chan answer, 1)
	q.waiting = append(q.waiting, ch)
	b.mu.Unlock()
	select {
	case a := <-ch:
		return a.res, a.err
	case <-ctx.Done():
		// The request is gone; its place in the batch is still decided (and, if allowed,
		// spent), which errs on the side of the budget.
		return Result{}, ctx.Err()
	}
}

// leaseSizeLocked is how many requests of budget to take ahead of demand.
func (b *Batcher) leaseSizeLocked(q *queue) int {
	if b.refunder == nil || b.maxLease == 0 || !q.known {
		return 0
	}
	return max(min(q.served, b.maxLease, q.lastRemaining/leaseShare), 0)
}

// fetch asks the backend for n requests plus extra to lease, records the lease, and
// returns the decision whose first n results belong to the callers.
func (b *Batcher) fetch(ctx context.Context, qk stateKey, n, extra int) (Batch, error) {
	var bt Batch
	var err error
	if n+extra == 1 {
		// One request: redis_rate's own script.
		var res Result
		res, err = b.backend.Allow(ctx, qk.key, qk.limit)
		bt = Batch{Limit: qk.limit, Remaining: res.Remaining, RetryAfter: res.RetryAfter, ResetAfter: res.ResetAfter}
		if res.Allowed {
			bt.Allowed = 1
		}
	} else {
		bt, err = b.backend.AllowUpTo(ctx, qk.key, qk.limit, n+extra)
	}
	if err != nil {
		return bt, err
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[qk]
	q.known, q.lastRemaining = true, bt.Remaining
	q.served = min(bt.Allowed, n)
	if surplus := bt.Allowed - n; surplus > 0 {
		q.tokens = surplus
		q.leaseEnd = now.Add(b.leaseTTL)
		q.remaining = bt.Remaining
		q.resetAt = now.Add(bt.ResetAfter)
		time.AfterFunc(b.leaseTTL+b.leaseTTL/10, func() { b.reap(qk) })
	}
	return bt, nil
}

// refundLocked gives an expired lease back, in the background.
func (b *Batcher) refundLocked(key string, l Limit, q *queue) {
	n := q.tokens
	q.tokens = 0
	if n <= 0 || b.refunder == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		defer cancel()
		_ = b.refunder.Refund(ctx, key, l, n) // on failure the lease is lost: under budget, never over
	}()
}

// reap refunds the lease of a key that went quiet, and forgets the key when idle.
func (b *Batcher) reap(qk stateKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[qk]
	if q == nil || q.busy {
		return
	}
	if q.tokens > 0 && !b.now().Before(q.leaseEnd) {
		b.refundLocked(qk.key, qk.limit, q)
	}
	if q.tokens == 0 && len(q.waiting) == 0 {
		delete(b.queues, qk)
	}
}

// drain hands the requests that queued behind a finished call to one goroutine that decides
// them in batches until none wait.
func (b *Batcher) drain(qk stateKey) {
	batch, extra := b.take(qk)
	if batch == nil {
		return
	}
	go func() {
		for ; batch != nil; batch, extra = b.take(qk) {
			b.decide(qk, batch, extra)
		}
	}()
}

// take removes up to max waiters of qk, or marks qk idle and returns nil when none wait.
// Waiters that a lease taken meanwhile can serve are served here.
func (b *Batcher) take(qk stateKey) ([]chan answer, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[qk]
	now := b.now()
	for len(q.waiting) > 0 && q.tokens > 0 && now.Before(q.leaseEnd) {
		q.tokens--
		q.served++
		q.waiting[0] <- answer{res: Result{Limit: qk.limit, Allowed: true, Remaining: q.remaining + q.tokens,
			ResetAfter: max(q.resetAt.Sub(now)-time.Duration(q.tokens)*qk.limit.Interval(), 0)}}
		q.waiting = q.waiting[1:]
	}
	if len(q.waiting) == 0 {
		q.busy = false
		q.waiting = nil
		if q.tokens == 0 {
			delete(b.queues, qk)
		}
		return nil, 0
	}
	n := min(len(q.waiting), b.max)
	batch := q.waiting[:n:n]
	q.waiting = append([]chan answer(nil), q.waiting[n:]...)
	return batch, b.leaseSizeLocked(q)
}

func (b *Batcher) decide(qk stateKey, batch []chan answer, extra int) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	bt, err := b.fetch(ctx, qk, len(batch), extra)
	for i, ch := range batch {
		if err != nil {
			ch <- answer{err: err}
			continue
		}
		ch <- answer{res: bt.Result(i)}
	}
}
