package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"
	sdkrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
	"github.com/sensorgate/sensorgate/pkg/schemadefs"
)

// callCtx is what a local tool runs with. It travels to the tool handler inside the
// request context, through the go-sdk server that dispatches the call.
type callCtx struct {
	h      *Handler
	scope  *scope
	now    time.Time
	viewer *uuid.UUID // the authenticated owner, nil when unknown
}

type callCtxKey struct{}

func callCtxOf(ctx context.Context) (*callCtx, bool) {
	cc, ok := ctx.Value(callCtxKey{}).(*callCtx)
	return cc, ok
}

// toolSpec defines one of the gateway's own tools on typed input and output structs: the
// input and output schemas are inferred from In and Out by jsonschema-go (the go-sdk's
// schema support; descriptions from `jsonschema` struct tags), then Tweak adds what Go
// types cannot say (enums, ranges, defaults). Run returns a one-line human summary (the
// text content) and the structured result.
type toolSpec[In, Out any] struct {
	Name, Title, Description string
	// OpenWorld marks tools that read live data from the backing services (openWorldHint);
	// the others answer from the gateway's catalog alone.
	OpenWorld bool
	// Writes marks tools that change state (readOnlyHint false: the alert rules), and
	// Destructive those that delete (destructiveHint).
	Writes, Destructive bool
	Tweak               func(in, out *jsonschema.Schema)
	Run                 func(ctx context.Context, cc *callCtx, in In) (string, Out, error)
}

// toolSet holds the tools (and resources) of one gateway scope, declared with the go-sdk's
// types so that tools/list shows what an SDK server would. The gateway's own JSON-RPC
// pipeline (http.go) answers every method; a tools/call of a local tool runs its handler
// here, in the request's goroutine, on arguments decoded once.
type toolSet struct {
	tools  []*sdk.Tool
	byName map[string]localTool
	listed []json.RawMessage
	// resources and templates are the scope's resources, in listing order; a read finds
	// its resource by URI, else the first template whose prefix the URI has.
	resources []*sdk.Resource
	templates []resourceTemplate
	reads     map[string]sdk.ResourceHandler
	err       error
}

// localTool is one tool of a set: its definition and its handler.
type localTool struct {
	def *sdk.Tool
	run func(ctx context.Context, cc *callCtx, args json.RawMessage) *sdk.CallToolResult
}

type resourceTemplate struct {
	def    *sdk.ResourceTemplate
	prefix string // what every URI of the template begins with
	read   sdk.ResourceHandler
}

func newToolSet() *toolSet {
	return &toolSet{byName: map[string]localTool{}, reads: map[string]sdk.ResourceHandler{}}
}

// addResource adds a resource of one URI.
func (ts *toolSet) addResource(r *sdk.Resource, read sdk.ResourceHandler) {
	ts.resources = append(ts.resources, r)
	ts.reads[r.URI] = read
}

// addTemplate adds a resource template whose URIs all begin with prefix.
func (ts *toolSet) addTemplate(t *sdk.ResourceTemplate, prefix string, read sdk.ResourceHandler) {
	ts.templates = append(ts.templates, resourceTemplate{def: t, prefix: prefix, read: read})
}

// hasResources reports whether the set serves resources.
func (ts *toolSet) hasResources() bool {
	return ts != nil && (len(ts.resources) > 0 || len(ts.templates) > 0)
}

// done finishes the set: the first definition error, if any.
func (ts *toolSet) done() (*toolSet, error) {
	if ts.err != nil {
		return nil, ts.err
	}
	return ts, nil
}

// lookup finds a tool of the set; a nil set has none.
func (ts *toolSet) lookup(name string) (localTool, bool) {
	if ts == nil {
		return localTool{}, false
	}
	t, ok := ts.byName[name]
	return t, ok
}

// Tools returns the tool definitions of the set, as tools/list shows them.
func (ts *toolSet) Tools() []*sdk.Tool { return ts.tools }

