package live

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// DefaultMaxEntries bounds the in-process log besides Retention (about 0.5 KB an entry).
const DefaultMaxEntries = 200_000

// Memory is the in-process log (no Redis). Positions come from the wall clock in
// milliseconds, never going back, so a restarted service continues after the positions
// its previous run handed out: a gateway following it, or a client resuming, reads on
// without a duplicate. With a store attached (Attach, as the services do) every entry is
// also written to the store's event table, and a cursor older than what memory holds (a
// restart emptied it, or the size bound dropped it) is answered from there: what the
// previous run logged and nobody read is not lost within the retention.
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

	// table is the store's copy (nil: memory only); tableOldest its oldest position
	// (nil when empty), pruned every pruneEvery.
	table       store.EventTable
	tableOldest *contract.Position
	pruned      time.Time
}

// pruneEvery is how often Append deletes the store's entries beyond the retention.
const pruneEvery = time.Minute

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

// Attach makes t the log's durable copy: the log continues after the newest position t
// holds (so positions never go back, even when the clock did) and answers older cursors
// from it. Call it before the first Append.
func (m *Memory) Attach(ctx context.Context, t store.EventTable) error {
	oldest, newest, ok, err := t.EventBounds(ctx)
	if err != nil {
		return fmt.Errorf("live: attach the store's log: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.table = t
	if ok {
		o := contract.Position{MS: oldest.MS, Seq: oldest.Seq}
		m.tableOldest = &o
		if n := (contract.Position{MS: newest.MS, Seq: newest.Seq}); n.Compare(m.last) > 0 {
			m.last = n
		}
	}
	return nil
}

// Append implements Log. With a store attached the entries are written there after they
// are in memory (and visible to followers); a failed write is returned, the entries
// stay in memory.
func (m *Memory) Append(ctx context.Context, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	m.mu.Lock()
	ms := uint64(m.now().UnixMilli())
	rows := make([]store.EventRow, 0, len(entries))
	for _, e := range entries {
		p := contract.Position{MS: ms}
		if p.MS <= m.last.MS {
			p = contract.Position{MS: m.last.MS, Seq: m.last.Seq + 1}
		}
		m.pos = append(m.pos, p)
		m.ents = append(m.ents, e)
		m.last = p
		rows = append(rows, store.EventRow{MS: p.MS, Seq: p.Seq, Body: e.Body})
	}
	m.trim(ms)
	close(m.notify)
	m.notify = make(chan struct{})
	table := m.table
	if table != nil && m.tableOldest == nil {
		o := m.pos[len(m.pos)-len(entries)]
		m.tableOldest = &o
	}
	prune := table != nil && m.now().Sub(m.pruned) >= pruneEvery
	if prune {
		m.pruned = m.now()
	}
	m.mu.Unlock()
	if table == nil {
		return nil
	}
	if err := table.AppendEvents(ctx, rows); err != nil {
		return fmt.Errorf("live: %d entries are in memory but not in the store (lost at a restart): %w", len(rows), err)
	}
	if prune {
		return m.pruneTable(ctx, table)
	}
	return nil
}

// pruneTable deletes the store's entries beyond the retention and learns its new oldest.
func (m *Memory) pruneTable(ctx context.Context, t store.EventTable) error {
	cut := m.cut(uint64(m.now().UnixMilli()))
	if err := t.PruneEvents(ctx, cut); err != nil {
		return fmt.Errorf("live: %w", err)
	}
	oldest, _, ok, err := t.EventBounds(ctx)
	if err != nil {
		return fmt.Errorf("live: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tableOldest = nil
	if ok {
		m.tableOldest = &contract.Position{MS: oldest.MS, Seq: oldest.Seq}
	}
	return nil
}

// cut is the first millisecond within the retention.
func (m *Memory) cut(nowMS uint64) uint64 {
	if r := uint64(m.retention.Milliseconds()); nowMS > r {
		return nowMS - r
	}
	return 0
}

// trim drops entries beyond retention or the size bound; the backing arrays are
// compacted once half of them is dead.
func (m *Memory) trim(nowMS uint64) {
	cut := m.cut(nowMS)
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
		nowMS := uint64(m.now().UnixMilli())
		m.trim(nowMS)
		p := Page{Last: m.last}
		if m.start < len(m.pos) {
			o := m.pos[m.start]
			p.Oldest = &o
		}
		if m.tableOldest != nil && (p.Oldest == nil || m.tableOldest.Compare(*p.Oldest) < 0) {
			o := *m.tableOldest
			if o.MS < m.cut(nowMS) { // not pruned yet, but beyond the retention
				o = contract.Position{MS: m.cut(nowMS)}
			}
			p.Oldest = &o
		}
		if after == nil {
			m.mu.Unlock()
			return p, nil
		}
		if t := m.table; t != nil && after.Compare(m.last) < 0 && (m.start == len(m.pos) || after.Compare(m.pos[m.start]) < 0) {
			// Older than memory: a restart emptied it, or the size bound dropped it.
			m.mu.Unlock()
			return m.readTable(ctx, t, p, *after, limit)
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

// readTable answers a cursor older than memory from the store's copy (entries beyond
// the retention excluded, as from memory).
func (m *Memory) readTable(ctx context.Context, t store.EventTable, p Page, after contract.Position, limit int) (Page, error) {
	if c := m.cut(uint64(m.now().UnixMilli())); after.MS < c {
		after = contract.Position{MS: c - 1, Seq: 1<<63 - 1}
	}
	rows, err := t.EventsAfter(ctx, after.MS, after.Seq, limit)
	if err != nil {
		return p, fmt.Errorf("live: %w", err)
	}
	for _, r := range rows {
		after = contract.Position{MS: r.MS, Seq: r.Seq}
		p.Positions = append(p.Positions, after)
		p.Entries = append(p.Entries, Entry{Body: r.Body})
	}
	if len(rows) < limit {
		// The rest comes from memory: entries appended but not yet written to the store
		// must not look like the end of the log.
		m.mu.Lock()
		live := m.pos[m.start:]
		i := sort.Search(len(live), func(i int) bool { return live[i].Compare(after) > 0 })
		n := min(len(live)-i, limit-len(rows))
		p.Positions = append(p.Positions, live[i:i+n]...)
		p.Entries = append(p.Entries, m.ents[m.start+i:m.start+i+n]...)
		m.mu.Unlock()
	}
	return p, nil
}
