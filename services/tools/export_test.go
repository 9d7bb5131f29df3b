package tools

import "github.com/sensorgate/sensorgate/services/runtime/mcpserver"

// Names returns the full names (<service_id>.<tool>) of the tools Register adds for cfg, in
// the order tools/list shows them: what the tests expect of tools/list and /v1/meta.
func Names(cfg Config) []string {
	out := []string{}
	for _, t := range append([]string{ToolLatestObservation, ToolObservations, ToolListStations, ToolDescribeStation}, cfg.domain()...) {
		out = append(out, mcpserver.ToolName(cfg.ServiceID, t))
	}
	return out
}
