// Package tools holds the MCP tools a backing service serves at POST /mcp: the generic
// ones every service has (latest_observation, observations, list_stations,
// describe_station) and one domain tool per service (ocean sea_state, weather
// current_conditions, airquality aqi), all named <service_id>.<tool>, each with an input
// schema, an output schema, structuredContent and a text rendering.
//
// Every result states units, ISO 8601 UTC timestamps with milliseconds, the reading age in
// seconds with a stale flag judged against the station's reporting interval, and
// provenance (sensor_id = ids.Sensor(service, station), service_id, source_id, provider),
// so that an agent never has to guess what a number means or how old it is.
//
// A tool whose station argument is omitted answers for the station the gateway names in
// params._meta (sensor_external_id, else sensor_id), which is how the sensor-scoped MCP
// endpoint of the gateway makes `<service_id>.latest_observation` work with empty
// arguments. Tool failures (unknown station, bad argument) are results with isError and a
// message naming the culprit, never JSON-RPC errors.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/services/runtime/mcpserver"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// Generic tool names (without the service prefix).
const (
	ToolLatestObservation = "latest_observation"
	ToolObservations      = "observations"
	ToolListStations      = "list_stations"
	ToolDescribeStation   = "describe_station"
)

// Domain tool names (without the service prefix).
const (
	ToolSeaState          = "sea_state"
	ToolCurrentConditions = "current_conditions"
	ToolAQI               = "aqi"
)

// DefaultCallTimeout bounds one tool call, so a stuck store query ends in a tool error
// rather than a hung request.
const DefaultCallTimeout = 10 * time.Second

// defaultDomain maps the service ids of docs/design.md to their domain tool.
var defaultDomain = map[string][]string{
	"ocean":      {ToolSeaState},
	"weather":    {ToolCurrentConditions},
	"airquality": {ToolAQI},
}

// Config is what the tools need from their service.
type Config struct {
	// ServiceID prefixes every tool name and is the service_id of provenance.
	ServiceID string
	// Store is the service's readings store (read side only).
	Store store.Reader
	// Domain lists the domain tools to add (ToolSeaState, ToolCurrentConditions, ToolAQI).
	// Nil picks the one of the service id ("ocean" -> sea_state, "weather" ->
	// current_conditions, "airquality" -> aqi); an empty non-nil slice adds none.
	Domain []string
	// Now is the clock reading ages are computed against (time.Now when nil).
	Now func() time.Time
	// Logger receives store failures, whose details never reach the client (slog.Default
	// when nil).
	Logger *slog.Logger
	// CallTimeout bounds one tool call (DefaultCallTimeout when zero).
	CallTimeout time.Duration
}

// ErrConfig marks an unusable Config.
var ErrConfig = errors.New("invalid tools configuration")

func (c Config) domain() []string {
	if c.Domain != nil {
		return c.Domain
	}
	return defaultDomain[c.ServiceID]
}

func (c Config) validate() error {
	if c.ServiceID == "" {
		return fmt.Errorf("%w: ServiceID is empty", ErrConfig)
	}
	if c.Store == nil {
		return fmt.Errorf("%w: Store is nil", ErrConfig)
	}
	for _, d := range c.domain() {
		if _, ok := domainTools[d]; !ok {
			return fmt.Errorf("%w: unknown domain tool %q (want %s, %s or %s)", ErrConfig, d, ToolSeaState, ToolCurrentConditions, ToolAQI)
		}
	}
	return nil
}

// For returns the mcpserver.Registrar that adds the generic tools and the given domain
// tools (none given: the one of the service id) to a service's MCP server:
//
//	app.Run(ctx, ocean.Definition(tools.For(tools.ToolSeaState)), ...)
func For(domain ...string) mcpserver.Registrar {
	return func(s *mcp.Server, d mcpserver.Deps) error {
		cfg := Config{ServiceID: d.ServiceID, Store: d.Store, Now: d.Now, Logger: d.Logger}
		if len(domain) > 0 {
			cfg.Domain = domain
		}
		return Register(s, cfg)
	}
}

