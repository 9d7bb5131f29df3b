package ratelimit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

func TestParsePlans(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Plans
		wantErr string
	}{
		{in: "", want: Plans{}},
		{in: "free=1000/h,pro=10000/h", want: Plans{"free": PerHour(1000), "pro": PerHour(10000)}},
		{in: " free = 60/m , burst=10/s:5 ", want: Plans{"free": {Rate: 60, Period: time.Minute, Burst: 60}, "burst": {Rate: 10, Period: time.Second, Burst: 5}}},
		{in: "day=5000/day", want: Plans{"day": {Rate: 5000, Period: 24 * time.Hour, Burst: 5000}}},
		{in: "free", wantErr: `plan "free": want name=rate/unit`},
		{in: "free=1000", wantErr: `want rate/unit`},
		{in: "free=-1/h", wantErr: `rate "-1" is not a positive integer`},
		{in: "free=10/week", wantErr: `unit "week" is not one of`},
		{in: "free=10/h:0", wantErr: `burst "0" is not a positive integer`},
		{in: "free=1/h,free=2/h", wantErr: `"free": given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParsePlans(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParsePlans(%q) error = %v, want it to say %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePlans(%q): %v", tt.in, err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParsePlans(%q) = %v, want %v", tt.in, got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("plan %q = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

func TestPlansFor(t *testing.T) {
	t.Parallel()
	plans := Plans{"pro": PerHour(10000), "default": PerHour(500)}
	tests := []struct {
		env, plan string
		want      Limit
	}{
		{"development", "pro", PerHour(1000)}, // development keys are 1000/h whatever the plan
		{"production", "pro", PerHour(10000)},
		{"production", "unknown", PerHour(500)},
		{"production", "", PerHour(500)},
	}
	for _, tt := range tests {
		if got := plans.For(tt.env, tt.plan); got != tt.want {
			t.Errorf("For(%q, %q) = %v, want %v", tt.env, tt.plan, got, tt.want)
		}
	}
	if got := (Plans{}).For("production", "x"); got != PerHour(1000) {
		t.Errorf("no plans: For(production) = %v, want the development budget", got)
	}
}

// backends are the implementations every behaviour test runs over.
func backends(t *testing.T) map[string]func(t *testing.T) (Backend, string) {
	return map[string]func(t *testing.T) (Backend, string){
		"memory": func(t *testing.T) (Backend, string) { return NewMemory(nil), "k" },
		"redis": func(t *testing.T) (Backend, string) {
			rdb, prefix := testenv.Redis(t)
			return NewRedis(rdb, prefix, time.Second), "k"
		},
	}
}

func TestAllowSpendsBurstThenRefuses(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, key := mk(t)
			ctx := context.Background()
			l := PerHour(5) // one unit back every 12 minutes: nothing refills during the test
			for i := range 5 {
				res, err := b.Allow(ctx, key, l)
				if err != nil {
					t.Fatalf("Allow #%d: %v", i+1, err)
				}
				if !res.Allowed || res.Remaining != 4-i {
					t.Fatalf("Allow #%d = allowed %v remaining %d, want allowed with %d remaining", i+1, res.Allowed, res.Remaining, 4-i)
				}
				wantReset := time.Duration(i+1) * l.Interval()
				if d := res.ResetAfter - wantReset; d < -time.Second || d > time.Second {
					t.Errorf("Allow #%d ResetAfter = %s, want about %s", i+1, res.ResetAfter, wantReset)
				}
			}
			res, err := b.Allow(ctx, key, l)
			if err != nil {
				t.Fatalf("Allow #6: %v", err)
			}
			if res.Allowed || res.Remaining != 0 {
				t.Fatalf("Allow #6 = allowed %v remaining %d, want refused", res.Allowed, res.Remaining)
			}
			if res.RetryAfter <= 0 || res.RetryAfter > l.Interval() {
				t.Errorf("Allow #6 RetryAfter = %s, want in (0, %s]", res.RetryAfter, l.Interval())
			}
			if seconds(res.ResetAfter) != 3600 {
				t.Errorf("Allow #6 reset = %d s, want 3600 (whole budget spent)", seconds(res.ResetAfter))
			}
			other, err := b.Allow(ctx, key+"-other", l)
			if err != nil || !other.Allowed || other.Remaining != 4 {
				t.Errorf("another key = %+v, %v; want its own full budget", other, err)
			}
		})
	}
}

func TestAllowUpToTakesWholeRequests(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, key := mk(t)
			ctx := context.Background()
			l := PerHour(5)
			steps := []struct{ n, allowed, remaining int }{
				{3, 3, 2},
				{3, 2, 0},
				{3, 0, 0},
			}
			for i, s := range steps {
				got, err := b.AllowUpTo(ctx, key, l, s.n)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got.Allowed != s.allowed || got.Remaining != s.remaining {
					t.Fatalf("step %d AllowUpTo(%d) = allowed %d remaining %d, want %d, %d", i, s.n, got.Allowed, got.Remaining, s.allowed, s.remaining)
				}
			}
		})
	}
}

func TestInvalidLimitIsRefusedByEveryBackend(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, key := mk(t)
			_, err := b.Allow(context.Background(), key, Limit{Rate: 0, Period: time.Hour, Burst: 1})
			if !errors.Is(err, ErrInvalidLimit) {
				t.Fatalf("Allow with rate 0: err = %v, want ErrInvalidLimit", err)
			}
		})
	}
}

func TestMemoryRefillsOneUnitPerInterval(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewMemory(func() time.Time { return now })
	ctx := context.Background()
	l := Limit{Rate: 10, Period: 10 * time.Second, Burst: 2}
	for range 2 {
		if r, _ := m.Allow(ctx, "k", l); !r.Allowed {
			t.Fatal("burst of 2 refused")
		}
	}
	r, _ := m.Allow(ctx, "k", l)
	if r.Allowed || r.RetryAfter != time.Second {
		t.Fatalf("third request = %+v, want refused with RetryAfter 1s", r)
	}
	now = now.Add(999 * time.Millisecond)
	if r, _ := m.Allow(ctx, "k", l); r.Allowed {
		t.Fatal("allowed before a unit came back")
	}
	now = now.Add(time.Millisecond)
	if r, _ := m.Allow(ctx, "k", l); !r.Allowed {
		t.Fatal("refused after a unit came back")
	}
	now = now.Add(time.Hour)
	m.Allow(ctx, "other", l) // triggers a sweep of "k", full again
	if n := m.Len(); n != 1 {
		t.Errorf("after an hour Len = %d, want 1 (idle keys swept)", n)
	}
}

// TestReplicasShareOneBudget is two gateways' limiters (separate clients, batchers and
// connection pools) on one Redis: 1500 concurrent requests of one key whose limit is 1000
// give exactly 1000 passes.
func TestReplicasShareOneBudget(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	opt := rdb.Options()
	var replicas []Limiter
	for range 2 {
		c := newClient(t, opt.Addr, opt.DB)
		replicas = append(replicas, NewBatcher(NewRedis(c, prefix, 2*time.Second), 0, 0))
	}
	l := PerHour(1000)
	var allowed, refused atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range 1500 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res, err := replicas[i%2].Allow(context.Background(), "shared", l)
			if err != nil {
				t.Errorf("Allow: %v", err)
				return
			}
			if res.Allowed {
				allowed.Add(1)
			} else {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 1000 || refused.Load() != 500 {
		t.Fatalf("allowed %d, refused %d; want exactly 1000 and 500", allowed.Load(), refused.Load())
	}
}

// countingBackend records the batches a Batcher sends; its first call blocks until release
// is closed, so a test can line requests up behind it deterministically.
type countingBackend struct {
	Backend
	release chan struct{}
	mu      sync.Mutex
	calls   []int
}

func (c *countingBackend) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	<-c.release
	c.mu.Lock()
	c.calls = append(c.calls, 1)
	c.mu.Unlock()
	return c.Backend.Allow(ctx, key, l)
}

func (c *countingBackend) AllowUpTo(ctx context.Context, key string, l Limit, n int) (Batch, error) {
	c.mu.Lock()
	c.calls = append(c.calls, n)
	c.mu.Unlock()
	return c.Backend.AllowUpTo(ctx, key, l, n)
}

func TestBatcherDecidesWaitersInOneCall(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	cb := &countingBackend{Backend: NewRedis(rdb, prefix, time.Second), release: make(chan struct{})}
	b := NewBatcher(cb, 0, 0)
	l := PerHour(8)
	results := make(chan Result, 11)
	go func() {
		r, err := b.Allow(context.Background(), "k", l) // the leader, blocked in the backend
		if err != nil {
			t.Errorf("leader: %v", err)
		}
		results <- r
	}()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.queues[stateKey{"k", l}] != nil })
	for range 10 {
		go func() {
			r, err := b.Allow(context.Background(), "k", l)
			if err != nil {
				t.Errorf("waiter: %v", err)
			}
			results <- r
		}()
	}
	waitFor(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queues[stateKey{"k", l}].waiting) == 10
	})
	close(cb.release)
	allowed, remainings := 0, map[int]bool{}
	for range 11 {
		r := <-results
		if r.Allowed {
			allowed++
			remainings[r.Remaining] = true
		} else if r.RetryAfter <= 0 {
			t.Errorf("refused result without RetryAfter: %+v", r)
		}
	}
	if allowed != 8 {
		t.Errorf("allowed %d of 11 with a budget of 8", allowed)
	}
	for i := range 8 {
		if !remainings[i] {
			t.Errorf("no request saw remaining %d; each allowed request should see its own count (got %v)", i, remainings)
		}
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if len(cb.calls) != 2 || cb.calls[0] != 1 || cb.calls[1] != 10 {
		t.Errorf("backend calls = %v, want [1 10] (the leader alone, then the 10 waiters in one batch)", cb.calls)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRemainingIsExactForInexactIntervals: 1000/h is 3.6 s per request, not exact in
// binary floating point; the counts must still be whole (999 after the first request).
func TestRemainingIsExactForInexactIntervals(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, key := mk(t)
			ctx := context.Background()
			l := PerHour(1000)
			for i := range 3 {
				r, err := b.Allow(ctx, key, l)
				if err != nil || !r.Allowed || r.Remaining != 999-i {
					t.Fatalf("request %d: %+v, %v; want allowed with %d remaining", i+1, r, err, 999-i)
				}
			}
			bt, err := b.AllowUpTo(ctx, key, l, 3)
			if err != nil || bt.Allowed != 3 || bt.Remaining != 994 {
				t.Fatalf("batch of 3: %+v, %v; want 3 allowed, 994 remaining", bt, err)
			}
		})
	}
}
