// Package ttlcache holds sensorgate's one TTL cache type (docs/gateway.md "Caches"): a map
// whose entries expire a fixed TTL after they were stored, bounded in bytes (and in
// entries). The gateway's readings answers and sensor lookups (gateway/readings), its API key
// lookups, found and missed (gateway/auth), and the MCP catalog lookups (gateway/mcp) all
// use it, so one implementation carries the bound, the eviction order and the concurrency
// test under -race.
package ttlcache

import (
	"context"
	"sync"
	"time"
	"unsafe"
)

// Cache is a TTL map bounded in bytes. Every entry has the same TTL, so insertion order is
// expiry order: a FIFO of insertions lets a Put evict expired (and, when over a bound,
// oldest) entries in amortized O(1), without scanning. Safe for concurrent use. A nil
// *Cache is a disabled cache (a TTL of 0 in the configuration): it holds nothing.
type Cache[K comparable, V any] struct {
	ttl      time.Duration
	max      int
	maxBytes int64
	// size is what an entry costs: its key, its value and the map's overhead.
	size  func(key K, v V) int64
	bytes int64 // guarded by mu

	mu    sync.RWMutex
	items map[K]entry[V]
	order []queued[K] // insertions, oldest first, from head
	head  int
	seq   uint64
}

type entry[V any] struct {
	v    V
	at   time.Time
	seq  uint64
	size int64
}

// EntryOverhead approximates what the map, the queue and the entry header hold per entry;
// size functions add it to what their keys and values hold.
const EntryOverhead = 96

type queued[K comparable] struct {
	key K
	seq uint64
}

// New returns an empty cache of at most max entries and maxBytes bytes as size counts
// them (nil size: the key and EntryOverhead only).
func New[K comparable, V any](ttl time.Duration, max int, maxBytes int64, size func(K, V) int64) *Cache[K, V] {
	if size == nil {
		size = func(key K, _ V) int64 { return KeySize(key) + EntryOverhead }
	}
	return &Cache[K, V]{ttl: ttl, max: max, maxBytes: maxBytes, size: size, items: make(map[K]entry[V])}
}

// KeySize is what a key holds: a string's bytes and header, or the key's own size.
func KeySize[K comparable](key K) int64 {
	if s, ok := any(key).(string); ok {
		return int64(len(s)) + int64(unsafe.Sizeof(s))
	}
	return int64(unsafe.Sizeof(key))
}

// TTL is how long an entry is returned after the time it was stored as of.
func (m *Cache[K, V]) TTL() time.Duration {
	if m == nil {
		return 0
	}
	return m.ttl
}

// Get returns the entry of key stored (as of its at) less than TTL before now, and that at.
func (m *Cache[K, V]) Get(key K, now time.Time) (V, time.Time, bool) {
	if m == nil {
		var zero V
		return zero, time.Time{}, false
	}
	m.mu.RLock()
	e, ok := m.items[key]
	m.mu.RUnlock()
	if !ok || now.Sub(e.at) >= m.ttl {
		var zero V
		return zero, time.Time{}, false
	}
	return e.v, e.at, true
}

// GetOrLoad returns the entry of key fresh at now, or calls load and keeps what it returns
// as of now; an error is returned and not kept. A nil cache calls load every time.
// Concurrent misses of one key each call load (callers that must coalesce them wrap load).
func (m *Cache[K, V]) GetOrLoad(ctx context.Context, key K, now time.Time, load func(context.Context, K) (V, error)) (V, error) {
	if v, _, ok := m.Get(key, now); ok {
		return v, nil
	}
	v, err := load(ctx, key)
	if err != nil {
		return v, err
	}
	m.Put(key, v, now, now)
	return v, nil
}

// Put stores v as of at, then drops what has expired by now and, past a bound, the oldest.
func (m *Cache[K, V]) Put(key K, v V, at, now time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	if old, ok := m.items[key]; ok {
		m.bytes -= old.size
	}
	n := m.size(key, v)
	m.bytes += n
	m.items[key] = entry[V]{v: v, at: at, seq: m.seq, size: n}
	m.order = append(m.order, queued[K]{key: key, seq: m.seq})
	for m.head < len(m.order) {
		q := m.order[m.head]
		e, ok := m.items[q.key]
		switch {
		case !ok || e.seq != q.seq:
			// Deleted or stored again later: a newer queue entry stands for it.
		case len(m.items) > m.max || m.bytes > m.maxBytes || now.Sub(e.at) >= m.ttl:
			delete(m.items, q.key)
			m.bytes -= e.size
		default:
			// The oldest live entry is fresh and there is room: done.
			m.compact()
			return
		}
		m.order[m.head] = queued[K]{}
		m.head++
	}
	m.compact()
}

// Clear drops every entry (a revocation made by this process, a catalog change).
func (m *Cache[K, V]) Clear() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.items)
	clear(m.order)
	m.order, m.head, m.bytes = m.order[:0], 0, 0
}

// compact reclaims the consumed front of the queue once it is most of it.
func (m *Cache[K, V]) compact() {
	if m.head > 1024 && m.head > len(m.order)/2 {
		n := copy(m.order, m.order[m.head:])
		clear(m.order[n:])
		m.order = m.order[:n]
		m.head = 0
	}
}

// Len is the number of entries held, expired ones not yet dropped included.
func (m *Cache[K, V]) Len() int {
	if m == nil {
		return 0
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.items)
}

// Bytes is the bytes held, as the size function counts them.
func (m *Cache[K, V]) Bytes() int64 {
	if m == nil {
		return 0
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.bytes
}
