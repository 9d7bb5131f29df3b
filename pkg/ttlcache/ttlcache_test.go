package ttlcache

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(0, 0)
	m := New[string, int](10*time.Second, 3, 1<<20, nil)
	m.Put("a", 1, t0, t0)
	m.Put("b", 2, t0.Add(time.Second), t0.Add(time.Second))
	m.Put("a", 3, t0.Add(2*time.Second), t0.Add(2*time.Second)) // stored again: newer value, newer time
	tests := []struct {
		key  string
		at   time.Duration
		want int
		ok   bool
	}{
		{"a", 5 * time.Second, 3, true},
		{"b", 11 * time.Second, 0, false}, // stored at +1s: expired 10s later
		{"a", 11 * time.Second, 3, true},  // its second put counts
		{"zz", 0, 0, false},
	}
	for _, tt := range tests {
		v, _, ok := m.Get(tt.key, t0.Add(tt.at))
		if v != tt.want || ok != tt.ok {
			t.Errorf("get(%s) at +%s = %d, %v; want %d, %v", tt.key, tt.at, v, ok, tt.want, tt.ok)
		}
	}
	// Past max, the oldest go first; expired entries go at the next put.
	for i := range 5 {
		m.Put("k"+strconv.Itoa(i), i, t0.Add(3*time.Second), t0.Add(3*time.Second))
	}
	if n := m.Len(); n != 3 {
		t.Fatalf("len = %d, want the max of 3", n)
	}
	if _, _, ok := m.Get("k4", t0.Add(4*time.Second)); !ok {
		t.Error("newest entry evicted")
	}
	if _, _, ok := m.Get("a", t0.Add(4*time.Second)); ok {
		t.Error("oldest entry kept past max")
	}
	m.Put("late", 9, t0.Add(20*time.Second), t0.Add(20*time.Second))
	if n := m.Len(); n != 1 {
		t.Errorf("after every other entry expired, len = %d, want 1", n)
	}
	// A long run keeps the queue compact.
	for i := range 10000 {
		at := t0.Add(time.Duration(i) * time.Second)
		m.Put("x", i, at, at)
	}
	if len(m.order)-m.head > 2 || cap(m.order) > 4096 {
		t.Errorf("queue holds %d live of %d slots (cap %d) for one key", len(m.order)-m.head, len(m.order), cap(m.order))
	}
}

// TestCacheBoundedInBytes: the byte bound evicts the oldest entries however few they are,
// counts a replaced entry once, and the size follows deletions.
func TestCacheBoundedInBytes(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(0, 0)
	size := func(key string, v []byte) int64 { return int64(len(key) + len(v)) }
	m := New(time.Minute, 1000, 10_000, size)
	page := make([]byte, 3000)
	for i := range 5 {
		m.Put("p"+strconv.Itoa(i), page, t0, t0)
	}
	if n, b := m.Len(), m.Bytes(); n != 3 || b != 3*3002 {
		t.Fatalf("5 pages of 3 KB under a 10 KB bound: %d entries, %d bytes; want the newest 3, 9006 bytes", n, b)
	}
	if _, _, ok := m.Get("p4", t0); !ok {
		t.Error("the newest page was evicted")
	}
	if _, _, ok := m.Get("p1", t0); ok {
		t.Error("an old page was kept past the byte bound")
	}
	m.Put("p4", make([]byte, 10), t0, t0) // replaced by a small value: counted once
	if b := m.Bytes(); b != 2*3002+12 {
		t.Errorf("after replacing p4: %d bytes, want %d", b, 2*3002+12)
	}
	m.Put("late", nil, t0.Add(2*time.Minute), t0.Add(2*time.Minute))
	if n, b := m.Len(), m.Bytes(); n != 1 || b != 4 {
		t.Errorf("after everything else expired: %d entries, %d bytes; want 1, 4", n, b)
	}
}

// TestCacheConcurrent puts and gets from many goroutines at once (run under -race in make
// test): every hit is the value stored under its own key, and the byte count stays within
// its bound and equal to the entries held.
func TestCacheConcurrent(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	size := func(key string, v []byte) int64 { return int64(len(key) + len(v)) }
	m := New(time.Minute, 1000, 64<<10, size)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				key := "k" + strconv.Itoa((g*7+i)%97)
				m.Put(key, []byte(strings.Repeat(key, 40)), now, now)
				if v, _, ok := m.Get(key, now); ok && string(v) != strings.Repeat(key, 40) {
					t.Errorf("get(%s) = a value of another key (%.12s...)", key, v)
					return
				}
			}
		}()
	}
	wg.Wait()
	if b := m.Bytes(); b > 64<<10 {
		t.Errorf("%d bytes held over a %d byte bound", b, 64<<10)
	}
}

