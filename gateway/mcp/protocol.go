package mcp

import (
	"encoding/json"
	"slices"
)

// LatestProtocolVersion is the version the gateway answers with when the client asks for one
// it does not support.
const LatestProtocolVersion = "2025-11-25"

// SupportedProtocolVersions returns the MCP protocol versions initialize accepts, newest
// first. 2026-07-28 (SEP-2575, stateless server/discover) is not offered: initialize is
// deprecated there, and SDK clients that try server/discover first fall back to initialize
// with 2025-11-25 when the gateway answers "method not found".
func SupportedProtocolVersions() []string {
	return []string{LatestProtocolVersion, "2025-06-18", "2025-03-26", "2024-11-05"}
}

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
	methodPing       = "ping"
	methodToolsList  = "tools/list"
	methodToolsCall  = "tools/call"

	methodResourcesList         = "resources/list"
	methodResourceTemplatesList = "resources/templates/list"
	methodResourcesRead         = "resources/read"
)

// HeaderProtocolVersion is the header streamable-HTTP clients send after initialize.
const HeaderProtocolVersion = "Mcp-Protocol-Version"

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
