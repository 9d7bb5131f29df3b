package main

import "runtime/debug"

// GC defaults of the gateway, used when the standard GOGC / GOMEMLIMIT variables are unset.
const (
	// defaultGCPercent lets the heap grow to 5x what is live before a collection, instead of
	// Go's 2x: the gateway's live heap is small (the readings cache holds at most a few tens
	// of MB of answers in normal use), and every request allocates, so at Go's default the
	// collector ran often enough to cost several percent of the CPU under load.
	defaultGCPercent = 400
	// defaultMemoryLimit is the safety net of the larger target: as the heap nears it, the
	// collector runs as often as it takes to stay under it (its CPU share capped by the
	// runtime at half), so a burst of large answers cannot grow the process to 5x its live
	// heap. Set GOMEMLIMIT to the container's memory limit (less some headroom) to raise it.
	defaultMemoryLimit = 256 << 20
)

// tuneGC applies the gateway's GC defaults where the environment sets none; GOGC and
// GOMEMLIMIT, read by the Go runtime itself, keep their usual meaning and win.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
}
