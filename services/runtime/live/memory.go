package live

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// DefaultMaxEntries bounds the in-process log besides Retention (about 0.5 KB an entry).
const DefaultMaxEntries = 200_000

// Memory is the in-process log (no Redis). Positions come from the wall clock in
// milliseconds, never going back, so a restarted service continues after the positions
// its previous run handed out: a gateway following it, or a client resuming, reads on
// without a duplicate (what the previous run logged and nobody read is lost with it).
type Memory struct {
	mu         sync.Mutex
	pos        []contract.Position
	ents       []Entry
	start      int // first live index of pos and ents
	last       contract.Position
	notify     chan struct{} // closed and replaced by every Append
	now        func() time.Time
	retention  time.Duration
	maxEntries int
}

// NewMemory returns an empty in-process log; zero arguments take Retention,
// DefaultMaxEntries and time.Now.
func NewMemory(retention time.Duration, maxEntries int, now func() time.Time) *Memory {
	if retention <= 0 {
		retention = Retention
	}
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	if now == nil {
		now = time.Now
	}
	return &Memory{notify: make(chan struct{}), now: now, retention: retention, maxEntries: maxEntries,
		last: contract.Position{MS: uint64(now().UnixMilli())}}
}

// Backend implements Log.
func (m *Memory) Backend() string { return "memory" }

// Close implements Log.
func (m *Memory) Close() error { return nil }

// Append implements Log.
func (m *Memory) Append(_ context.Context, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := uint64(m.now().UnixMilli())
	for _, e := range entries {
		p := contract.Position{MS: ms}
		if p.MS <= m.last.MS {
			p = contract.Position{MS: m.last.MS, Seq: m.last.Seq + 1}
		}
		m.pos = append(m.pos, p)
		m.ents = append(m.ents, e)
		m.last = p
	}
	m.trim(ms)
	close(m.notify)
	m.notify = make(chan struct{})
	return nil
}

// trim drops entries beyond retention or the size bound; the backing arrays are
// compacted once half of them is dead.
func (m *Memory) trim(nowMS uint64) {
	cut := uint64(0)
	if r := uint64(m.retention.Milliseconds()); nowMS > r {
		cut = nowMS - r
	}
	for m.start < len(m.pos) && (m.pos[m.start].MS < cut || len(m.pos)-m.start > m.maxEntries) {
		m.ents[m.start] = Entry{}
		m.start++
	}
	if m.start > len(m.pos)/2 && m.start > 1024 {
		m.pos = append([]contract.Position(nil), m.pos[m.start:]...)
		m.ents = append([]Entry(nil), m.ents[m.start:]...)
		m.start = 0
	}
}

// Read implements Log.
func (m *Memory) Read(ctx context.Context, after *contract.Position, limit int, wait time.Duration) (Page, error) {
	if limit <= 0 {
		limit = contract.DefaultEventsLimit
	}
	var timer <-chan time.Time
	for {
		m.mu.Lock()
		m.trim(uint64(m.now().UnixMilli()))
		p := Page{Last: m.last}
		if m.start < len(m.pos) {
			o := m.pos[m.start]
			p.Oldest = &o
		}
		if after == nil {
			m.mu.Unlock()
			return p, nil
		}
		live := m.pos[m.start:]
		i := sort.Search(len(live), func(i int) bool { return live[i].Compare(*after) > 0 })
		if i < len(live) {
			n := min(len(live)-i, limit)
			p.Positions = append([]contract.Position(nil), live[i:i+n]...)
			p.Entries = append([]Entry(nil), m.ents[m.start+i:m.start+i+n]...)
			m.mu.Unlock()
			return p, nil
		}
		notify := m.notify
		m.mu.Unlock()
		if wait <= 0 {
			return p, nil
		}
		if timer == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-notify:
		case <-timer:
			wait = 0
		case <-ctx.Done():
			return p, ctx.Err()
		}
	}
}
