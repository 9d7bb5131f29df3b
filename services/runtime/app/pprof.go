//go:build pprof

package app

import (
	"log/slog"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
)

// A service binary built with -tags pprof serves net/http/pprof on PPROF_ADDR, like the
// gateway's (docs/traffic.md); the live e2e benchmarks use it (docs/live.md, profiling).
// Release builds never include it.
func init() {
	addr := os.Getenv("PPROF_ADDR")
	if addr == "" {
		return
	}
	go func() {
		if err := http.ListenAndServe(addr, nil); err != nil { //nolint:gosec // local profiling only
			slog.Error("pprof listener stopped", "addr", addr, "err", err)
		}
	}()
}
