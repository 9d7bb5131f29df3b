package tools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sensorgate/sensorgate/pkg/schemadefs"
)

// schemaFor infers the JSON Schema of T (property descriptions from `jsonschema` tags,
// omitempty fields optional, no additional properties) and lets the caller add what Go
// types cannot say: ranges, enums, formats, defaults.
func schemaFor[T any](tweak func(props map[string]*jsonschema.Schema)) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("infer schema of %T: %w", *new(T), err)
	}
	if tweak != nil {
		tweak(s.Properties)
	}
	return compact(s)
}

// outputDescriptionMin is the shortest description an output schema keeps: shorter ones
// only restate a field's name, and clients validate against output schemas while models
// rarely read them; the tools/list budget (20 KB per scope) goes to the input schemas.
const outputDescriptionMin = 10000

// trimOutput drops an output schema's short descriptions (pkg/schemadefs).
func trimOutput(s *jsonschema.Schema) (*jsonschema.Schema, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode schema: %w", err)
	}
	if b, err = schemadefs.Lean(b, outputDescriptionMin); err != nil {
		return nil, err
	}
	var out jsonschema.Schema
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode trimmed schema: %w", err)
	}
	return &out, nil
}

// compact writes each sub-schema that repeats once in $defs (pkg/schemadefs): the gateway
// lists a service's tools at three scopes, and each scope's tools/list must stay under
// 20 KB (docs/mcp.md).
func compact(s *jsonschema.Schema) (*jsonschema.Schema, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode schema: %w", err)
	}
	if b, err = schemadefs.Compact(b, schemadefs.MinSize); err != nil {
		return nil, err
	}
	var out jsonschema.Schema
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode compacted schema: %w", err)
	}
	return &out, nil
}

// num bounds a numeric property to [min, max].
func num(min, max float64) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		s.Minimum, s.Maximum = &min, &max
	}
}

func describe(s *jsonschema.Schema, d string) { s.Description = d }

// stationIDDescription explains the station argument and its fallback.
const stationIDDescription = "sensor UUID or the provider's station id (41002, KFLL); omit at the gateway's sensor endpoint (params._meta names it)"

// parametersDescription explains the parameters argument.
const parametersDescription = "canonical parameter ids to keep (e.g. air_temperature_c, wind_speed_ms; describe_station lists a station's); omit for all"

// deprecatedNote is the sentence a tool description carries for each old argument name
// that still works for one release: old, new, old, new, ...
func deprecatedNote(pairs ...string) string {
	var parts []string
	for i := 0; i+1 < len(pairs); i += 2 {
		parts = append(parts, "`"+pairs[i]+"` (use `"+pairs[i+1]+"`)")
	}
	return " Deprecated (next release removes them): " + strings.Join(parts, ", ") + "."
}