// TestCacheClearAndNil: Clear empties the cache and its byte count; a nil cache (disabled
// by configuration) holds nothing and does not panic.
func TestCacheClearAndNil(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(0, 0)
	m := New[[32]byte, string](time.Minute, 10, 1<<20, nil)
	for i := range 5 {
		m.Put([32]byte{byte(i)}, "v", t0, t0)
	}
	if m.Len() != 5 || m.Bytes() != 5*(32+EntryOverhead) {
		t.Fatalf("5 entries: len %d, %d bytes; want 5, %d", m.Len(), m.Bytes(), 5*(32+EntryOverhead))
	}
	m.Clear()
	if _, _, ok := m.Get([32]byte{1}, t0); ok || m.Len() != 0 || m.Bytes() != 0 {
		t.Fatalf("after Clear: len %d, %d bytes", m.Len(), m.Bytes())
	}
	m.Put([32]byte{9}, "after", t0, t0)
	if v, _, ok := m.Get([32]byte{9}, t0); !ok || v != "after" {
		t.Fatalf("put after Clear: %q %v", v, ok)
	}
	var off *Cache[string, int]
	off.Put("a", 1, t0, t0)
	off.Clear()
	if _, _, ok := off.Get("a", t0); ok || off.Len() != 0 || off.Bytes() != 0 || off.TTL() != 0 {
		t.Fatal("a nil cache held something")
	}
}

// TestCacheConcurrentClear: Clear racing with puts and gets (a key revocation while
// requests authenticate) never yields another key's value, and the byte count stays equal
// to what the entries hold.
func TestCacheConcurrentClear(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	size := func(key string, v []byte) int64 { return int64(len(key) + len(v)) }
	m := New(time.Minute, 64, 1<<20, size)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 400 {
				key := "k" + strconv.Itoa((g*13+i)%31)
				if i%50 == 0 {
					m.Clear()
				}
				m.Put(key, []byte(strings.Repeat(key, 8)), now, now)
				if v, _, ok := m.Get(key, now); ok && string(v) != strings.Repeat(key, 8) {
					t.Errorf("get(%s) = a value of another key (%.12s...)", key, v)
					return
				}
			}
		})
	}
	wg.Wait()
	var sum int64
	for i := range 31 {
		key := "k" + strconv.Itoa(i)
		if v, _, ok := m.Get(key, now); ok {
			sum += size(key, v)
		}
	}
	if b := m.Bytes(); b != sum {
		t.Errorf("byte count %d, entries hold %d", b, sum)
	}
}

// TestGetOrLoad: a fresh entry is returned without loading, a stale or missing one is
// loaded and kept, an error is not kept, and a nil cache loads every time; run by many
// goroutines at once (under -race in make test), every caller gets its own key's value.
func TestGetOrLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Unix(0, 0)
	var loads atomic.Int64
	load := func(_ context.Context, key string) (string, error) {
		loads.Add(1)
		if key == "bad" {
			return "", errors.New("no such key")
		}
		return "v" + key, nil
	}
	m := New(time.Minute, 100, 1<<20, func(k, v string) int64 { return int64(len(k) + len(v)) })
	for range 3 {
		if v, err := m.GetOrLoad(ctx, "a", now, load); err != nil || v != "va" {
			t.Fatalf("GetOrLoad(a) = %q, %v", v, err)
		}
	}
	if n := loads.Load(); n != 1 {
		t.Errorf("%d loads of a fresh key, want 1", n)
	}
	if _, err := m.GetOrLoad(ctx, "a", now.Add(time.Minute), load); err != nil || loads.Load() != 2 {
		t.Errorf("a stale entry was not loaded again (%d loads, %v)", loads.Load(), err)
	}
	for range 2 {
		if _, err := m.GetOrLoad(ctx, "bad", now, load); err == nil {
			t.Fatal("GetOrLoad(bad): no error")
		}
	}
	if n := loads.Load(); n != 4 {
		t.Errorf("%d loads after two failing ones, want 4 (errors are not kept)", n)
	}
	var disabled *Cache[string, string]
	for range 2 {
		if v, err := disabled.GetOrLoad(ctx, "a", now, load); err != nil || v != "va" {
			t.Fatalf("nil cache: GetOrLoad(a) = %q, %v", v, err)
		}
	}
	if n := loads.Load(); n != 6 {
		t.Errorf("%d loads after two through a nil cache, want 6", n)
	}

	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				key := strconv.Itoa((g*5 + i) % 41)
				if v, err := m.GetOrLoad(ctx, key, now, load); err != nil || v != "v"+key {
					t.Errorf("GetOrLoad(%s) = %q, %v", key, v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
