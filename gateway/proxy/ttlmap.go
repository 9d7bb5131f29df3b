package proxy

import (
	"sync"
	"time"
)

// ttlMap is the gateway's one TTL cache type: a map whose entries expire a fixed TTL after
// they were stored, bounded in bytes (and in entries). Every entry has the same TTL, so
// insertion order is expiry order: a FIFO of insertions lets a put evict expired (and, when
// over a bound, oldest) entries in amortized O(1), without scanning.
type ttlMap[V any] struct {
	ttl      time.Duration
	max      int
	maxBytes int64
	// size is what an entry costs: its key, its value and the map's overhead.
	size  func(key string, v V) int64
	bytes int64 // guarded by mu

	mu    sync.RWMutex
	items map[string]ttlEntry[V]
	order []ttlQueued // insertions, oldest first, from head
	head  int
	seq   uint64
}

type ttlEntry[V any] struct {
	v    V
	at   time.Time
	seq  uint64
	size int64
}

// entryOverhead approximates what the map, the queue and the entry header hold per entry.
const entryOverhead = 96

type ttlQueued struct {
	key string
	seq uint64
}

// newTTLMap returns an empty map of at most max entries and maxBytes bytes as size counts
// them (nil size: the key and entryOverhead only).
func newTTLMap[V any](ttl time.Duration, max int, maxBytes int64, size func(string, V) int64) *ttlMap[V] {
	if size == nil {
		size = func(key string, _ V) int64 { return int64(len(key)) + entryOverhead }
	}
	return &ttlMap[V]{ttl: ttl, max: max, maxBytes: maxBytes, size: size, items: make(map[string]ttlEntry[V])}
}

// get returns the entry of key stored less than TTL before now.
func (m *ttlMap[V]) get(key string, now time.Time) (V, time.Time, bool) {
	m.mu.RLock()
	e, ok := m.items[key]
	m.mu.RUnlock()
	if !ok || now.Sub(e.at) >= m.ttl {
		var zero V
		return zero, time.Time{}, false
	}
	return e.v, e.at, true
}

// put stores v as of at, then drops what has expired by now and, past max, the oldest.
func (m *ttlMap[V]) put(key string, v V, at, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	if old, ok := m.items[key]; ok {
		m.bytes -= old.size
	}
	n := m.size(key, v)
	m.bytes += n
	m.items[key] = ttlEntry[V]{v: v, at: at, seq: m.seq, size: n}
	m.order = append(m.order, ttlQueued{key: key, seq: m.seq})
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
		m.order[m.head] = ttlQueued{}
		m.head++
	}
	m.compact()
}

// compact reclaims the consumed front of the queue once it is most of it.
func (m *ttlMap[V]) compact() {
	if m.head > 1024 && m.head > len(m.order)/2 {
		n := copy(m.order, m.order[m.head:])
		clear(m.order[n:])
		m.order = m.order[:n]
		m.head = 0
	}
}

func (m *ttlMap[V]) len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.items)
}

// size is the bytes held, as size counts them.
func (m *ttlMap[V]) sizeBytes() int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.bytes
}
