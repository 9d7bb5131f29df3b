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

// Tool is one entry of a tools/list result.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *toolAnnotations `json:"annotations,omitempty"`
}

type toolAnnotations struct {
	ReadOnlyHint  bool `json:"readOnlyHint"`
	OpenWorldHint bool `json:"openWorldHint"`
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

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// callResult is a tools/call result. isError is always written: some clients test it for
// false rather than for absence.
type callResult struct {
	Content           []content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError"`
}
