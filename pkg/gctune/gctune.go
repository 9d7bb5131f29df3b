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

import (
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/settings"
)

const (
	// Percent lets the heap grow to 5x what is live before a collection, instead of 2x.
	Percent = 400
	// MemoryLimit is the safety net of the larger target: as the heap nears it, the
	// collector runs as often as it takes to stay under it (its CPU share capped by the
	// runtime), so a burst of large answers cannot grow the process to 5x its live heap.
	// Deployments set GOMEMLIMIT to the container's memory limit less some headroom.
	MemoryLimit = 256 << 20
)

// EnvMemoryLimit names the container's memory limit in bytes, as Kubernetes' downward API
// hands it (resourceFieldRef limits.memory): with it and without GOMEMLIMIT, the soft limit
// is LimitShare of it instead of MemoryLimit.
const EnvMemoryLimit = "MEMORY_LIMIT"

// LimitShare of the container's memory limit is the heap's soft limit: the rest is headroom
// for what the Go runtime does not count (goroutine stacks in flight, cgo-free buffers of
// the kernel) before the container is killed.
const LimitShare = 0.9

// Apply sets Percent and the memory limit unless getenv names GOGC or GOMEMLIMIT. The limit
// is LimitShare of MEMORY_LIMIT when that is a positive byte count, else MemoryLimit.
func Apply(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(Percent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(Limit(getenv))
	}
}

// Limit is the soft memory limit Apply sets when GOMEMLIMIT is unset.
func Limit(getenv func(string) string) int64 {
	if n, err := strconv.ParseInt(strings.TrimSpace(getenv(EnvMemoryLimit)), 10, 64); err == nil && n > 0 {
		return int64(float64(n) * LimitShare)
	}
	return MemoryLimit
}

// Env documents the variables Apply reads, for every binary's configuration table (--help,
// --print-env, deployment checks). Apply runs before the configuration is parsed (the GC
// settings must hold from the first allocation), so they have no flags.
var Env = []settings.External{
	{Env: "GOGC", Default: strconv.Itoa(Percent), Usage: "Go's GC target percent, read by the Go runtime; the binary sets 400 when unset"},
	{Env: "GOMEMLIMIT", Default: "256MiB", Usage: "Go's soft memory limit, read by the Go runtime; when unset the binary sets 90% of MEMORY_LIMIT, else 256MiB"},
	{Env: EnvMemoryLimit, Usage: "the container's memory limit in bytes (Kubernetes downward API); the base of the soft memory limit when GOMEMLIMIT is unset"},
}
