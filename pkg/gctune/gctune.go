// Package gctune holds the garbage-collector defaults of sensorgate's binaries, applied at
// start where the standard GOGC / GOMEMLIMIT variables are unset (those keep their usual
// meaning and win).
//
// Every request of the gateway and of the services allocates (a 500-row readings page is
// ~1 MB of decoded values and JSON) while the live heap stays small, so at Go's default
// target the collector runs every few requests. Measured: the gateway spends 9-15% less
// CPU per request at a target of 400 (docs/traffic.md), and a service's 500-row page p99
// on a 10-million-reading store drops from 8.9-11 ms to 5.4-6.7 ms (docs/services.md).
package gctune

import "runtime/debug"

const (
	// Percent lets the heap grow to 5x what is live before a collection, instead of 2x.
	Percent = 400
	// MemoryLimit is the safety net of the larger target: as the heap nears it, the
	// collector runs as often as it takes to stay under it (its CPU share capped by the
	// runtime), so a burst of large answers cannot grow the process to 5x its live heap.
	// Deployments set GOMEMLIMIT to the container's memory limit less some headroom.
	MemoryLimit = 256 << 20
)

// Apply sets Percent and MemoryLimit unless getenv names GOGC or GOMEMLIMIT.
func Apply(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(Percent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(MemoryLimit)
	}
}
