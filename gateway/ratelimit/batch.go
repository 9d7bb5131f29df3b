package ratelimit

import (
	"context"
	"sync"
	"time"
)

// DefaultMaxBatch caps how many waiting requests one backend call decides.
const DefaultMaxBatch = 512

// Batcher cuts the backend round trips of a busy key without admitting a request more than
// the budget: while a call for a key is in flight, later requests of that key wait, and when
// it returns they are decided together by one AllowUpTo (group commit). A lone request pays
// exactly one round trip, as without a Batcher; under load one round trip decides many.
// Every decision still comes from the shared backend, so two replicas never overspend.
type Batcher struct {
	backend Backend
	max     int
	timeout time.Duration

	mu     sync.Mutex
	queues map[stateKey]*queue
}

type queue struct{ waiting []chan answer }

type answer struct {
	res Result
	err error
}

var _ Limiter = (*Batcher)(nil)

// NewBatcher wraps backend. maxBatch caps a batch (DefaultMaxBatch when <= 0); timeout
// bounds a batch call, which belongs to no single request (DefaultRedisTimeout*2 when 0).
func NewBatcher(backend Backend, maxBatch int, timeout time.Duration) *Batcher {
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	if timeout <= 0 {
		timeout = 2 * DefaultRedisTimeout
	}
	return &Batcher{backend: backend, max: maxBatch, timeout: timeout, queues: make(map[stateKey]*queue)}
}

// Allow implements Limiter.
func (b *Batcher) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	qk := stateKey{key, l}
	b.mu.Lock()
	q, busy := b.queues[qk]
	if !busy {
		// Nobody is asking the backend for this key: ask alone, right away.
		b.queues[qk] = &queue{}
		b.mu.Unlock()
		res, err := b.backend.Allow(ctx, key, l)
		b.drain(qk, key, l)
		return res, err
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

// drain hands the requests that queued behind a finished call to one goroutine that decides
// them in batches until the key is idle.
func (b *Batcher) drain(qk stateKey, key string, l Limit) {
	batch := b.take(qk)
	if batch == nil {
		return
	}
	go func() {
		for ; batch != nil; batch = b.take(qk) {
			b.decide(key, l, batch)
		}
	}()
}

// take removes up to max waiters of qk, or forgets qk and returns nil when none wait.
func (b *Batcher) take(qk stateKey) []chan answer {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[qk]
	if len(q.waiting) == 0 {
		delete(b.queues, qk)
		return nil
	}
	n := min(len(q.waiting), b.max)
	batch := q.waiting[:n:n]
	q.waiting = append([]chan answer(nil), q.waiting[n:]...)
	return batch
}

func (b *Batcher) decide(key string, l Limit, batch []chan answer) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	res, err := b.backend.AllowUpTo(ctx, key, l, len(batch))
	for i, ch := range batch {
		if err != nil {
			ch <- answer{err: err}
			continue
		}
		ch <- answer{res: res.Result(i)}
	}
}
