package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
)

// scope is one MCP endpoint with its target resolved: a service to forward to (service,
// sensor and project scope), what to inject into params._meta of forwarded tools/call, and
// the gateway's own tools served beside or instead of the service's.
type scope struct {
	kind    string
	service *catalog.Service
	meta    map[string]any
	local   *toolSet
	project *catalog.Project
	sensor  *catalog.Sensor
	viewer  *uuid.UUID
}

func (sc *scope) instructions() string {
	switch sc.kind {
	case "service":
		return "Tools of the sensorgate backing service " + sc.service.ID + ", named " + sc.service.ID + ".<tool>."
	case "sensor":
		return "Tools of one sensor's backing service; the sensor is implied, so station arguments may be omitted."
	case "project":
		return "Tools of one project (feed): its service's tools scoped to the feed, plus list_project_sensors and describe_project."
	case "registry":
		return "Legacy sensor registry tools. New integrations should use /api/v1/catalog/mcp."
	case "alerts":
		return "Alert rules of your API key: create_alert_rule, list_alert_rules, delete_alert_rule, get_alert_events; subscribe to " + AlertEventsURI + " to hear of new events. Sensors and parameters are found with /api/v1/catalog/mcp."
	default:
		return "Catalog of environmental sensors: describe_catalog, search_sensors, describe_sensor, get_readings. Every value states its unit, reading age and provenance."
	}
}

