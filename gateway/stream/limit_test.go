package stream

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// TestRedisLimiterSharedCap: two limiters on one Redis stand for two gateway replicas;
// 40 concurrent acquisitions of one key with a cap of 5 take exactly 5 slots between
// them, a release gives one back to either replica, and another key is not affected.
func TestRedisLimiterSharedCap(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	a := NewRedisLimiter(rdb, prefix, time.Minute, nil)
	b := NewRedisLimiter(rdb, prefix, time.Minute, nil)
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	ctx := context.Background()

	var (
		mu       sync.Mutex
		releases []func()
		refused  int
		wg       sync.WaitGroup
	)
	for i := 0; i < 40; i++ {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel, err := l.Acquire(ctx, "key-1", 5)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				releases = append(releases, rel)
			case errors.Is(err, ErrTooMany):
				refused++
			default:
				t.Errorf("acquire: %v", err)
			}
		}()
	}
	wg.Wait()
	if len(releases) != 5 || refused != 35 {
		t.Fatalf("took %d slots and refused %d, want 5 and 35", len(releases), refused)
	}
	if n := rdb.ZCard(ctx, prefix+"streams:key-1").Val(); n != 5 {
		t.Errorf("the key's set holds %d streams, want 5", n)
	}
	if _, err := b.Acquire(ctx, "key-2", 5); err != nil {
		t.Errorf("another key: %v", err)
	}
	releases[0]()
	releases[0]() // a second release is a no-op, not a second slot
	rel, err := b.Acquire(ctx, "key-1", 5)
	if err != nil {
		t.Fatalf("after a release on A, B cannot take the slot: %v", err)
	}
	if _, err := a.Acquire(ctx, "key-1", 5); !errors.Is(err, ErrTooMany) {
		t.Errorf("a sixth stream: %v, want ErrTooMany", err)
	}
	rel()
	for _, r := range releases[1:] {
		r()
	}
	if n := rdb.ZCard(ctx, prefix+"streams:key-1").Val(); n != 0 {
		t.Errorf("after every release the set holds %d streams", n)
	}
}

// TestRedisLimiterLeases: a replica's refresher pushes its streams' expiry forward; the
// slots of a replica that stopped (killed: no release, no renewal) expire with their lease.
func TestRedisLimiterLeases(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	set := prefix + "streams:k"

	live := NewRedisLimiter(rdb, prefix, time.Minute, nil)
	t.Cleanup(live.Close)
	if _, err := live.Acquire(ctx, "k", 2); err != nil {
		t.Fatal(err)
	}
	before := rdb.ZRangeWithScores(ctx, set, 0, -1).Val()
	time.Sleep(5 * time.Millisecond)
	if err := live.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	after := rdb.ZRangeWithScores(ctx, set, 0, -1).Val()
	if len(before) != 1 || len(after) != 1 || after[0].Score <= before[0].Score {
		t.Fatalf("renew did not extend the lease: %v then %v", before, after)
	}

	dead := NewRedisLimiter(rdb, prefix, 300*time.Millisecond, nil)
	if _, err := dead.Acquire(ctx, "k", 2); err != nil {
		t.Fatal(err)
	}
	dead.Close() // killed: its stream is never released nor renewed
	if _, err := live.Acquire(ctx, "k", 2); !errors.Is(err, ErrTooMany) {
		t.Fatalf("with the dead replica's slot still leased: %v, want ErrTooMany", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := live.Acquire(ctx, "k", 2)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrTooMany) || time.Now().After(deadline) {
			t.Fatalf("the dead replica's slot never expired: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRedisLimiterFallback: with Redis unreachable the cap is counted on this replica.
func TestRedisLimiterFallback(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	l := NewRedisLimiter(rdb, prefix, time.Minute, nil)
	l.Close()
	_ = rdb.Close() // every command now fails
	ctx := context.Background()
	if _, err := l.Acquire(ctx, "k", 1); err != nil {
		t.Fatalf("fallback: %v", err)
	}
	if _, err := l.Acquire(ctx, "k", 1); !errors.Is(err, ErrTooMany) {
		t.Fatalf("fallback cap: %v, want ErrTooMany", err)
	}
}
