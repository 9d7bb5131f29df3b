// Package usage counts requests per API key per hour, for the account dashboard: an
// in-process counter on the request path (an atomic add), flushed every few seconds to the
// counters every replica shares (Redis, HINCRBY) or, without Redis, straight to the
// catalog; a copier keeps the shared hours in the catalog for UsageRetention (90 days).
//
// The request path only adds to an atomic integer of the key (one sync.Map load); every
// network and database call happens in the background, batched per flush.
package usage

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/auth"
)

// DefaultFlushInterval is how often a replica's counts reach the shared counters: how far
// behind "requests this hour" may be.
const DefaultFlushInterval = 5 * time.Second

// Counter counts requests per key id in this process until the next flush.
type Counter struct {
	// keys maps a key id (text) to its *entry; entries are never removed (there are as
	// many as keys that made a request on this replica), so an Add never races a delete.
	keys sync.Map
}

type entry struct {
	n  atomic.Int64
	id uuid.UUID
}

// Add counts one request of the key whose id is keyID (auth.Identity.KeyIDText).
func (c *Counter) Add(keyID string) {
	if e, ok := c.keys.Load(keyID); ok {
		e.(*entry).n.Add(1)
		return
	}
	id, err := uuid.Parse(keyID)
	if err != nil {
		return // not a key id: nothing to count against
	}
	e, _ := c.keys.LoadOrStore(keyID, &entry{id: id})
	e.(*entry).n.Add(1)
}

// Drain returns the counts since the last Drain and sets them back to zero.
func (c *Counter) Drain() map[uuid.UUID]int64 {
	out := map[uuid.UUID]int64{}
	c.keys.Range(func(_, v any) bool {
		e := v.(*entry)
		if n := e.n.Swap(0); n > 0 {
			out[e.id] += n
		}
		return true
	})
	return out
}

// Middleware counts every authenticated request; it goes after auth.Middleware.
func (c *Counter) Middleware() gin.HandlerFunc {
	return func(g *gin.Context) {
		if id, ok := auth.FromGin(g); ok {
			c.Add(id.KeyIDText)
		}
		g.Next()
	}
}

// Sink receives the drained counts of one hour.
type Sink interface {
	AddUsage(ctx context.Context, hour time.Time, counts map[uuid.UUID]int64) error
}

// Toucher records when keys were last used.
type Toucher interface {
	TouchKeys(ctx context.Context, ids []uuid.UUID, at time.Time) error
}

// Flusher moves a Counter's counts to a Sink every interval, and the keys' last use to the
// catalog.
type Flusher struct {
	Counter *Counter
	Sink    Sink
	Touch   Toucher
	Log     *slog.Logger
	Now     func() time.Time
}

// Flush sends what was counted since the last flush, attributed to the current hour. On a
// failure the counts are put back, to be sent with the next flush.
func (f *Flusher) Flush(ctx context.Context) error {
	counts := f.Counter.Drain()
	if len(counts) == 0 {
		return nil
	}
	now := f.now()
	if err := f.Sink.AddUsage(ctx, now.Truncate(time.Hour), counts); err != nil {
		for id, n := range counts {
			f.Counter.addN(id, n)
		}
		return err
	}
	if f.Touch != nil {
		ids := make([]uuid.UUID, 0, len(counts))
		for id := range counts {
			ids = append(ids, id)
		}
		if err := f.Touch.TouchKeys(ctx, ids, now); err != nil {
			return err
		}
	}
	return nil
}

func (c *Counter) addN(id uuid.UUID, n int64) {
	e, _ := c.keys.LoadOrStore(id.String(), &entry{id: id})
	e.(*entry).n.Add(n)
}

func (f *Flusher) now() time.Time {
	if f.Now != nil {
		return f.Now().UTC()
	}
	return time.Now().UTC()
}

// Run flushes every interval until ctx ends, then once more (a stopping replica hands
// over what it counted).
func (f *Flusher) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultFlushInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			f.logErr(f.Flush(fctx))
			return
		case <-t.C:
			fctx, cancel := context.WithTimeout(ctx, interval)
			f.logErr(f.Flush(fctx))
			cancel()
		}
	}
}

func (f *Flusher) logErr(err error) {
	if err != nil && f.Log != nil {
		f.Log.Warn("usage: flush failed; the counts are kept for the next one", "err", err)
	}
}
