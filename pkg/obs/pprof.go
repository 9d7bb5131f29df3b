//go:build pprof

package obs

import (
	"log/slog"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
)

// A binary built with -tags pprof (the gateway, any service) serves net/http/pprof on
// PPROF_ADDR (e.g. 127.0.0.1:6060), for profiling under scripts/loadtest.sh and the live
// e2e benchmarks (docs/traffic.md, docs/live.md). It lives here, in the package every
// binary imports, so the binaries share one copy. Release builds never include it: the
// profiler would be one more listener to secure.
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