// listTools answers tools/list: the local tools (on the first page) followed by the
// service's, in the name style the client asked for.
func (h *Handler) listTools(ctx context.Context, sc *scope, info requestInfo, req *jsonrpc.Request) []byte {
	var p listToolsParams
	if err := decodeObject(req.Params, &p); err != nil {
		return invalidParams(req.ID, "tools/list: %v", err)
	}
	firstPage := p.Cursor == nil || *p.Cursor == ""
	if sc.service == nil {
		if !firstPage {
			return invalidParams(req.ID, "tools/list: unknown cursor %q", clip(*p.Cursor, 64))
		}
		return marshalResponse(mustResult(req.ID, listToolsResult{Tools: sc.local.listedFor(ctx)}))
	}

	if !serviceToolsAllowed(ctx) { // (scopes: toolscope.go)
		return marshalResponse(mustResult(req.ID, listToolsResult{Tools: append([]json.RawMessage{}, sc.local.listedFor(ctx)...)}))
	}
	fwdBody, err := json.Marshal(&jsonrpc.Request{ID: req.ID, Method: methodToolsList, Params: req.Params})
	if err != nil {
		return internalError(req.ID)
	}
	up, err := h.forward(ctx, sc, info, fwdBody)
	if err != nil {
		return h.upstreamError(ctx, sc, req.ID, err)
	}
	if sc.local == nil && info.style == styleDot {
		return up // the service's answer as it came: nothing to merge or rename
	}
	msg, err := jsonrpc.Decode(up)
	resp, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok {
		return h.upstreamError(ctx, sc, req.ID, apierr.New(apierr.UpstreamUnavailable, "service %s answered tools/list with an invalid message", sc.service.ID))
	}
	if resp.Error != nil {
		return up
	}
	var res struct {
		Tools      []map[string]json.RawMessage `json:"tools"`
		NextCursor string                       `json:"nextCursor,omitempty"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		return h.upstreamError(ctx, sc, req.ID, apierr.New(apierr.UpstreamUnavailable, "service %s answered tools/list with an invalid result", sc.service.ID))
	}
	out := listToolsResult{NextCursor: res.NextCursor}
	if firstPage && sc.local != nil {
		out.Tools = append(out.Tools, sc.local.listedFor(ctx)...)
	}
	for _, t := range res.Tools {
		if info.style == styleUnderscore {
			var name string
			if json.Unmarshal(t["name"], &name) == nil {
				t["name"], _ = json.Marshal(underscoreName(sc.service.ID, name))
			}
		}
		b, err := json.Marshal(t)
		if err != nil {
			return internalError(req.ID)
		}
		out.Tools = append(out.Tools, b)
	}
	if out.Tools == nil {
		out.Tools = []json.RawMessage{}
	}
	return marshalResponse(mustResult(req.ID, out))
}

// toolCall is a tools/call's params, decoded once: the tool's name, its arguments (an
// object or absent) and the params as sent, for forwarding.
type toolCall struct {
	name   string
	args   json.RawMessage
	params json.RawMessage
}

// decodeCall decodes tools/call's params, or returns the invalid-params answer.
func decodeCall(req *jsonrpc.Request) (toolCall, []byte) {
	var p callParams
	if err := decodeObject(req.Params, &p); err != nil {
		return toolCall{}, invalidParams(req.ID, "tools/call: %v", err)
	}
	if p.Name == nil || *p.Name == "" {
		return toolCall{}, invalidParams(req.ID, "tools/call: params.name is required (tools/list names the tools)")
	}
	if a := bytes.TrimSpace(p.Arguments); len(a) > 0 && string(a) != "null" && a[0] != '{' {
		return toolCall{}, invalidParams(req.ID, "tools/call: params.arguments must be an object")
	}
	return toolCall{name: *p.Name, args: p.Arguments, params: req.Params}, nil
}

// callTool answers tools/call and records it in the call metrics.
func (h *Handler) callTool(ctx context.Context, sc *scope, info requestInfo, id jsonrpc.ID, call toolCall) []byte {
	start := time.Now()
	t, local := sc.local.lookup(call.name)
	if out := refuseScope(ctx, id, call.name, local); out != nil && (local || sc.service != nil) {
		return out
	}
	var out []byte
	switch {
	case local:
		out = h.callLocal(ctx, sc, t, id, call.args)
	case sc.service == nil:
		out = invalidParams(id, "tools/call: unknown tool %q; tools/list names the tools of this endpoint", clip(call.name, 64))
	default:
		out = h.forwardTool(ctx, sc, info, id, call)
	}
	h.metrics.observe(sc.kind, call.name, local, out, time.Since(start))
	return fitAnswer(out, call.name, linkFor(info.base, sc, call.name, call.args))
}

// forwardTool sends a tools/call to the scope's service with the scope's context merged
// into params._meta.
func (h *Handler) forwardTool(ctx context.Context, sc *scope, info requestInfo, id jsonrpc.ID, call toolCall) []byte {
	params, err := forwardParams(call.params, dotName(sc.service.ID, call.name), sc.meta)
	if err != nil {
		return invalidParams(id, "tools/call: %v", err)
	}
	body, err := json.Marshal(&jsonrpc.Request{ID: id, Method: methodToolsCall, Params: params})
	if err != nil {
		return internalError(id)
	}
	up, err := h.forward(ctx, sc, info, body)
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			return marshalResponse(jsonrpc.NewError(id, je))
		}
		// The tool could not run: a tool failure the model can read and act on.
		e := apierr.From(err)
		h.logUpstream(ctx, sc, err)
		return toolErrorResult(id, e)
	}
	return up
}

// forwardParams rewrites tools/call params for the service: the canonical (dotted) tool
// name, and the scope's context merged into _meta. The gateway's keys win inside _meta,
// because they are the identity of the endpoint; the caller's arguments are never touched.
func forwardParams(raw json.RawMessage, name string, meta map[string]any) (json.RawMessage, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(raw, &params); err != nil || params == nil {
		return nil, errors.New("params must be an object")
	}
	nameJSON, err := json.Marshal(name)
	if err != nil {
		return nil, err
	}
	params["name"] = nameJSON
	if len(meta) > 0 {
		merged := map[string]json.RawMessage{}
		if m, ok := params["_meta"]; ok && string(m) != "null" {
			if err := json.Unmarshal(m, &merged); err != nil {
				return nil, errors.New("params._meta must be an object")
			}
		}
		if merged == nil { // a null _meta
			merged = map[string]json.RawMessage{}
		}
		for k, v := range meta {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			merged[k] = b
		}
		if params["_meta"], err = json.Marshal(merged); err != nil {
			return nil, err
		}
	}
	return json.Marshal(params)
}

// dotName maps the alias <service>__<tool> to <service>.<tool>; other names pass as given.
func dotName(serviceID, name string) string {
	if rest, ok := strings.CutPrefix(name, serviceID+"__"); ok && rest != "" {
		return serviceID + "." + rest
	}
	return name
}

// underscoreName is the listing form of dotName's inverse.
func underscoreName(serviceID, name string) string {
	if rest, ok := strings.CutPrefix(name, serviceID+"."); ok && rest != "" {
		return serviceID + "__" + rest
	}
	return name
}

// upstreamError answers a non-tool method whose forwarding failed with -32603 and the
// API error code in data, so a client can tell a slow service from a dead one.
func (h *Handler) upstreamError(ctx context.Context, sc *scope, id jsonrpc.ID, err error) []byte {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return marshalResponse(jsonrpc.NewError(id, je))
	}
	h.logUpstream(ctx, sc, err)
	e := apierr.From(err)
	return marshalResponse(jsonrpc.NewError(id, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", e.Message).WithData(e)))
}

func (h *Handler) logUpstream(ctx context.Context, sc *scope, err error) {
	h.log.WarnContext(ctx, "mcp forward failed", "scope", sc.kind, "service", sc.service.ID, "err", err)
}

func toolErrorResult(id jsonrpc.ID, e *apierr.Error) []byte {
	return marshalResponse(mustResult(id, toolError(e)))
}

// mustResult marshals a result built from the gateway's own types, which always marshal.
func mustResult(id jsonrpc.ID, v any) *jsonrpc.Response {
	resp, err := jsonrpc.NewResult(id, v)
	if err != nil {
		return jsonrpc.NewError(id, jsonrpc.Errorf(jsonrpc.CodeInternalError, "internal error"))
	}
	return resp
}

// hasResources reports whether the scope serves resources (the catalog scope: the
// parameters registry and each sensor's metadata).
func (sc *scope) hasResources() bool {
	return sc.local.hasResources() && sc.service == nil
}

// capabilities of scope sc: subscriptions only at 2026-07-28 (stateless), whose
// subscriptions/listen needs no session.
func (h *Handler) capabilities(sc *scope, stateless bool) json.RawMessage {
	switch {
	case sc.hasResources() && stateless && h.streams != nil:
		return json.RawMessage(`{"tools":{},"resources":{"subscribe":true}}`)
	case sc.hasResources():
		return json.RawMessage(`{"tools":{},"resources":{}}`)
	}
	return json.RawMessage(`{"tools":{}}`)
}

func (h *Handler) methods(sc *scope) string {
	if sc.hasResources() {
		return "server/discover, initialize, ping, tools/list, tools/call, resources/list, resources/templates/list, resources/read and (2026-07-28) subscriptions/listen"
	}
	return "server/discover, initialize, ping, tools/list and tools/call"
}
