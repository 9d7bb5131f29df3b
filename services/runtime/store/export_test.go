package store

import "time"

// IngestPhases returns the time s spent in each ingest phase so far (benchmarks).
func IngestPhases(s Store) map[string]time.Duration { return s.(*sqlStore).phases.snapshot() }

// SetBlockReadings sets the most readings a block holds and returns the previous value
// (benchmarks comparing block sizes; not safe while another store ingests).
func SetBlockReadings(n int) int {
	old := blockReadings
	blockReadings = n
	return old
}

// SetOverlapPack selects compressing blocks while the readings are written (true) or
// before, and returns the previous choice.
func SetOverlapPack(on bool) bool {
	old := overlapPack
	overlapPack = on
	return old
}

// SetBlockZstd selects zstd (true) or S2 for blocks and returns the previous choice.
func SetBlockZstd(on bool) bool {
	old := blockZstd
	blockZstd = on
	return old
}

// snapshot returns the accumulated time per phase name.
func (p *phaseTimes) snapshot() map[string]time.Duration {
	out := make(map[string]time.Duration, phaseCount)
	for i := range p.ns {
		out[phaseNames[i]] = time.Duration(p.ns[i].Load())
	}
	return out
}
