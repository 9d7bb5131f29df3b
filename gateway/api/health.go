package api

import (
	"context"
	"log/slog"
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
	// Probe returns optional detail (a status struct) and an error when the dependency is
	// unhealthy. Both go to the log only: error texts of drivers name users, hosts and
	// ports, which /readyz, served without a key, must not show.
	Probe func(ctx context.Context) (detail any, err error)
}

// Component states shown by /readyz.
const (
	StateOK = "ok"
	// StateDown: a critical dependency fails; the gateway is not ready.
	StateDown = "down"
	// StateDegraded: a non-critical dependency fails; the gateway serves without it.
	StateDegraded = "degraded"
)

// readiness is the /readyz body: the overall status and each component's state, nothing
// else.
type readiness struct {
	Status string            `json:"status"` // ready | not_ready
	Checks map[string]string `json:"checks"`
}

func healthz(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz runs every check at once, each under probeTimeout, and answers 200 when every
// critical check passes, 503 otherwise; the body names each component and its state. A
// check's failure is logged when its state changes: at INFO until it has once succeeded
// (dependencies still starting), at WARN after that (a real failure).
func readyz(log *slog.Logger, checks []Check) gin.HandlerFunc {
	var mu sync.Mutex
	last := map[string]string{}
	everOK := map[string]bool{}
	report := func(ctx context.Context, ch Check, state string, detail any, err error) {
		mu.Lock()
		prev, seen := last[ch.Name]
		last[ch.Name] = state
		wasOK := everOK[ch.Name]
		if state == StateOK {
			everOK[ch.Name] = true
		}
		mu.Unlock()
		if seen && prev == state {
			return
		}
		switch {
		case state == StateOK && seen:
			log.InfoContext(ctx, "readiness: component recovered", "component", ch.Name, "detail", detail)
		case state == StateOK:
		case !wasOK:
			log.InfoContext(ctx, "readiness: component not ready yet", "component", ch.Name, "state", state, "err", err, "detail", detail)
		default:
			log.WarnContext(ctx, "readiness: component failing", "component", ch.Name, "state", state, "err", err, "detail", detail)
		}
	}
	return func(c *gin.Context) {
		res := readiness{Status: "ready", Checks: make(map[string]string, len(checks))}
		var rmu sync.Mutex
		var wg sync.WaitGroup
		for _, ch := range checks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(c.Request.Context(), probeTimeout)
				defer cancel()
				detail, err := ch.Probe(ctx)
				state := StateOK
				switch {
				case err != nil && ch.Critical:
					state = StateDown
				case err != nil:
					state = StateDegraded
				}
				report(c.Request.Context(), ch, state, detail, err)
				rmu.Lock()
				res.Checks[ch.Name] = state
				if state == StateDown {
					res.Status = "not_ready"
				}
				rmu.Unlock()
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
