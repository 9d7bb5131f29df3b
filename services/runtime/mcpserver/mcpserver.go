// Package mcpserver is the scaffold of a backing service's MCP endpoint: an official
// go-sdk server mounted at POST /mcp (stateless, plain JSON answers), a registration hook
// through which the domain tools are added, and the request handling docs/api-decisions.md asks of every
// MCP endpoint that the SDK alone does not give (a bare client that sends no Accept header,
// JSON errors for bad media type and size, JSON-RPC parse errors with HTTP 200).
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
	"github.com/sensorgate/sensorgate/pkg/mcpproto"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// MaxBody is the largest MCP request accepted (docs/api-decisions.md: 1 MiB).
const MaxBody = 1 << 20

// Deps are what tools may use.
type Deps struct {
	ServiceID string
	Store     store.Reader
	Logger    *slog.Logger
	Now       func() time.Time
}

// Registrar adds tools to the server. Tool names must be ToolName(d.ServiceID, tool).
type Registrar func(s *mcp.Server, d Deps) error

// ToolName is the public name of a service tool: <service_id>.<tool>.
func ToolName(serviceID, tool string) string { return serviceID + "." + tool }

// Meta keys the gateway injects into params._meta of tools/call at sensor and project
// scope (docs/api-decisions.md "MCP").
const (
	MetaSensorID         = "sensor_id"
	MetaSensorExternalID = "sensor_external_id"
	MetaSensorName       = "sensor_name"
	MetaFeedSlug         = "feed_slug"
)

// Server is a service's MCP endpoint.
type Server struct {
	srv   *mcp.Server
	h     http.Handler
	names []string
	log   *slog.Logger
}

// New builds the MCP server of a service and runs every registrar on it.
func New(ctx context.Context, name, version string, d Deps, regs ...Registrar) (*Server, error) {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: version}, nil)
	for _, r := range regs {
		if err := r(srv, d); err != nil {
			return nil, fmt.Errorf("mcp: register tools: %w", err)
		}
	}
	s := &Server{srv: srv, log: d.Logger}
	s.h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: d.Logger})
	names, err := s.listTools(ctx)
	if err != nil {
		return nil, err
	}
	s.names = names
	return s, nil
}

// MCP returns the underlying SDK server (tests, in-memory clients).
func (s *Server) MCP() *mcp.Server { return s.srv }

// ToolNames lists the registered tools, sorted (for /v1/meta).
func (s *Server) ToolNames() []string { return append([]string(nil), s.names...) }

// listTools asks the server itself over an in-memory connection, so the names are
// exactly what clients see.
func (s *Server) listTools(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: connect in memory: %w", err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "self", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: connect in memory: %w", err)
	}
	defer cs.Close()
	names := []string{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp: list tools: %w", err)
		}
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return names, nil
}