// schemaTypes are the shared result types whose schemas are written by hand once (with
// formats and the meaning of every field) and reused wherever the type appears.
func schemaTypes() map[reflect.Type]*jsonschema.Schema {
	out := map[reflect.Type]*jsonschema.Schema{}
	for t, s := range map[reflect.Type]schema{
		reflect.TypeFor[freshness]():               freshnessSchema(),
		reflect.TypeFor[sensorSummary]():           sensorSummarySchema(),
		reflect.TypeFor[sensorRecord]():            sensorRecordSchema(),
		reflect.TypeFor[readingView]():             readingSchema(),
		reflect.TypeFor[contractProvenance]():      provenanceSchema(),
		reflect.TypeFor[contractLocation]():        locationSchema(),
		reflect.TypeFor[contractPagination]():      paginationSchema(),
		reflect.TypeFor[registryView]():            registryViewSchema(),
		reflect.TypeFor[catalog.ServiceRecord]():   serviceRecordSchema(),
		reflect.TypeFor[contractReading]():         legacyReadingSchema(),
		reflect.TypeFor[flexNumber]():              {"type": []string{"number", "string"}},
		reflect.TypeFor[stringList]():              {"type": []string{"string", "array"}, "items": schema{"type": "string"}},
		reflect.TypeFor[map[string]string]():       unitsSchema(),
		reflect.TypeFor[map[string]float64]():      {"type": "object", "additionalProperties": schema{"type": "number"}},
		reflect.TypeFor[[]string]():                {"type": "array", "items": schema{"type": "string"}},
		reflect.TypeFor[[]sensorSummary]():         array(sensorSummarySchema(), ""),
		reflect.TypeFor[[]readingView]():           array(readingSchema(), ""),
		reflect.TypeFor[[]registryView]():          array(registryViewSchema(), ""),
		reflect.TypeFor[[]catalog.ServiceRecord](): array(serviceRecordSchema(), ""),
		reflect.TypeFor[[]contractReading]():       array(legacyReadingSchema(), ""),
		reflect.TypeFor[*contractProvenance]():     nullable(provenanceSchema()),
		reflect.TypeFor[*contractPagination]():     paginationSchema(),
		reflect.TypeFor[*contractLocation]():       locationSchema(),
		reflect.TypeFor[contractTime]():            strFormat("ISO 8601 UTC with milliseconds", "date-time"),
		reflect.TypeFor[time.Time]():               strFormat("", "date-time"),
		reflect.TypeFor[*time.Time]():              strFormat("", "date-time"),
		reflect.TypeFor[*contractTime]():           nullable(strFormat("ISO 8601 UTC with milliseconds; null when none", "date-time")),
		// Written with only the statistics asked for (its MarshalJSON).
		reflect.TypeFor[contract.AggregateStat](): {"type": "object", "properties": schema{
			"mean": nullable(number("")), "min": nullable(number("")), "max": nullable(number("")),
			"count": integer("", 0, 0), "coverage": nullable(number("count / expected count; null when the interval is unknown")),
		}},
		reflect.TypeFor[json.RawMessage](): {"type": []string{"array", "null"}, "items": measurementSchema(), "description": "Canonical measurements; null when the sensor's service did not answer"},
	} {
		var js jsonschema.Schema
		b, _ := json.Marshal(s) // literals of this package: always marshal
		if err := json.Unmarshal(b, &js); err == nil {
			if d, ok := s["description"].(string); ok && d == "" {
				js.Description = ""
			}
			out[t] = &js
		}
	}
	return out
}

// inferSchema is jsonschema.For with the shared schemas and no "null" for slices and maps
// that the tools always fill.
func inferSchema[T any]() (*jsonschema.Schema, error) {
	return jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: schemaTypes()})
}

