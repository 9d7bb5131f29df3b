package mcp

import (
	"bytes"
	"cmp"
	"encoding/json"
	"strings"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
	"github.com/sensorgate/sensorgate/pkg/mcpproto"
)

// Protocol 2026-07-28 (SEP-2575) on the gateway's own JSON-RPC pipeline. A request follows
// it when its params._meta names the version; it then also carries the client's info and
// capabilities, and its HTTP request the Mcp-Protocol-Version, Mcp-Method and (tools/call,
// resources/read) Mcp-Name headers, which must agree with the body. There is no initialize
// and no ping; server/discover describes the endpoint.
//
// The gateway speaks 2026-07-28 with its client only: its own hops (a service's POST /mcp,
// the in-process go-sdk server of the local tools) get the request at LatestProtocolVersion
// with the per-request keys taken out of _meta, so a service needs no Mcp-* headers from
// the gateway and the services' clients stay as they are.

// Headers of 2026-07-28.
const (
	HeaderMethod = mcpproto.HeaderMethod
	HeaderName   = mcpproto.HeaderName
)

// The per-request _meta keys of 2026-07-28.
const (
	metaPrefix             = mcpproto.MetaPrefix
	metaProtocolVersion    = mcpproto.MetaProtocolVersion
	metaClientCapabilities = mcpproto.MetaClientCapabilities
	metaServerInfo         = mcpproto.MetaServerInfo
)

// statelessRequest checks a call against 2026-07-28 when it follows that protocol (or its
// header says so; the rules are pkg/mcpproto's, which the services check too) and returns
// the request info to answer it with; req.Params loses the per-request _meta keys, which
// only the gateway reads. Failures are *jsonrpc.Error.
func statelessRequest(info requestInfo, req *jsonrpc.Request) (requestInfo, error) {
	h := mcpproto.Headers{Version: cmp.Or(info.badVersion, info.protocolVersion), Method: info.method, Name: info.name}
	stateless, jerr := mcpproto.Check(h, req.Method, req.Params)
	if jerr != nil {
		return info, jerr
	}
	if !stateless {
		return info, nil
	}
	stripped, err := stripProtocolMeta(req.Params)
	if err != nil {
		return info, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %v", err)
	}
	req.Params = stripped
	info.stateless = true
	info.protocolVersion = LatestProtocolVersion
	return info, nil
}

// stripProtocolMeta removes the io.modelcontextprotocol/ keys from params._meta (and
// _meta itself when nothing else is left).
func stripProtocolMeta(raw json.RawMessage) (json.RawMessage, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, err
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(params["_meta"], &meta); err != nil {
		return nil, err
	}
	for k := range meta {
		if strings.HasPrefix(k, metaPrefix) {
			delete(meta, k)
		}
	}
	if len(meta) == 0 {
		delete(params, "_meta")
	} else {
		b, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		params["_meta"] = b
	}
	return json.Marshal(params)
}

// discoverResult is server/discover's answer.
type discoverResult struct {
	SupportedVersions []string        `json:"supportedVersions"`
	Capabilities      json.RawMessage `json:"capabilities"`
	Instructions      string          `json:"instructions,omitempty"`
	cacheHints
	ResultType string         `json:"resultType"`
	Meta       map[string]any `json:"_meta"`
}

// discover answers server/discover, which only a 2026-07-28 request may ask: an older
// client gets "method not found" and falls back to initialize, as the protocol says.
func (h *Handler) discover(sc *scope, info requestInfo, req *jsonrpc.Request) []byte {
	if !info.stateless {
		return marshalResponse(jsonrpc.NewError(req.ID, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound,
			"method %q is part of protocol %s only: send params._meta[%q] = %q (older clients use initialize)", methodDiscover, StatelessProtocolVersion, metaProtocolVersion, StatelessProtocolVersion)))
	}
	return marshalResponse(mustResult(req.ID, discoverResult{
		SupportedVersions: AllProtocolVersions(),
		Capabilities:      h.capabilities(sc, true),
		Instructions:      sc.instructions(),
		cacheHints:        h.cacheHints(sc),
		ResultType:        "complete",
		Meta:              map[string]any{metaServerInfo: h.serverInfo(sc)},
	}))
}

func (h *Handler) serverInfo(sc *scope) implementation {
	return implementation{Name: "sensorgate-" + sc.kind, Title: "sensorgate " + sc.kind + " MCP", Version: h.version}
}

// cacheHints are the ttlMs and cacheScope of a list result (SEP-2549).
type cacheHints struct {
	TTLMs      int64  `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`
}

// cacheHints match the gateway's own caches: what an endpoint lists follows from the
// service, sensor and project lookups it trusts for CacheTTL, so a client may trust the
// list as long. A private project's lists are for its owner only.
func (h *Handler) cacheHints(sc *scope) cacheHints {
	ch := cacheHints{TTLMs: h.cacheTTL.Milliseconds(), CacheScope: "public"}
	if sc.project != nil && sc.project.Visibility == catalog.VisibilityPrivate {
		ch.CacheScope = "private"
	}
	return ch
}

// withCacheHints adds ch to the result of a list response; an error passes as it came.
func withCacheHints(resp []byte, ch cacheHints) []byte {
	msg, err := jsonrpc.Decode(resp)
	r, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok || r.Error != nil {
		return resp
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(r.Result, &res) != nil || res == nil {
		return resp
	}
	res["ttlMs"], _ = json.Marshal(ch.TTLMs)
	res["cacheScope"], _ = json.Marshal(ch.CacheScope)
	out, err := jsonrpc.NewResult(r.ID, res)
	if err != nil {
		return resp
	}
	return marshalResponse(out)
}

// withResultType marks the result of resp "complete": 2026-07-28 requires resultType on
// every result (SEP-2322's incomplete results aside, which the gateway never gives), and
// the gateway's hops answer at an older version without it. An error passes as it came.
func withResultType(resp []byte) []byte {
	msg, err := jsonrpc.Decode(resp)
	r, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok || r.Error != nil {
		return resp
	}
	res := bytes.TrimSpace(r.Result)
	if len(res) < 2 || res[0] != '{' {
		return resp
	}
	var probe struct {
		ResultType json.RawMessage `json:"resultType"`
	}
	if json.Unmarshal(res, &probe) != nil || probe.ResultType != nil {
		return resp
	}
	out := make([]byte, 0, len(res)+len(resultComplete)+1)
	out = append(out, '{')
	out = append(out, resultComplete...)
	if rest := bytes.TrimSpace(res[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	out = append(out, res[1:]...)
	r.Result = out
	return marshalResponse(r)
}

const resultComplete = `"resultType":"complete"`
