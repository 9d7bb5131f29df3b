package tools

import (
	"fmt"

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
const stationIDDescription = "station external id (the provider's id, e.g. 41002, KFLL) or sensor UUID; " +
	"omit it to use params._meta.sensor_external_id (or sensor_id) set by the gateway's sensor endpoint"

// parametersDescription explains the parameters argument.
const parametersDescription = "canonical parameter ids to keep (e.g. air_temperature_c, wind_speed_ms); omit for all"
