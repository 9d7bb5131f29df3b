package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// callCounter counts backend calls (it never blocks).
type callCounter struct {
	Backend
	Refunder
	calls atomic.Int64
}

func (c *callCounter) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	c.calls.Add(1)
	return c.Backend.Allow(ctx, key, l)
}

func (c *callCounter) AllowUpTo(ctx context.Context, key string, l Limit, n int) (Batch, error) {
	c.calls.Add(1)
	return c.Backend.AllowUpTo(ctx, key, l, n)
}

func counted(r *Redis) *callCounter { return &callCounter{Backend: r, Refunder: r} }

func hammer(t *testing.T, ls []Limiter, key string, l Limit, requests, workers int) (allowed int64) {
	t.Helper()
	var n atomic.Int64
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				res, err := ls[i%len(ls)].Allow(context.Background(), key, l)
				if err != nil {
					t.Errorf("Allow: %v", err)
					return
				}
				if res.Allowed {
					n.Add(1)
				}
			}
		}()
	}
	for i := range requests {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return n.Load()
}

// TestLeaseCutsRoundTripsWithinBudget: two replicas with leases on one Redis make far
// fewer calls than requests, and still admit exactly the budget.
func TestLeaseCutsRoundTripsWithinBudget(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	a, b := counted(NewRedis(rdb, prefix, 2*time.Second)), counted(NewRedis(rdb, prefix, 2*time.Second))
	ls := []Limiter{NewBatcher(a, 0, 0), NewBatcher(b, 0, 0)}

	big := PerHour(100000)
	if got := hammer(t, ls, "big", big, 6000, 32); got != 6000 {
		t.Fatalf("big budget: allowed %d of 6000", got)
	}
	calls := a.calls.Load() + b.calls.Load()
	t.Logf("6000 requests, %d backend calls", calls)
	if calls > 6000/4 {
		t.Errorf("%d backend calls for 6000 requests: leases and batches should cut them by far more", calls)
	}

	small := PerHour(1000)
	if got := hammer(t, ls, "small", small, 3000, 32); got != 1000 {
		t.Fatalf("budget 1000, 3000 requests over two replicas with leases: allowed %d, want exactly 1000", got)
	}
}

// TestLeaseRemainingCountsDown: one client's successive requests see the remaining count
// go down by one each time, leased or not.
func TestLeaseRemainingCountsDown(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	bt := NewBatcher(NewRedis(rdb, prefix, time.Second), 0, 0)
	l := PerHour(1000)
	for i := range 60 {
		res, err := bt.Allow(context.Background(), "k", l)
		if err != nil || !res.Allowed || res.Remaining != 999-i {
			t.Fatalf("request %d: %+v, %v; want allowed with %d remaining", i+1, res, err, 999-i)
		}
		if s := seconds(res.ResetAfter); s < int64(i+1)*36/10 || s > int64(i+1)*36/10+2 {
			t.Errorf("request %d: reset %d s, want about %d", i+1, s, (i+1)*36/10)
		}
	}
}

// TestLeaseRefund: a lease left unused is given back after its TTL, so the shared budget
// shows only what was spent.
func TestLeaseRefund(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	r := NewRedis(rdb, prefix, time.Second)
	bt := NewBatcher(r, 0, 0).WithLease(DefaultMaxLease, 50*time.Millisecond)
	l := PerHour(10000)
	if got := hammer(t, []Limiter{bt}, "k", l, 500, 16); got != 500 {
		t.Fatalf("allowed %d of 500", got)
	}
	// Make sure a lease is outstanding: sequential requests grow one.
	made := 500
	leased := func() int {
		bt.mu.Lock()
		defer bt.mu.Unlock()
		if q := bt.queues[stateKey{"k", l}]; q != nil {
			return q.tokens
		}
		return 0
	}
	// Bounded: on a loaded machine a lease may be refunded before this loop sees it; the
	// check below (the shared budget shows exactly what was spent) holds either way.
	for growBy := time.Now().Add(5 * time.Second); leased() == 0 && made < 2500 && time.Now().Before(growBy); {
		if _, err := bt.Allow(context.Background(), "k", l); err != nil {
			t.Fatal(err)
		}
		made++
	}
	t.Logf("%d requests made, %d held in a lease", made, leased())
	// Another replica without leases reads the shared count.
	probe := NewBatcher(r, 0, 0).WithLease(0, 0)
	deadline := time.Now().Add(10 * time.Second)
	probes := 0
	for {
		res, err := probe.Allow(context.Background(), "k", l)
		if err != nil {
			t.Fatal(err)
		}
		probes++
		spent := 10000 - res.Remaining // requests made + probes, once the lease is back
		if spent == made+probes {
			t.Logf("after the lease TTL the shared budget shows %d spent", spent)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("shared budget shows %d spent 10s after 500 requests; the lease was not refunded", spent)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRefundNeverOverfills(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, key := mk(t)
			ctx := context.Background()
			l := PerHour(10)
			if _, err := b.AllowUpTo(ctx, key, l, 3); err != nil {
				t.Fatal(err)
			}
			if err := b.(Refunder).Refund(ctx, key, l, 100); err != nil {
				t.Fatal(err)
			}
			bt, err := b.AllowUpTo(ctx, key, l, 20)
			if err != nil || bt.Allowed != 10 {
				t.Fatalf("after refunding more than was taken: %+v, %v; want the burst of 10 and no more", bt, err)
			}
		})
	}
}
