package store

import (
	"sync/atomic"
	"time"
)

// Ingest phases, timed so that the benchmark can say where a batch's time goes (Go's
// encoding and compression, or PostgreSQL's lookup, insert and commit).
const (
	phasePrepare  = iota // stations merged, measurements JSON, dictionaries, partitions
	phaseStations        // transaction begun, stations upserted and locked
	phaseQuality         // QARTOD tests run (with their stored context when not cached)
	phaseLookup          // stored keys looked up
	phaseCompress        // new readings cut into blocks, block ids taken, inline readings compressed
	phaseReadings        // readings written (blocks compressed meanwhile)
	phaseBlocks          // blocks written
	phaseCounters        // station counters moved
	phaseCommit          // committed
	phaseCount
)

var phaseNames = [phaseCount]string{"prepare", "stations", "quality", "lookup", "compress", "readings", "blocks", "counters", "commit"}

// phaseTimes accumulates the time spent in each phase over every batch.
type phaseTimes struct{ ns [phaseCount]atomic.Int64 }

// phaseClock times the phases of one batch.
type phaseClock struct {
	p    *phaseTimes
	last time.Time
}

func (p *phaseTimes) start() phaseClock { return phaseClock{p: p, last: time.Now()} }

// done adds the time since the previous phase ended to phase i.
func (c *phaseClock) done(i int) {
	now := time.Now()
	c.p.ns[i].Add(int64(now.Sub(c.last)))
	c.last = now
}
