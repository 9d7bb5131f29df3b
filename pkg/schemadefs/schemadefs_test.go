package schemadefs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// expand replaces every "$ref" to "#/$defs/..." by the definition (keeping the sibling
// description) and drops "$defs": the schema Compact started from.
func expand(t *testing.T, node any, defs map[string]any) any {
	t.Helper()
	switch n := node.(type) {
	case map[string]any:
		if r, ok := n["$ref"].(string); ok && strings.HasPrefix(r, "#/$defs/") {
			def, ok := defs[strings.TrimPrefix(r, "#/$defs/")].(map[string]any)
			if !ok {
				t.Fatalf("dangling %s", r)
			}
			out := expand(t, def, defs).(map[string]any)
			if d, ok := n["description"]; ok {
				out["description"] = d
			}
			return out
		}
		out := map[string]any{}
		for k, v := range n {
			if k != "$defs" {
				out[k] = expand(t, v, defs)
			}
		}
		return out
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			out[i] = expand(t, v, defs)
		}
		return out
	default:
		return node
	}
}

func TestCompact(t *testing.T) {
	quantity := `{"type":"object","properties":{"value":{"type":"number"},"unit":{"type":"string"},"observed_at":{"type":"string","format":"date-time"},"age_seconds":{"type":"integer","minimum":0}},"required":["value","unit"],"additionalProperties":false}`
	params := `{"type":"array","items":{"type":"string","enum":["air_temperature_c","wind_speed_ms","wave_height_m","water_temperature_c","air_pressure_hpa"]}}`
	schema := `{"type":"object","properties":{
		"wave_height":` + strings.Replace(quantity, `{"type":"object"`, `{"description":"waves","type":"object"`, 1) + `,
		"water_temperature":` + quantity + `,
		"wind":{"type":"object","properties":{"speed":` + quantity + `,"gust":` + quantity + `}},
		"list":{"type":"array","items":` + quantity + `},
		"parameters":` + params + `,
		"missing":` + params + `,
		"name":{"type":"string"}}}`
	out, err := Compact([]byte(schema), MinSize)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) >= len(schema)*2/3 {
		t.Errorf("compacted %d bytes from %d", len(out), len(schema))
	}
	var got, want map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(schema), &want); err != nil {
		t.Fatal(err)
	}
	defs, _ := got["$defs"].(map[string]any)
	if len(defs) != 2 {
		t.Errorf("%d definitions, want 2 (the quantity and the parameter list): %s", len(defs), out)
	}
	if back := expand(t, got, defs); !reflect.DeepEqual(back, want) {
		t.Errorf("expanded back:\n%v\nwant\n%v", back, want)
	}
	// The description of a field stays beside its reference.
	wave := got["properties"].(map[string]any)["wave_height"].(map[string]any)
	if wave["description"] != "waves" || wave["$ref"] == nil {
		t.Errorf("wave_height = %v", wave)
	}
	// Nothing repeated: unchanged apart from key order.
	small := `{"type":"object","properties":{"a":{"type":"string"}}}`
	if out, err := Compact([]byte(small), MinSize); err != nil || strings.Contains(string(out), "$defs") {
		t.Errorf("small schema: %s %v", out, err)
	}
	if _, err := Compact([]byte(`[1]`), MinSize); err == nil {
		t.Error("an array compacted without error")
	}
}

func TestLean(t *testing.T) {
	in := `{"description":"top","type":"object","required":["name"],"additionalProperties":false,"properties":{"name":{"type":"string","description":"Name"},"stale":{"type":"boolean","description":"True when age_seconds exceeds stale_after_seconds"},"m":{"type":"object","required":["x"],"additionalProperties":{"type":"number"}}}}`
	out, err := Lean([]byte(in), 30)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"description":"top","properties":{"m":{"additionalProperties":{"type":"number"},"type":"object"},"name":{"type":"string"},"stale":{"description":"True when age_seconds exceeds stale_after_seconds","type":"boolean"}},"required":["name"],"type":"object"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}
