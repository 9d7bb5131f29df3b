package mcp

import (
	"context"
	"encoding/json"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
)

// Tools by scope (docs/api-decisions.md "OAuth 2.1 for MCP and REST"): tools/list lists
// only the tools the caller's scopes allow (auth.ToolScope), and tools/call refuses the
// others with insufficient_scope. A caller with every scope (any key created without
// scopes) pays nothing: the listing is the one made at start.

// callerScopes is the request's scope set; a request without an identity (none reaches
// here through the gateway's routes) is given every scope, as before scopes existed.
func callerScopes(ctx context.Context) auth.Scope {
	if id, ok := auth.FromContext(ctx); ok {
		return id.Scopes
	}
	return auth.AllScopes
}

// listedFor is the local tools the caller may call, in their order.
func (ts *toolSet) listedFor(ctx context.Context) []json.RawMessage {
	s := callerScopes(ctx)
	if ts == nil || s == auth.AllScopes {
		if ts == nil {
			return nil
		}
		return ts.listed
	}
	out := make([]json.RawMessage, 0, len(ts.listed))
	for i, t := range ts.tools {
		if s&auth.ToolScope(t.Name) == auth.ToolScope(t.Name) {
			out = append(out, ts.listed[i])
		}
	}
	return out
}

// serviceToolsAllowed: a backing service's own tools read its readings.
func serviceToolsAllowed(ctx context.Context) bool {
	return callerScopes(ctx)&auth.ScopeReadings != 0
}

// refuseScope is the tools/call answer for a tool the caller's scopes do not allow (a tool
// error the model reads, saying which scope is missing), nil when the call may go on.
// local says whether name is a local tool (else a service's, which needs readings:read).
func refuseScope(ctx context.Context, id jsonrpc.ID, name string, local bool) []byte {
	need := auth.ScopeReadings
	if local {
		need = auth.ToolScope(name)
	}
	if s := callerScopes(ctx); s&need == need {
		return nil
	}
	return toolErrorResult(id, apierr.New(apierr.InsufficientScope, "the tool %s needs the scope %s, which this credential does not carry", clip(name, 64), need))
}
