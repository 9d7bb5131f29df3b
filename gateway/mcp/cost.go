package mcp

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// Tool costs in the rate limit (docs/mcp.md "Rate limits"). Every POST to an MCP endpoint
// is one request of the key's budget, taken by the rate limit middleware before the
// body is read. A tools/call that reads a time span costs one more request for every
// full 30 days of it: the services' work grows with the span (an aggregate reads every
// value in it), so a year of a sensor costs 13 requests and its latest reading 1. The
// span is the call's days, or since to until (until defaults to now); a call without a
// span costs 1.
const (
	costSpan = 30 * 24 * time.Hour
	// maxToolCost bounds the cost of one call (a decade of readings), so that a made-up
	// since does not take a whole budget.
	maxToolCost = 1 + 10*13
)

// toolCost is the number of requests one tools/call costs, from its arguments.
func toolCost(args json.RawMessage, now time.Time) int {
	var a struct {
		Days  *float64 `json:"days"`
		Since string   `json:"since"`
		Until string   `json:"until"`
	}
	if len(args) > 0 && json.Unmarshal(args, &a) != nil {
		return 1 // the tool refuses the arguments; the refusal costs the POST alone
	}
	var span time.Duration
	switch {
	case a.Days != nil && *a.Days > 0:
		span = time.Duration(*a.Days * float64(24*time.Hour))
	case strings.TrimSpace(a.Since) != "":
		since, err := contract.ParseTime(a.Since)
		if err != nil {
			return 1
		}
		until := now
		if strings.TrimSpace(a.Until) != "" {
			if until, err = contract.ParseTime(a.Until); err != nil {
				return 1
			}
		}
		span = until.Sub(since)
	}
	if span <= 0 {
		return 1
	}
	return min(1+int(span/costSpan), maxToolCost)
}

// chargeTool takes the cost of a tools/call beyond the POST itself from the caller's
// budget. When the budget cannot pay it, the call is refused as any request over the
// limit is (429, Retry-After, the x-ratelimit-* headers) and chargeTool returns false.
func (h *Handler) chargeTool(c *gin.Context, args json.RawMessage) bool {
	if h.charge == nil {
		return true
	}
	cost := toolCost(args, h.now())
	if cost <= 1 {
		return true
	}
	if err := h.charge(c, cost-1); err != nil {
		h.fail(c, err)
		return false
	}
	return true
}
