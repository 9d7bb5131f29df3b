package auth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// countQueries counts every statement GORM sends to the store's database from now on.
func countQueries(t *testing.T, st *store.Store) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	inc := func(*gorm.DB) { n.Add(1) }
	cb := st.DB().Callback()
	for name, err := range map[string]error{
		"query": cb.Query().After("gorm:query").Register("test:count_query", inc),
		"row":   cb.Row().After("gorm:row").Register("test:count_row", inc),
		"raw":   cb.Raw().After("gorm:raw").Register("test:count_raw", inc),
	} {
		if err != nil {
			t.Fatalf("register %s callback: %v", name, err)
		}
	}
	return &n
}

// TestRandomKeysCostFewQueries is the key-space scan of the issue: 10,000 random keys from
// one address, against two replicas sharing the throttle in Redis (and one with the
// in-process throttle). The database sees at most the throttle's limit of lookups, the
// rest are 429 with Retry-After, and a real caller's cached key keeps working.
func TestRandomKeysCostFewQueries(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	cases := map[string]func() (Throttle, Throttle){
		"redis, two replicas": func() (Throttle, Throttle) {
			return NewRedisThrottle(rdb, prefix, 0, 0, nil), NewRedisThrottle(rdb, prefix, 0, 0, nil)
		},
		"memory": func() (Throttle, Throttle) { m := NewMemoryThrottle(0, 0, nil); return m, m },
	}
	for name, throttles := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := stores(t)["postgres"](t)
			ctx := context.Background()
			good, _ := newKey(t, st, catalog.EnvDevelopment, "erin")
			t1, t2 := throttles()
			// An hour of key cache: on a loaded machine the 10,000 keys through Redis took
			// 99 s, past a minute's TTL, and the real key's lookup then met the throttle.
			a1, _ := New(st, Options{Environment: catalog.EnvDevelopment, CacheTTL: time.Hour, Throttle: t1})
			a2, _ := New(st, Options{Environment: catalog.EnvDevelopment, CacheTTL: time.Hour, Throttle: t2})
			for _, a := range []*Authenticator{a1, a2} {
				if _, err := a.AuthenticateFrom(ctx, good, "203.0.113.7"); err != nil {
					t.Fatal(err)
				}
			}
			queries := countQueries(t, st)
			const attacker = "198.51.100.9"
			var invalid, throttled int
			for i := range 10_000 {
				k, _ := Generate(catalog.EnvDevelopment)
				a := a1
				if i%2 == 1 {
					a = a2
				}
				_, err := a.AuthenticateFrom(ctx, k.Secret, attacker)
				var te *ThrottledError
				switch {
				case errors.As(err, &te):
					throttled++
					if te.RetryAfter <= 0 || te.RetryAfter > DefaultMissWindow || apierr.From(err).Code != apierr.RateLimited {
						t.Fatalf("throttled: %v (retry after %s)", err, te.RetryAfter)
					}
				case code(err) == apierr.InvalidAPIKey:
					invalid++
				default:
					t.Fatalf("random key %d: %v", i, err)
				}
			}
			n := queries.Load()
			t.Logf("10,000 random keys: %d database queries, %d answered 401, %d answered 429", n, invalid, throttled)
			if n > 2*DefaultMissLimit+5 {
				t.Errorf("10,000 random keys cost %d queries, want at most %d", n, 2*DefaultMissLimit+5)
			}
			if throttled < 10_000-2*DefaultMissLimit-5 {
				t.Errorf("only %d of 10,000 random keys were throttled", throttled)
			}
			// The real caller is not locked out: its key is in the positive cache.
			if _, err := a1.AuthenticateFrom(ctx, good, attacker); err != nil {
				t.Errorf("a cached real key from the throttled address: %v", err)
			}
			if _, err := a2.AuthenticateFrom(ctx, good, "203.0.113.7"); err != nil {
				t.Errorf("a real key from another address: %v", err)
			}
		})
	}
}

