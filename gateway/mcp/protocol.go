package mcp

import (
	"encoding/json"
	"slices"

	"github.com/sensorgate/sensorgate/pkg/mcpproto"
)

// LatestProtocolVersion is the newest version initialize negotiates, and the one it answers
// with when the client asks for one it does not know.
const LatestProtocolVersion = mcpproto.Latest

// StatelessProtocolVersion is the stateless protocol (SEP-2575): no initialize and no
// session; server/discover, and the protocol version, client info and capabilities in the
// _meta of every request (stateless.go).
const StatelessProtocolVersion = mcpproto.Stateless

// SupportedProtocolVersions returns the MCP protocol versions initialize accepts, newest
// first. 2026-07-28 is not among them: it has no initialize (a client asking initialize for
// it gets 2025-11-25); it is negotiated by server/discover (AllProtocolVersions).
func SupportedProtocolVersions() []string { return mcpproto.Initialize() }

// AllProtocolVersions returns every version an endpoint speaks, newest first: the stateless
// one and those of initialize. server/discover lists them.
func AllProtocolVersions() []string { return mcpproto.All() }

// negotiate follows the MCP lifecycle rule: echo a supported version, otherwise answer with
// the newest one and let the client decide whether it can speak it.
func negotiate(requested string) string {
	if slices.Contains(SupportedProtocolVersions(), requested) {
		return requested
	}
	return LatestProtocolVersion
}

// Method names of the MCP subset the gateway serves.
const (
	methodInitialize = "initialize"
	methodDiscover   = "server/discover"
	methodPing       = "ping"
	methodToolsList  = "tools/list"
	methodToolsCall  = "tools/call"

	methodResourcesList         = "resources/list"
	methodResourceTemplatesList = "resources/templates/list"
	methodResourcesRead         = "resources/read"
)

// HeaderProtocolVersion is the header streamable-HTTP clients send after initialize.
const HeaderProtocolVersion = mcpproto.HeaderProtocolVersion

type initializeParams struct {
	ProtocolVersion *string          `json:"protocolVersion"`
	Capabilities    *json.RawMessage `json:"capabilities"`
	ClientInfo      *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"clientInfo"`
}

type implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

type initializeResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      implementation  `json:"serverInfo"`
	Instructions    string          `json:"instructions,omitempty"`
}

type listToolsParams struct {
	Cursor *string `json:"cursor"`
}

type listToolsResult struct {
	Tools      []json.RawMessage `json:"tools"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

// callParams is tools/call's params; Meta and the rest are kept raw for forwarding.
type callParams struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}
