// Package schemadefs shrinks a JSON Schema by moving sub-schemas that occur more than once
// into "$defs" and pointing at them with "$ref". MCP hosts load every tool's input and
// output schema into the model's context on tools/list, and schemas inferred from Go types
// repeat each shared type in full wherever it appears (a reading in every list, a value
// with its unit and age in every field of a summary); docs/mcp.md keeps each scope's
// tools/list under 20 KB with it.
//
// The result is JSON Schema 2020-12: a "$ref" may carry a sibling "description", so each
// field keeps its own description while its type is written once.
package schemadefs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MinSize is the smallest sub-schema (in bytes of JSON, without its description) worth a
// definition: below it a "$ref" costs about as much as it saves.
const MinSize = 80

// Compact returns schema with every sub-schema of at least minSize bytes that occurs
// twice or more (descriptions aside) defined once in "$defs". A schema that does not
// parse as a JSON object is returned with the error.
func Compact(schema []byte, minSize int) ([]byte, error) {
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return schema, fmt.Errorf("schemadefs: %w", err)
	}
	defs, _ := root["$defs"].(map[string]any)
	if defs == nil {
		defs = map[string]any{}
	}
	for {
		counts := map[string]*candidate{}
		walk(root, "", true, func(node map[string]any, name string) {
			k := key(node)
			if len(k) < minSize {
				return
			}
			c := counts[k]
			if c == nil {
				c = &candidate{key: k, name: name}
				counts[k] = c
			}
			c.n++
		})
		var best *candidate
		for _, c := range counts {
			if c.n < 2 {
				continue
			}
			if best == nil || c.saving() > best.saving() || (c.saving() == best.saving() && c.key < best.key) {
				best = c
			}
		}
		if best == nil {
			break
		}
		name := defName(defs, best.name)
		var def map[string]any
		walk(root, "", true, func(node map[string]any, _ string) {
			if key(node) != best.key {
				return
			}
			if def == nil {
				def = map[string]any{}
				for k, v := range node {
					if k != "description" {
						def[k] = v
					}
				}
			}
			desc, hasDesc := node["description"]
			clear(node)
			node["$ref"] = "#/$defs/" + name
			if hasDesc {
				node["description"] = desc
			}
		})
		defs[name] = def
		root["$defs"] = defs
	}
	return json.Marshal(root)
}

// Lean prepares an output schema for a tools/list answer: below the root it removes the
// descriptions shorter than minLen bytes (they only restate a field's name: "Name",
// "Provider slug", "Sensor UUID"; the longer ones that explain a rule stay) and the
// "required" lists of nested objects, and everywhere "additionalProperties": false.
// Clients validate results against output schemas and models rarely read them, so the
// budget of a tools/list answer goes to the input schemas; the root keeps its required
// list (the fields every result has), and a client that validates keeps working when a
// later version adds a field, which a closed output schema would forbid.
func Lean(schema []byte, minLen int) ([]byte, error) {
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return schema, fmt.Errorf("schemadefs: %w", err)
	}
	open := func(node map[string]any) {
		if ap, ok := node["additionalProperties"].(bool); ok && !ap {
			delete(node, "additionalProperties")
		}
	}
	open(root)
	walk(root, "", true, func(node map[string]any, _ string) {
		open(node)
		delete(node, "required")
		if d, ok := node["description"].(string); ok && len(d) < minLen {
			delete(node, "description")
		}
	})
	return json.Marshal(root)
}

type candidate struct {
	key  string
	name string
	n    int
}

func (c *candidate) saving() int { return len(c.key) * (c.n - 1) }

// key is the canonical JSON of a sub-schema without its description (encoding/json
// writes map keys sorted).
func key(node map[string]any) string {
	if _, ok := node["$ref"]; ok && len(node) <= 2 {
		return "" // already a reference
	}
	c := make(map[string]any, len(node))
	for k, v := range node {
		if k != "description" {
			c[k] = v
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return ""
	}
	return string(b)
}

// walk visits every sub-schema below root (not root itself) with the property name it
// sits under ("" when none), in a fixed order.
func walk(node map[string]any, name string, isRoot bool, visit func(map[string]any, string)) {
	if !isRoot {
		visit(node, name)
		if r, ok := node["$ref"].(string); ok && strings.HasPrefix(r, "#/$defs/") && len(node) <= 2 {
			return
		}
	}
	for _, kw := range []string{"properties", "$defs", "patternProperties"} {
		if m, ok := node[kw].(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				if s, ok := m[k].(map[string]any); ok {
					walk(s, k, false, visit)
				}
			}
		}
	}
	for _, kw := range []string{"items", "additionalProperties", "not", "contains"} {
		if s, ok := node[kw].(map[string]any); ok {
			walk(s, name, false, visit)
		}
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		if l, ok := node[kw].([]any); ok {
			for _, x := range l {
				if s, ok := x.(map[string]any); ok {
					walk(s, name, false, visit)
				}
			}
		}
	}
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// defName names a definition after the property it was first found under, made unique.
func defName(defs map[string]any, base string) string {
	if base == "" {
		base = "def"
	}
	name := base
	for i := 2; ; i++ {
		if _, taken := defs[name]; !taken {
			return name
		}
		name = base + strconv.Itoa(i)
	}
}