// Register adds the generic tools and cfg's domain tools to srv.
func Register(srv *mcp.Server, cfg Config) error {
	if srv == nil {
		return fmt.Errorf("%w: server is nil", ErrConfig)
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	ts := newToolset(cfg)
	adders := []func(*mcp.Server, *toolset) error{addLatestObservation, addObservations, addListStations, addDescribeStation}
	for _, d := range ts.domain {
		adders = append(adders, domainTools[d])
	}
	for _, a := range adders {
		if err := a(srv, ts); err != nil {
			return err
		}
	}
	return nil
}

var domainTools = map[string]func(*mcp.Server, *toolset) error{
	ToolSeaState:          addSeaState,
	ToolCurrentConditions: addCurrentConditions,
	ToolAQI:               addAQI,
}

// toolset is the state every handler shares: the validated config with defaults applied.
type toolset struct {
	service string
	domain  []string
	store   store.Reader
	now     func() time.Time
	log     *slog.Logger
	timeout time.Duration
}

func newToolset(cfg Config) *toolset {
	ts := &toolset{service: cfg.ServiceID, domain: cfg.domain(), store: cfg.Store, now: cfg.Now, log: cfg.Logger, timeout: cfg.CallTimeout}
	if ts.now == nil {
		ts.now = time.Now
	}
	if ts.log == nil {
		ts.log = slog.Default()
	}
	if ts.timeout <= 0 {
		ts.timeout = DefaultCallTimeout
	}
	return ts
}

func (ts *toolset) name(tool string) string { return mcpserver.ToolName(ts.service, tool) }

// handler is a tool body: it returns the structured result and its text rendering, or an
// error whose message is shown to the caller as an isError result.
type handler[In, Out any] func(ctx context.Context, req *mcp.CallToolRequest, in In) (Out, string, error)

// describeStationID is the input-schema tweak of tools whose only argument is the station.
func describeStationID(p map[string]*jsonschema.Schema) { describeTarget(p) }

// describeTarget describes sensor_id and its deprecated alias station_id.
func describeTarget(p map[string]*jsonschema.Schema) {
	describe(p["sensor_id"], stationIDDescription)
	describe(p["station_id"], "deprecated name of sensor_id")
	p["station_id"].Deprecated = true
}

// add registers a read-only tool whose structured output is Out and whose content is one
// text rendering of it. The rendering carries every value, unit and time of the result, so
// clients that predate structuredContent lose nothing; the JSON is not repeated as a
// second text block because it doubled the size of a 500-reading page.
//
// It uses the SDK's low-level AddTool: the arguments are validated against the input
// schema as mcp.AddTool would (defaults applied, unknown properties refused), but the
// output is marshalled once and not re-validated on every call. Re-validating a 500-reading
// observations page against its schema cost more than the query itself (see
// docs/service-tools.md); the tests validate every result against its output schema
// instead. The schemas are inferred from In and Out; tweakIn adds input descriptions.
func add[In, Out any](srv *mcp.Server, ts *toolset, tool, title, desc string, tweakIn func(props map[string]*jsonschema.Schema), h handler[In, Out]) error {
	in, err := schemaFor[In](tweakIn)
	if err != nil {
		return err
	}
	out, err := schemaFor[Out](nil)
	if err == nil {
		out, err = trimOutput(out)
	}
	if err != nil {
		return err
	}
	inResolved, err := in.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return fmt.Errorf("%w: input schema of %s: %v", ErrConfig, ts.name(tool), err)
	}
	if _, err := out.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
		return fmt.Errorf("%w: output schema of %s: %v", ErrConfig, ts.name(tool), err)
	}
	if in.Type != "object" {
		return fmt.Errorf("%w: input schema of %s is not an object", ErrConfig, ts.name(tool))
	}
	t := &mcp.Tool{
		Name:         ts.name(tool),
		Title:        title,
		Description:  desc,
		InputSchema:  in,
		OutputSchema: out,
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:   true,
			IdempotentHint: true,
			OpenWorldHint:  ptr(false),
		},
	}
	srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, cancel := context.WithTimeout(ctx, ts.timeout)
		defer cancel()
		input, err := decodeArguments[In](req, inResolved)
		if err != nil {
			return errorResult(err), nil
		}
		res, text, err := h(ctx, req, input)
		if err != nil {
			return errorResult(ts.clientError(ctx, t.Name, err)), nil
		}
		js, err := json.Marshal(res)
		if err != nil {
			return errorResult(ts.clientError(ctx, t.Name, fmt.Errorf("encode result: %w", err))), nil
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: text}},
			StructuredContent: json.RawMessage(js),
		}, nil
	})
	return nil
}

// decodeArguments validates a call's arguments against the resolved input schema (after
// applying its defaults) and decodes them into In. Absent or null arguments are {}, and a
// property whose value is null is treated as absent.
func decodeArguments[In any](req *mcp.CallToolRequest, schema *jsonschema.Resolved) (In, error) {
	var in In
	var raw json.RawMessage
	if req != nil && req.Params != nil {
		raw = req.Params.Arguments
	}
	var v map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			return in, userErrorf("arguments must be a JSON object: %v", err)
		}
	}
	if v == nil {
		v = map[string]any{}
	}
	// An optional argument sent as null (common from language-model clients) means
	// omitted, not "the wrong type".
	for k, x := range v {
		if x == nil {
			delete(v, k)
		}
	}
	var anyV any = v
	if err := schema.ApplyDefaults(&anyV); err != nil {
		return in, userErrorf("invalid arguments: %v", err)
	}
	if err := schema.Validate(anyV); err != nil {
		return in, userErrorf("invalid arguments: %v", err)
	}
	b, err := json.Marshal(anyV)
	if err != nil {
		return in, userErrorf("invalid arguments: %v", err)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return in, userErrorf("invalid arguments: %v", err)
	}
	return in, nil
}

// errorResult is the one shape of a tool failure at every MCP scope: isError and the
// reason with its code in the text. It carries no structuredContent: clients check it
// against the tool's outputSchema even on an error (the TypeScript SDK's callTool throws
// when it does not match), and the error is not the tool's output.
func errorResult(err error) *mcp.CallToolResult {
	code := apierr.InvalidParameter
	var ue *userError
	if errors.As(err, &ue) && ue.code != "" {
		code = ue.code
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: err.Error() + " (" + code + ")"}},
		IsError: true,
	}
}

func ptr[T any](v T) *T { return &v }