// TestNegativeCache: one wrong key presented over and over (a misconfigured client, from
// many addresses) costs one lookup per negative TTL; the table stays bounded.
func TestNegativeCache(t *testing.T) {
	t.Parallel()
	st := stores(t)["postgres"](t)
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	a, _ := New(st, Options{Environment: catalog.EnvDevelopment, Now: clk.now, NegativeCacheSize: 64})
	queries := countQueries(t, st)
	wrong, _ := Generate(catalog.EnvDevelopment)
	for i := range 1000 {
		if _, err := a.AuthenticateFrom(ctx, wrong.Secret, fmt.Sprintf("10.0.%d.%d", i/256, i%256)); code(err) != apierr.InvalidAPIKey {
			t.Fatalf("wrong key: %v", err)
		}
	}
	if n := queries.Load(); n != 1 {
		t.Errorf("one wrong key presented 1000 times cost %d queries, want 1", n)
	}
	clk.add(MinNegativeTTL)
	_, _ = a.Authenticate(ctx, wrong.Secret)
	if n := queries.Load(); n != 2 {
		t.Errorf("after the negative TTL: %d queries, want 2", n)
	}
	for range 500 {
		k, _ := Generate(catalog.EnvDevelopment)
		_, _ = a.Authenticate(ctx, k.Secret)
	}
	n := a.neg.Len()
	if n > 64 {
		t.Errorf("negative cache holds %d entries, bound 64", n)
	}
}

func TestMemoryThrottleWindow(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := NewMemoryThrottle(3, time.Minute, clk.now)
	ctx := context.Background()
	for range 3 {
		if _, b := m.Blocked(ctx, "192.0.2.1"); b {
			t.Fatal("blocked before the limit")
		}
		m.Miss(ctx, "192.0.2.1")
	}
	clk.add(20 * time.Second)
	if d, b := m.Blocked(ctx, "192.0.2.1"); !b || d != 40*time.Second {
		t.Errorf("after 3 misses: blocked %v for %s, want 40s", b, d)
	}
	if _, b := m.Blocked(ctx, "192.0.2.2"); b {
		t.Error("another address is blocked")
	}
	// IPv6 addresses count by /64.
	for range 3 {
		m.Miss(ctx, "2001:db8:1:2::1")
	}
	if _, b := m.Blocked(ctx, "2001:db8:1:2:ffff::9"); !b {
		t.Error("an address of the same /64 is not blocked")
	}
	clk.add(40 * time.Second)
	if _, b := m.Blocked(ctx, "192.0.2.1"); b {
		t.Error("still blocked after the window")
	}
}

// TestConcurrentAuthentication runs real and wrong keys from many goroutines and addresses
// through one authenticator (positive cache, bounded negative cache, in-process throttle);
// run with -race. Every real key is admitted unless its address is throttled, every wrong
// key refused, and the tables stay within their bounds.
func TestConcurrentAuthentication(t *testing.T) {
	t.Parallel()
	st := stores(t)["sqlite"](t)
	ctx := context.Background()
	good, _ := newKey(t, st, catalog.EnvDevelopment, "gina")
	a, _ := New(st, Options{Environment: catalog.EnvDevelopment, CacheTTL: time.Minute, NegativeCacheSize: 32,
		Throttle: NewMemoryThrottle(5, time.Minute, nil)})
	if _, err := a.Authenticate(ctx, good); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			addr := fmt.Sprintf("10.1.0.%d", g)
			for i := range 60 {
				if i%3 == 0 {
					if _, err := a.AuthenticateFrom(ctx, good, addr); err != nil {
						errs <- fmt.Errorf("real key from %s: %w", addr, err)
						return
					}
					continue
				}
				k, _ := Generate(catalog.EnvDevelopment)
				if _, err := a.AuthenticateFrom(ctx, k.Secret, addr); err == nil {
					errs <- fmt.Errorf("random key admitted")
					return
				} else if c := code(err); c != apierr.InvalidAPIKey && c != apierr.RateLimited {
					errs <- fmt.Errorf("random key: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n := a.neg.Len()
	if n > 32 {
		t.Errorf("negative cache holds %d, bound 32", n)
	}
}