// compact writes each sub-schema that repeats once in $defs (pkg/schemadefs), which keeps
// every scope's tools/list under 20 KB.
// Output schemas also lose the short descriptions that only restate a field's name.
func compact(s *jsonschema.Schema, output bool) (*jsonschema.Schema, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if output {
		if b, err = schemadefs.Lean(b, outputDescriptionMin); err != nil {
			return nil, err
		}
	}
	if b, err = schemadefs.Compact(b, schemadefs.MinSize); err != nil {
		return nil, err
	}
	var out jsonschema.Schema
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// outputDescriptionMin is the shortest description an output schema keeps.
const outputDescriptionMin = 80

// addTool registers a typed tool on the set's go-sdk server (Server.AddTool with the
// inferred schemas; the handler decodes the arguments strictly, so that an unknown
// argument or a value of the wrong type is a tool failure naming it).
func addTool[In, Out any](ts *toolSet, spec toolSpec[In, Out]) {
	if ts.err != nil {
		return
	}
	in, err := inferSchema[In]()
	if err != nil {
		ts.err = fmt.Errorf("tool %s: input schema: %w", spec.Name, err)
		return
	}
	out, err := inferSchema[Out]()
	if err != nil {
		ts.err = fmt.Errorf("tool %s: output schema: %w", spec.Name, err)
		return
	}
	in.Type, in.Types = "object", nil
	out.Type, out.Types = "object", nil
	if spec.Tweak != nil {
		spec.Tweak(in, out)
	}
	for i, s := range []**jsonschema.Schema{&in, &out} {
		c, err := compact(*s, i == 1)
		if err == nil {
			_, err = c.Resolve(nil)
		}
		if err != nil {
			ts.err = fmt.Errorf("tool %s: schema: %w", spec.Name, err)
			return
		}
		*s = c
	}
	openWorld := spec.OpenWorld
	t := &sdk.Tool{
		Name:         spec.Name,
		Title:        spec.Title,
		Description:  spec.Description,
		InputSchema:  in,
		OutputSchema: out,
		Annotations: &sdk.ToolAnnotations{
			ReadOnlyHint:   true,
			IdempotentHint: true,
			OpenWorldHint:  &openWorld,
		},
	}
	if spec.Writes {
		// Creating twice makes two rules; deleting twice leaves the same nothing.
		destructive := spec.Destructive
		t.Annotations.ReadOnlyHint, t.Annotations.IdempotentHint, t.Annotations.DestructiveHint = false, destructive, &destructive
	}
	if _, dup := ts.byName[t.Name]; dup {
		ts.err = fmt.Errorf("tool %q declared twice", t.Name)
		return
	}
	b, err := json.Marshal(t)
	if err != nil {
		ts.err = fmt.Errorf("tool %s: %w", t.Name, err)
		return
	}
	name := spec.Name
	run := func(ctx context.Context, cc *callCtx, args json.RawMessage) *sdk.CallToolResult {
		if trimmed := bytes.TrimSpace(args); len(trimmed) == 0 || string(trimmed) == "null" {
			args = json.RawMessage("{}")
		}
		var a In
		if err := decodeArgs(name, args, &a); err != nil {
			return toolError(apierr.From(err))
		}
		summary, res, err := spec.Run(ctx, cc, a)
		if err != nil {
			var ae *apierr.Error
			if !errors.As(err, &ae) {
				cc.h.log.ErrorContext(ctx, "mcp tool failed", "tool", name, "scope", cc.scope.kind, "err", err)
				ae = apierr.New(apierr.Internal, "internal error while running %s", name)
			}
			return toolError(ae)
		}
		structured, err := json.Marshal(res)
		if err != nil {
			cc.h.log.ErrorContext(ctx, "mcp tool result does not marshal", "tool", name, "err", err)
			return toolError(apierr.New(apierr.Internal, "internal error while running %s", name))
		}
		return &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: summary}},
			StructuredContent: json.RawMessage(structured),
		}
	}
	ts.byName[t.Name] = localTool{def: t, run: run}
	ts.tools = append(ts.tools, t)
	ts.listed = append(ts.listed, b)
}

// toolError is the one shape of a tool failure at every gateway scope: isError and the
// reason with its code in the text. It carries no structuredContent: clients check
// structuredContent against the tool's outputSchema even on an error (the TypeScript
// SDK's callTool throws when it does not match), and the error is not the tool's output.
func toolError(e *apierr.Error) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		Content: []sdk.Content{&sdk.TextContent{Text: e.Message + " (" + e.Code + ")"}},
		IsError: true,
	}
}

// callLocal runs a local tool of the scope in the request's goroutine and answers with
// its result.
func (h *Handler) callLocal(ctx context.Context, sc *scope, t localTool, id jsonrpc.ID, args json.RawMessage) []byte {
	cc := &callCtx{h: h, scope: sc, now: h.now(), viewer: sc.viewer}
	return marshalResponse(mustResult(id, t.run(context.WithValue(ctx, callCtxKey{}, cc), cc, args)))
}

