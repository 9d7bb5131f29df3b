package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// probeTimeout bounds each readiness probe.
const probeTimeout = 2 * time.Second

// Check is one dependency /readyz reports on. A failing Critical check makes the gateway
// not ready (503); a failing non-critical one (Redis, whose outage the gateway survives
// with a local limiter) is reported and leaves it ready.
type Check struct {
	Name     string
	Critical bool
	// Probe returns optional detail to show (a status struct) and an error when the
	// dependency is unhealthy.
	Probe func(ctx context.Context) (detail any, err error)
}

type checkResult struct {
	OK        bool    `json:"ok"`
	Critical  bool    `json:"critical"`
	LatencyMS float64 `json:"latency_ms"`
	Error     string  `json:"error,omitempty"`
	Detail    any     `json:"detail,omitempty"`
}

type readiness struct {
	Status string                 `json:"status"` // ready | not_ready
	Checks map[string]checkResult `json:"checks"`
}

func healthz(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz runs every check at once, each under probeTimeout, and answers 200 when every
// critical check passes, 503 otherwise; the body has one field per dependency.
func readyz(checks []Check) gin.HandlerFunc {
	return func(c *gin.Context) {
		res := readiness{Status: "ready", Checks: make(map[string]checkResult, len(checks))}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, ch := range checks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(c.Request.Context(), probeTimeout)
				defer cancel()
				start := time.Now()
				detail, err := ch.Probe(ctx)
				r := checkResult{OK: err == nil, Critical: ch.Critical, Detail: detail,
					LatencyMS: float64(time.Since(start).Microseconds()) / 1000}
				if err != nil {
					r.Error = err.Error()
				}
				mu.Lock()
				res.Checks[ch.Name] = r
				if err != nil && ch.Critical {
					res.Status = "not_ready"
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		status := http.StatusOK
		if res.Status != "ready" {
			status = http.StatusServiceUnavailable
		}
		c.Header("Cache-Control", "no-store")
		c.JSON(status, res)
	}
}
