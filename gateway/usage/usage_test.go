package usage_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/gateway/usage"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// Adds from many goroutines racing drains lose nothing and count nothing twice (-race).
func TestCounterConcurrentAddAndDrain(t *testing.T) {
	var c usage.Counter
	ids := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				c.Add(ids[(w+i)%len(ids)])
			}
		})
	}
	total := int64(0)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		for _, n := range c.Drain() {
			total += n
		}
	}
	for _, n := range c.Drain() {
		total += n
	}
	if total != workers*each {
		t.Fatalf("counted %d, want %d", total, workers*each)
	}
	c.Add("not-a-uuid")
	if got := c.Drain(); len(got) != 0 {
		t.Fatalf("a non-uuid id was counted: %v", got)
	}
}

type failingSink struct{ err error }

func (f failingSink) AddUsage(context.Context, time.Time, map[uuid.UUID]int64) error { return f.err }

// A failed flush keeps the counts for the next one.
func TestFlushFailureKeepsCounts(t *testing.T) {
	var c usage.Counter
	id := uuid.New()
	for range 3 {
		c.Add(id.String())
	}
	f := &usage.Flusher{Counter: &c, Sink: failingSink{errors.New("redis down")}}
	if err := f.Flush(context.Background()); err == nil {
		t.Fatal("want the sink's error")
	}
	if got := c.Drain()[id]; got != 3 {
		t.Fatalf("after a failed flush %d counts are kept, want 3", got)
	}
}

// Two replicas count into the shared Redis hash; the copier puts the totals in the catalog
// (PostgreSQL), and copying twice does not add twice.
func TestRedisSharedAndCopied(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{DatabaseURL: testenv.Postgres(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, err := st.CreateAccount(ctx, store.Account{Name: "u"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := st.CreateKey(ctx, catalog.APIKey{Prefix: "p", Hash: []byte("0123456789abcdef0123456789abcdef"), OwnerID: acct.ID, Environment: catalog.EnvDevelopment})
	if err != nil {
		t.Fatal(err)
	}
	shared := usage.NewRedis(rdb, prefix)
	now := time.Now().UTC()
	for _, n := range []int{4, 6} { // two replicas
		var c usage.Counter
		for range n {
			c.Add(k.ID.String())
		}
		f := &usage.Flusher{Counter: &c, Sink: shared, Touch: st, Now: func() time.Time { return now }}
		if err := f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	hour, err := shared.Hour(ctx, now)
	if err != nil || hour[k.ID] != 10 {
		t.Fatalf("shared hour = %v, %v; want 10", hour, err)
	}
	cp := &usage.Copier{Redis: shared, Store: st, Retention: store.UsageRetention, Now: func() time.Time { return now }}
	for range 2 {
		if err := cp.Copy(ctx); err != nil {
			t.Fatal(err)
		}
	}
	u, err := st.Usage(ctx, k.ID, now.Add(-time.Hour))
	if err != nil || len(u) != 1 || u[0].Requests != 10 {
		t.Fatalf("catalog usage = %+v, %v", u, err)
	}
	if got, _ := st.Key(ctx, k.ID); got.LastUsedAt == nil {
		t.Fatal("last_used_at not set by the flush")
	}
}

// Without Redis the catalog (SQLite here) is the sink itself.
func TestStoreSink(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{SQLitePath: filepath.Join(t.TempDir(), "c.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, _ := st.CreateAccount(ctx, store.Account{Name: "u"})
	k, err := st.CreateKey(ctx, catalog.APIKey{Prefix: "p", Hash: []byte("0123456789abcdef0123456789abcdef"), OwnerID: acct.ID, Environment: catalog.EnvDevelopment})
	if err != nil {
		t.Fatal(err)
	}
	var c usage.Counter
	f := &usage.Flusher{Counter: &c, Sink: st, Touch: st}
	for range 2 {
		c.Add(k.ID.String())
		c.Add(k.ID.String())
		if err := f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	u, err := st.Usage(ctx, k.ID, time.Now().Add(-time.Hour))
	if err != nil || len(u) != 1 || u[0].Requests != 4 {
		t.Fatalf("usage = %+v, %v", u, err)
	}
}

// BenchmarkCounterAdd is the request-path cost of counting (issue budget: 2 µs of CPU per
// request, the lead measures it on a quiet machine).
func BenchmarkCounterAdd(b *testing.B) {
	var c usage.Counter
	ids := make([]string, 64)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.Add(ids[i%len(ids)])
			i++
		}
	})
}
