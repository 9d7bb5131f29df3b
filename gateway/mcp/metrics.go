package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/pkg/obs"
)

// Outcomes of a tool call in sensorgate_mcp_calls_total.
const (
	outcomeOK        = "ok"
	outcomeToolError = "tool_error" // the tool ran and failed (isError): bad argument, no data, service down
	outcomeRPCError  = "rpc_error"  // the call itself was refused (unknown tool, invalid params)
)

// unknownTool labels a call whose tool name was refused, so that made-up names do not
// grow the metrics.
const unknownTool = "unknown"

// callMetrics count and time tool calls per scope and tool: which tools agents use, how
// often they fail, and how long they take (Mcp-Name names the tool on the wire).
type callMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// subscriptions counts the open subscriptions/listen streams.
	subscriptions prometheus.Gauge
}

// callBuckets span a catalog answer from memory to a year of readings from a service.
var callBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

func newCallMetrics(reg prometheus.Registerer) (*callMetrics, error) {
	m := &callMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: obs.Namespace, Name: "mcp_calls_total",
			Help: "MCP tools/call answered, by scope, tool and outcome (ok, tool_error, rpc_error)."}, []string{"scope", "tool", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: obs.Namespace, Name: "mcp_call_duration_seconds",
			Help: "MCP tools/call latency, by scope and tool.", Buckets: callBuckets}, []string{"scope", "tool"}),
		subscriptions: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: obs.Namespace, Name: "mcp_subscriptions_open",
			Help: "MCP subscriptions/listen streams open on this replica."}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.calls, err = register(reg, m.calls); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	if m.subscriptions, err = register(reg, m.subscriptions); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c on reg; a second handler on the same registry (tests) shares the
// collector registered first.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return c, fmt.Errorf("mcp: register metric: %w", err)
		}
		return are.ExistingCollector.(C), nil
	}
	return c, nil
}

// observe records one answered tools/call.
func (m *callMetrics) observe(scope, tool string, known bool, answer []byte, d time.Duration) {
	var msg struct {
		Error  json.RawMessage `json:"error"`
		Result struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	_ = json.Unmarshal(answer, &msg)
	outcome := outcomeOK
	switch {
	case len(msg.Error) > 0 && string(msg.Error) != "null":
		outcome = outcomeRPCError
	case msg.Result.IsError:
		outcome = outcomeToolError
	}
	if !known && outcome == outcomeRPCError || len(tool) > 64 || tool == "" {
		tool = unknownTool
	}
	m.calls.WithLabelValues(scope, tool, outcome).Inc()
	m.duration.WithLabelValues(scope, tool).Observe(d.Seconds())
}