// serveResources answers resources/list, resources/templates/list and resources/read of
// the scope's set.
func (h *Handler) serveResources(ctx context.Context, sc *scope, req *jsonrpc.Request) []byte {
	ts := sc.local
	var p struct {
		Cursor *string `json:"cursor"`
		URI    string  `json:"uri"`
	}
	if err := decodeObject(req.Params, &p); err != nil {
		return invalidParams(req.ID, "%s: %v", req.Method, err)
	}
	if p.Cursor != nil && *p.Cursor != "" {
		return invalidParams(req.ID, "%s: unknown cursor %q", req.Method, clip(*p.Cursor, 64))
	}
	switch req.Method {
	case methodResourcesList:
		return marshalResponse(mustResult(req.ID, sdk.ListResourcesResult{Resources: nonNilList(ts.resources)}))
	case methodResourceTemplatesList:
		defs := make([]*sdk.ResourceTemplate, len(ts.templates))
		for i, t := range ts.templates {
			defs[i] = t.def
		}
		// Listed by URI template, as the go-sdk's server lists them.
		slices.SortFunc(defs, func(a, b *sdk.ResourceTemplate) int { return strings.Compare(a.URITemplate, b.URITemplate) })
		return marshalResponse(mustResult(req.ID, sdk.ListResourceTemplatesResult{ResourceTemplates: defs}))
	}
	if p.URI == "" {
		return invalidParams(req.ID, "resources/read: params.uri is required")
	}
	read, ok := ts.reads[p.URI]
	if !ok {
		for _, t := range ts.templates {
			if strings.HasPrefix(p.URI, t.prefix) {
				read, ok = t.read, true
				break
			}
		}
	}
	if !ok {
		return marshalResponse(jsonrpc.NewError(req.ID, resourceNotFound(p.URI)))
	}
	cc := &callCtx{h: h, scope: sc, now: h.now(), viewer: sc.viewer}
	res, err := read(context.WithValue(ctx, callCtxKey{}, cc), &sdk.ReadResourceRequest{Params: &sdk.ReadResourceParams{URI: p.URI}})
	if err != nil {
		var we *sdkrpc.Error
		if errors.As(err, &we) {
			return marshalResponse(jsonrpc.NewError(req.ID, &jsonrpc.Error{Code: int(we.Code), Message: we.Message, Data: we.Data}))
		}
		h.log.ErrorContext(ctx, "mcp resource failed", "uri", clip(p.URI, 200), "err", err)
		return internalError(req.ID)
	}
	// A read is live data: no TTL, and the scope the go-sdk's server gives by default.
	if res.CacheScope == "" {
		res.CacheScope = "public"
	}
	return marshalResponse(mustResult(req.ID, res))
}

// resourceNotFound is MCP's error for a URI no resource of the scope has (-32002).
func resourceNotFound(uri string) *jsonrpc.Error {
	return jsonrpc.Errorf(int(sdk.CodeResourceNotFound), "Resource not found").WithData(map[string]string{"uri": uri})
}

func nonNilList[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
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

// Schema tweaks for what Go types cannot say.

// prop returns the named property of an object schema (nil-safe for chaining in tweaks).
func prop(s *jsonschema.Schema, path ...string) *jsonschema.Schema {
	for _, p := range path {
		if s == nil {
			return nil
		}
		if s.Items != nil && s.Properties == nil {
			s = s.Items
		}
		s = s.Properties[p]
	}
	if s == nil {
		return &jsonschema.Schema{} // a tweak of a missing property changes nothing
	}
	return s
}

func setRange(s *jsonschema.Schema, min, max float64) {
	s.Minimum = &min
	if max > 0 {
		s.Maximum = &max
	}
}

func setEnum(s *jsonschema.Schema, values ...string) {
	if s.Items != nil && (s.Type == "array" || slicesContains(s.Types, "array")) {
		s = s.Items
	}
	s.Enum = nil
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// JSON Schema builders for the hand-written shared schemas (schemaTypes).
type schema = map[string]any

func object(props schema, required ...string) schema {
	s := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
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
	s := schema{"type": "array", "items": items}
	if desc != "" {
		s["description"] = desc
	}
	return s
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
