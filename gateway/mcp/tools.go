package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
)

// callCtx is what a local tool runs with.
type callCtx struct {
	h      *Handler
	scope  *scope
	now    time.Time
	viewer *uuid.UUID // the authenticated owner, nil when unknown
}

// toolFunc runs a tool on its raw arguments (a JSON object) and returns a one-line human
// summary and the structured result (a JSON object matching the tool's outputSchema).
// An *apierr.Error is shown to the caller as a tool failure; any other error is logged and
// reported as an internal failure.
type toolFunc func(ctx context.Context, cc *callCtx, args json.RawMessage) (string, any, error)

type localTool struct {
	Tool
	run toolFunc
}

// toolSet is a fixed list of local tools, listed in declaration order.
type toolSet struct {
	byName map[string]*localTool
	listed []json.RawMessage
}

func newToolSet(tools ...*localTool) (*toolSet, error) {
	ts := &toolSet{byName: make(map[string]*localTool, len(tools))}
	for _, t := range tools {
		if _, dup := ts.byName[t.Name]; dup {
			return nil, fmt.Errorf("tool %q declared twice", t.Name)
		}
		ts.byName[t.Name] = t
		b, err := json.Marshal(t.Tool)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		ts.listed = append(ts.listed, b)
	}
	return ts, nil
}

// Tools returns the tool definitions of the set, for documentation and tests.
func (ts *toolSet) Tools() []Tool {
	out := make([]Tool, 0, len(ts.listed))
	for _, b := range ts.listed {
		var t Tool
		if json.Unmarshal(b, &t) == nil {
			out = append(out, t)
		}
	}
	return out
}

func (h *Handler) runLocal(ctx context.Context, sc *scope, id jsonrpc.ID, t *localTool, args json.RawMessage) []byte {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		args = json.RawMessage("{}")
	} else if trimmed[0] != '{' {
		return invalidParams(id, "tools/call: params.arguments must be an object")
	}
	summary, structured, err := t.run(ctx, &callCtx{h: h, scope: sc, now: h.now(), viewer: sc.viewer}, args)
	if err != nil {
		var ae *apierr.Error
		if !errors.As(err, &ae) {
			h.log.ErrorContext(ctx, "mcp tool failed", "tool", t.Name, "scope", sc.kind, "err", err)
			ae = apierr.New(apierr.Internal, "internal error while running %s", t.Name)
		}
		return toolErrorResult(id, ae)
	}
	text, err := json.MarshalIndent(structured, "", "  ")
	if err != nil {
		h.log.ErrorContext(ctx, "mcp tool result does not marshal", "tool", t.Name, "err", err)
		return toolErrorResult(id, apierr.New(apierr.Internal, "internal error while running %s", t.Name))
	}
	return marshalResponse(mustResult(id, callResult{
		Content:           []content{{Type: "text", Text: summary + "\n\n" + string(text)}},
		StructuredContent: structured,
	}))
}

// decodeArgs decodes tool arguments strictly: an unknown argument or a value of the wrong
// type is a tool failure naming the argument.
func decodeArgs(tool string, args json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return badArg(tool, te.Field, "must be %s, got %s", jsonTypeName(te.Type.Kind().String()), te.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return apierr.New(apierr.InvalidParameter, "%s: unknown argument %q (see the tool's inputSchema)", tool, name)
		default:
			var ae *apierr.Error
			if errors.As(err, &ae) {
				return ae
			}
			return apierr.New(apierr.InvalidParameter, "%s: arguments do not match the inputSchema: %v", tool, err)
		}
	}
	return nil
}

func jsonTypeName(kind string) string {
	switch kind {
	case "int", "int64", "int32", "uint", "uint64":
		return "an integer"
	case "float64", "float32":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	default:
		return "of another type"
	}
}

func badArg(tool, name, format string, args ...any) *apierr.Error {
	return apierr.New(apierr.InvalidParameter, "%s: argument %q %s", tool, name, fmt.Sprintf(format, args...))
}

// notFound converts a store miss into the tool failure the caller sees.
func notFound(err error, code, format string, args ...any) error {
	if errors.Is(err, catalog.ErrNotFound) {
		return apierr.New(code, format, args...)
	}
	return err
}

// JSON Schema builders for the tools' input and output schemas.
type schema = map[string]any

func object(props schema, required ...string) schema {
	s := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// input is an object schema that refuses unknown arguments, as decodeArgs does.
func input(props schema, required ...string) schema {
	s := object(props, required...)
	s["additionalProperties"] = false
	return s
}

func str(desc string) schema { return schema{"type": "string", "description": desc} }

func strFormat(desc, format string) schema {
	return schema{"type": "string", "format": format, "description": desc}
}

func integer(desc string, min, max int) schema {
	s := schema{"type": "integer", "description": desc, "minimum": min}
	if max > 0 {
		s["maximum"] = max
	}
	return s
}

func number(desc string) schema { return schema{"type": "number", "description": desc} }

func boolean(desc string) schema { return schema{"type": "boolean", "description": desc} }

func array(items schema, desc string) schema {
	return schema{"type": "array", "items": items, "description": desc}
}

func enum(desc string, values ...string) schema {
	return schema{"type": "string", "enum": values, "description": desc}
}

// nullable widens a schema's type to admit null.
func nullable(s schema) schema {
	c := schema{}
	for k, v := range s {
		c[k] = v
	}
	if t, ok := s["type"].(string); ok {
		c["type"] = []string{t, "null"}
	}
	if e, ok := s["enum"].([]string); ok {
		c["enum"] = append(append([]any{}, toAny(e)...), nil)
	}
	return c
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func mustSchema(s schema) json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		// The schemas are literals built in this package; they always marshal.
		return json.RawMessage(`{"type":"object"}`)
	}
	return b
}

func newTool(name, title, desc string, in, out schema, run toolFunc) *localTool {
	return &localTool{
		Tool: Tool{
			Name:         name,
			Title:        title,
			Description:  desc,
			InputSchema:  mustSchema(in),
			OutputSchema: mustSchema(out),
			Annotations:  &toolAnnotations{ReadOnlyHint: true, OpenWorldHint: false},
		},
		run: run,
	}
}
