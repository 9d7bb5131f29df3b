// Package mcpproto holds what the gateway's MCP pipeline and the services' MCP endpoints
// check alike: the protocol versions they speak, and the per-request rules of the
// stateless protocol 2026-07-28 (SEP-2575). A request follows it when its params._meta
// names the version; it then carries the client's capabilities there too, and its HTTP
// request the Mcp-Protocol-Version, Mcp-Method and (tools/call, resources/read) Mcp-Name
// headers, which must agree with the body.
package mcpproto

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
)

// Versions.
const (
	// Latest is the newest version initialize negotiates.
	Latest = "2025-11-25"
	// Stateless is the protocol without initialize and session (SEP-2575).
	Stateless = "2026-07-28"
)

// Initialize returns the versions initialize accepts, newest first. Stateless is not
// among them: it has no initialize.
func Initialize() []string { return []string{Latest, "2025-06-18", "2025-03-26", "2024-11-05"} }

// All returns every version an endpoint speaks, newest first: what server/discover lists.
func All() []string { return append([]string{Stateless}, Initialize()...) }

// HTTP headers.
const (
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
)

// The per-request _meta keys of 2026-07-28.
const (
	MetaPrefix             = "io.modelcontextprotocol/"
	MetaProtocolVersion    = MetaPrefix + "protocolVersion"
	MetaClientCapabilities = MetaPrefix + "clientCapabilities"
	MetaServerInfo         = MetaPrefix + "serverInfo"
	MetaSubscriptionID     = MetaPrefix + "subscriptionId"
)

// Error codes of 2026-07-28.
const (
	CodeHeaderMismatch             = -32020
	CodeUnsupportedProtocolVersion = -32022
)

// Headers are the protocol headers of an HTTP request, as sent (surrounding whitespace
// removed). Version is empty when the header is absent.
type Headers struct {
	Version, Method, Name string
}

// Check judges a request (its method and params) against 2026-07-28. stateless reports
// whether the request follows it; a request of an older version passes untouched. A
// version the endpoint does not speak, in the header or in _meta, is -32022 with the
// supported versions; headers that disagree with the body are -32020; a missing _meta or
// capabilities object is -32602. Every refusal is answered with HTTP 400.
func Check(h Headers, method string, params json.RawMessage) (stateless bool, err *jsonrpc.Error) {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if t := bytes.TrimSpace(params); len(t) > 0 && t[0] == '{' {
		// A params shape error is the method's to report; only _meta matters here.
		_ = json.Unmarshal(t, &p)
	}
	var version string
	if raw, ok := p.Meta[MetaProtocolVersion]; ok {
		if json.Unmarshal(raw, &version) != nil || version == "" {
			return false, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: _meta[%q] must be a protocol version string such as %q", MetaProtocolVersion, Stateless)
		}
	}
	known := h.Version == "" || slices.Contains(All(), h.Version)
	switch {
	case version != "" && h.Version != "" && h.Version != version:
		return false, jsonrpc.Errorf(CodeHeaderMismatch, "header %s is %q, but params._meta[%q] is %q: they must be the same", HeaderProtocolVersion, apierr.Clip(h.Version, 32), MetaProtocolVersion, apierr.Clip(version, 32))
	case !known || version != "" && !slices.Contains(All(), version):
		requested := cmp.Or(version, h.Version)
		return false, jsonrpc.Errorf(CodeUnsupportedProtocolVersion, "unsupported protocol version %q (supported: %s)", apierr.Clip(requested, 32), strings.Join(All(), ", ")).
			WithData(map[string]any{"supported": All(), "requested": requested})
	}
	if version == "" || version < Stateless {
		if h.Version >= Stateless {
			return false, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: header %s is %s, which puts the protocol version in every request: params._meta[%q] is missing", HeaderProtocolVersion, h.Version, MetaProtocolVersion)
		}
		return false, nil
	}
	switch {
	case h.Version != version:
		return false, jsonrpc.Errorf(CodeHeaderMismatch, "header %s is %q, but params._meta[%q] is %q: they must be the same", HeaderProtocolVersion, h.Version, MetaProtocolVersion, version)
	case h.Method != method:
		return false, jsonrpc.Errorf(CodeHeaderMismatch, "header %s is %q, but the method is %q: they must be the same", HeaderMethod, apierr.Clip(h.Method, 64), apierr.Clip(method, 64))
	}
	if name, ok := NameOf(method, params); ok && h.Name != name {
		return false, jsonrpc.Errorf(CodeHeaderMismatch, "header %s is %q, but the request names %q: they must be the same", HeaderName, apierr.Clip(h.Name, 64), apierr.Clip(name, 64))
	}
	if caps, ok := p.Meta[MetaClientCapabilities]; !ok || len(bytes.TrimSpace(caps)) == 0 || bytes.TrimSpace(caps)[0] != '{' {
		return false, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: _meta[%q] must be an object (the client's capabilities; {} for none)", MetaClientCapabilities)
	}
	return true, nil
}

// NameOf is what Mcp-Name must say: the tool of tools/call, the URI of resources/read.
func NameOf(method string, params json.RawMessage) (string, bool) {
	var p struct {
		Name *string `json:"name"`
		URI  *string `json:"uri"`
	}
	_ = json.Unmarshal(params, &p)
	switch {
	case method == "tools/call" && p.Name != nil:
		return *p.Name, true
	case method == "resources/read" && p.URI != nil:
		return *p.URI, true
	}
	return "", false
}