// ServeHTTP handles POST /mcp.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		apierr.Write(w, apierr.New(apierr.MethodNotAllowed, "MCP takes POST with one JSON-RPC message, not %s", r.Method))
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		apierr.Write(w, apierr.New(apierr.UnsupportedMediaType, "MCP requests must have Content-Type application/json, got %q", r.Header.Get("Content-Type")))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		apierr.Write(w, apierr.New(apierr.InvalidParameter, "could not read the request body"))
		return
	}
	if len(body) > MaxBody {
		apierr.Write(w, apierr.New(apierr.PayloadTooLarge, "MCP request body is over %d bytes", MaxBody))
		return
	}
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		writeRPCError(w, nil, http.StatusOK, -32700, "parse error: the body is not valid JSON")
		return
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		writeRPCError(w, nil, http.StatusOK, -32600, "invalid request: send one JSON-RPC 2.0 message object")
		return
	}
	var probe struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(trimmed, &probe); err != nil || probe.JSONRPC != "2.0" || probe.Method == "" {
		writeRPCError(w, probe.ID, http.StatusOK, -32600, `invalid request: want {"jsonrpc": "2.0", "method": ..., "id": ...}`)
		return
	}
	// 2026-07-28's rules (pkg/mcpproto, as the gateway checks them), which the SDK's
	// stateless handler does not enforce: a request that breaks them is 400, a method the
	// protocol removed is 404. Notifications carry no per-request _meta.
	stateless := false
	if len(probe.ID) > 0 {
		var jerr *jsonrpc.Error
		stateless, jerr = mcpproto.Check(mcpproto.Headers{Version: strings.TrimSpace(r.Header.Get(mcpproto.HeaderProtocolVersion)),
			Method: strings.TrimSpace(r.Header.Get(mcpproto.HeaderMethod)), Name: strings.TrimSpace(r.Header.Get(mcpproto.HeaderName))}, probe.Method, probe.Params)
		if jerr != nil {
			writeError(w, probe.ID, http.StatusBadRequest, jerr)
			return
		}
		if stateless && removedIn2026[probe.Method] {
			writeRPCError(w, probe.ID, http.StatusNotFound, -32601, "method not found: "+probe.Method+" is not part of protocol "+mcpproto.Stateless)
			return
		}
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(trimmed))
	r2.ContentLength = int64(len(trimmed))
	// A bare client sends only Content-Type; the SDK insists on both media types in
	// Accept, and answers JSON anyway (JSONResponse).
	r2.Header.Set("Accept", "application/json, text/event-stream")
	rec := &recorder{header: http.Header{}}
	s.h.ServeHTTP(rec, r2)
	// The SDK reports some protocol failures as plain-text HTTP errors; clients of this
	// API get JSON-RPC errors for those. A JSON-RPC error it answers itself (at
	// 2026-07-28, 404 for an unknown method) passes as it is.
	if rec.status >= 400 && !isResponse(rec.body.Bytes()) {
		s.log.Debug("mcp: sdk refused", "status", rec.status, "body", truncate(rec.body.String(), 200))
		if rec.status == http.StatusForbidden {
			// DNS rebinding protection of a loopback-bound service (a Host that is not
			// localhost): an HTTP refusal, not a protocol error, as the MCP security
			// guidance and the conformance suite's dns-rebinding-protection expect.
			apierr.Write(w, apierr.New(apierr.Forbidden, "%s", truncate(string(bytes.TrimSpace(rec.body.Bytes())), 200)))
			return
		}
		code, msg, status := -32600, "invalid request: ", http.StatusOK
		switch {
		case rec.status >= 500:
			code = -32603
		case bytes.HasPrefix(rec.body.Bytes(), []byte("JSON RPC not handled")):
			// The SDK refuses methods it does not know before any handler runs; at
			// 2026-07-28 that is a 404.
			code, msg = -32601, "method not found: "
			if stateless {
				status = http.StatusNotFound
			}
		}
		writeRPCError(w, probe.ID, status, code, msg+truncate(string(bytes.TrimSpace(rec.body.Bytes())), 200))
		return
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	w.Header().Set("Content-Length", strconv.Itoa(rec.body.Len()))
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body.Bytes())
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// isResponse reports whether b is a JSON-RPC response.
func isResponse(b []byte) bool {
	msg, err := jsonrpc.Decode(b)
	_, ok := msg.(*jsonrpc.Response)
	return err == nil && ok
}

// removedIn2026 are the methods of older versions that 2026-07-28 no longer has.
var removedIn2026 = map[string]bool{"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true}

func writeRPCError(w http.ResponseWriter, id json.RawMessage, status, code int, msg string) {
	writeError(w, id, status, &jsonrpc.Error{Code: code, Message: msg})
}

// writeError answers a JSON-RPC error with the HTTP status.
func writeError(w http.ResponseWriter, id json.RawMessage, status int, e *jsonrpc.Error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
	if err != nil {
		apierr.Write(w, errors.New("encode JSON-RPC error"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// recorder buffers the SDK's answer (JSON, never streamed: JSONResponse is on).
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) Flush() {}
