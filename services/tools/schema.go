package tools

import (
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
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
	return s, nil
}

// num bounds a numeric property to [min, max].
func num(min, max float64) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		s.Minimum, s.Maximum = &min, &max
	}
}

func describe(s *jsonschema.Schema, d string) { s.Description = d }

// stationIDDescription explains the station argument and its fallback.
const stationIDDescription = "sensor UUID or the station's external id (the provider's id, e.g. 41002, KFLL); " +
	"omit it to use params._meta.sensor_external_id (or sensor_id) set by the gateway's sensor endpoint"

// parametersDescription explains the parameters argument.
const parametersDescription = "canonical parameter ids to keep (e.g. air_temperature_c, wind_speed_ms); omit for all"

// deprecatedNote is the sentence a tool description carries for each old argument name
// that still works for one release: old, new, old, new, ...
func deprecatedNote(pairs ...string) string {
	var parts []string
	for i := 0; i+1 < len(pairs); i += 2 {
		parts = append(parts, "`"+pairs[i]+"` (use `"+pairs[i+1]+"`)")
	}
	return " Deprecated, removed in the next release: " + strings.Join(parts, ", ") + "."
}
