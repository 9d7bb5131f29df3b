package mcp

import (
	"strings"

	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// One vocabulary for every MCP scope, the same as REST (docs/mcp.md "Vocabulary"):
// sensor_id, parameters (array), since/until, cursor, limit with one default and one
// maximum per kind of list. A limit above the maximum is clamped, as REST does, and the
// result states the limit applied.
const (
	// Sensor lists: REST's GET /sensors (its one parser, sensorquery).
	sensorListDefaultLimit = sensorquery.DefaultListLimit
	sensorListMaxLimit     = sensorquery.MaxListLimit
	// Readings pages: REST's readings (pkg/contract).
	readingsDefaultLimit = contract.DefaultReadingsLimit
	readingsMaxLimit     = contract.MaxReadingsLimit
)

// deprecatedNote is the sentence a tool description carries for each old argument name
// that still works for one release.
func deprecatedNote(pairs ...string) string {
	var parts []string
	for i := 0; i+1 < len(pairs); i += 2 {
		parts = append(parts, "`"+pairs[i]+"` (use `"+pairs[i+1]+"`)")
	}
	return " Deprecated (next release removes them): " + strings.Join(parts, ", ") + "."
}

// limitOf applies a list's default and maximum to a given limit: absent is the default,
// below 1 is refused, above the maximum is clamped.
func limitOf(tool string, given *int, def, maximum int) (int, error) {
	if given == nil {
		return def, nil
	}
	if *given < 1 {
		return 0, badArg(tool, "limit", "must be a positive integer (values above %d are clamped to %d), got %d", maximum, maximum, *given)
	}
	return min(*given, maximum), nil
}
