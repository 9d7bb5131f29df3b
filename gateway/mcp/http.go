package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// Tool-name styles of tools/list. Some MCP clients reject dots in tool names; they ask for
// the underscore form with the query parameter tool_names=underscore or the header
// X-MCP-Tool-Names: underscore, and get <service_id>__<tool> instead of
// <service_id>.<tool>. tools/call accepts both forms whatever was asked.
const (
	QueryToolNames  = "tool_names"
	HeaderToolNames = "X-MCP-Tool-Names"
	styleDot        = "dot"
	styleUnderscore = "underscore"
)

// requestInfo is what the HTTP request says about how to answer its message.
type requestInfo struct {
	style           string
	protocolVersion string // Mcp-Protocol-Version header, validated; "" when absent
	// badVersion is an Mcp-Protocol-Version header the gateway does not speak: the
	// request is answered with -32022 and the versions it does (stateless.go).
	badVersion string
	requestID  string
	// method and name are the Mcp-Method and Mcp-Name headers (2026-07-28).
	method, name string
	// stateless is set when the request follows 2026-07-28 (its _meta names the version);
	// protocolVersion is then the version the gateway speaks on its own hops (stateless.go).
	stateless bool
	// base is the gateway's origin as the client reached it, for links to REST URLs.
	base string
}

// ServiceMCP serves POST /api/v1/services/:id/mcp: the service's own tools, forwarded.
func (h *Handler) ServiceMCP() gin.HandlerFunc {
	return h.serve("service", func(ctx context.Context, c *gin.Context) (*scope, error) {
		id := c.Param("id")
		svc, err := h.service(ctx, id)
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, apierr.New(apierr.NotFound, "service %q not found; GET /api/v1/services lists the services", id)
		}
		if err != nil {
			return nil, err
		}
		return &scope{kind: "service", service: &svc}, nil
	})
}

// SensorMCP serves POST /api/v1/sensors/:id/mcp: the sensor's service tools, forwarded with
// the sensor injected into params._meta of tools/call. :id is the sensor UUID only.
func (h *Handler) SensorMCP() gin.HandlerFunc {
	return h.serve("sensor", func(ctx context.Context, c *gin.Context) (*scope, error) {
		raw := c.Param("id")
		id, err := uuid.Parse(raw)
		if err != nil || len(raw) != 36 {
			return nil, apierr.New(apierr.SensorNotFound, "sensor %q not found: the sensor MCP endpoint takes the sensor UUID (with dashes), not an external id; GET /api/v1/sensors/%s gives the UUID", clip(raw, 64), clip(raw, 64))
		}
		s, err := h.resolver.Resolve(ctx, id.String())
		if err != nil {
			return nil, err
		}
		if s.ServiceID == "" {
			return nil, apierr.New(apierr.NoFeed, "sensor %s has no connected service", id)
		}
		svc, err := h.service(ctx, s.ServiceID)
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, apierr.New(apierr.NoFeed, "sensor %s is connected to service %q, which the gateway does not know", id, s.ServiceID)
		}
		if err != nil {
			return nil, err
		}
		meta := map[string]any{
			"sensor_id":          s.ID.String(),
			"sensor_external_id": s.ExternalID,
			"sensor_name":        s.Name,
		}
		if s.FeedSlug != "" {
			meta["feed_slug"] = s.FeedSlug
		}
		return &scope{kind: "sensor", service: &svc, meta: meta, local: h.sensorTools, sensor: &s}, nil
	})
}

// ProjectMCP serves POST /api/v1/projects/:id/mcp (:id is the project UUID or slug): the
// project's service tools with feed_slug injected, plus the project tools.
func (h *Handler) ProjectMCP() gin.HandlerFunc {
	return h.serve("project", func(ctx context.Context, c *gin.Context) (*scope, error) {
		id := c.Param("id")
		p, err := h.project(ctx, id)
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, apierr.New(apierr.NotFound, "project %q not found", clip(id, 64))
		}
		if err != nil {
			return nil, err
		}
		var viewer *uuid.UUID
		if v, ok := h.viewerOf(c); ok {
			viewer = &v
		}
		if !catalog.Visible(p, viewer) {
			return nil, apierr.New(apierr.Forbidden, "project %q is private", clip(id, 64))
		}
		sc := &scope{kind: "project", local: h.projectTools, project: &p}
		if p.ServiceID != "" {
			svc, err := h.service(ctx, p.ServiceID)
			switch {
			case err == nil:
				sc.service = &svc
				sc.meta = map[string]any{"feed_slug": p.Slug, "feed_id": p.ID.String()}
			case !errors.Is(err, catalog.ErrNotFound):
				return nil, err
			}
		}
		return sc, nil
	})
}

// RegistryMCP serves POST /api/v1/sensors/registry/mcp: the four legacy tools of docs/spec.md
// 4.10.
func (h *Handler) RegistryMCP() gin.HandlerFunc {
	return h.serve("registry", func(context.Context, *gin.Context) (*scope, error) {
		return &scope{kind: "registry", local: h.registryTools}, nil
	})
}

// CatalogMCP serves POST /api/v1/catalog/mcp: describe_catalog, search_sensors,
// get_readings and describe_sensor.
func (h *Handler) CatalogMCP() gin.HandlerFunc {
	return h.serve("catalog", func(context.Context, *gin.Context) (*scope, error) {
		return &scope{kind: "catalog", local: h.catalogTools}, nil
	})
}

// AlertsMCP serves POST /api/v1/alerts/mcp: the caller's key's alert rules and events
// (alerttools.go). The tools change state, so they live apart from the read-only scopes,
// whose tools a client may run without asking.
func (h *Handler) AlertsMCP() gin.HandlerFunc {
	return h.serve("alerts", func(context.Context, *gin.Context) (*scope, error) {
		if h.alertTools == nil {
			return nil, apierr.New(apierr.NotFound, "alerts are not configured on this gateway")
		}
		return &scope{kind: "alerts", local: h.alertTools}, nil
	})
}

func (h *Handler) viewerOf(c *gin.Context) (uuid.UUID, bool) {
	if h.viewer == nil {
		return uuid.UUID{}, false
	}
	return h.viewer(c)
}

// serve is the pipeline every MCP endpoint shares: HTTP checks (405, 415, 413, 400),
// target resolution (404, 403), one JSON-RPC message decoded strictly, and the answer.
func (h *Handler) serve(kind string, resolve func(context.Context, *gin.Context) (*scope, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.Method != http.MethodPost {
			c.Header("Allow", http.MethodPost)
			h.fail(c, apierr.New(apierr.MethodNotAllowed, "method %s not allowed: an MCP endpoint takes a POST of one JSON-RPC 2.0 message", c.Request.Method))
			return
		}
		if mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type")); err != nil || mt != "application/json" {
			h.fail(c, apierr.New(apierr.UnsupportedMediaType, "unsupported Content-Type %q: send the JSON-RPC message as application/json", clip(c.GetHeader("Content-Type"), 64)))
			return
		}
		info, err := requestInfoOf(c)
		if err != nil {
			h.fail(c, err)
			return
		}
		body, err := readBody(c)
		if err != nil {
			h.fail(c, err)
			return
		}
		ctx := c.Request.Context()
		sc, err := resolve(ctx, c)
		if err != nil {
			h.fail(c, err)
			return
		}
		if v, ok := h.viewerOf(c); ok {
			sc.viewer = &v
		}
		msg, err := jsonrpc.Decode(body)
		if err != nil {
			var de *jsonrpc.DecodeError
			if errors.As(err, &de) {
				h.reply(c, de.Response())
				return
			}
			h.fail(c, err)
			return
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || req.IsNotification() {
			// Notifications and responses (the gateway never asks the client anything)
			// need no answer.
			c.Status(http.StatusAccepted)
			c.Writer.WriteHeaderNow()
			return
		}
		if req.ID.IsNull() {
			h.reply(c, jsonrpc.NewError(req.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "invalid request: MCP requires a string or number id, not null")))
			return
		}
		if info, err = statelessRequest(info, req); err != nil {
			var je *jsonrpc.Error
			if errors.As(err, &je) {
				// A request that breaks 2026-07-28's rules is a 400 (SEP-2575).
				h.replyStatus(c, http.StatusBadRequest, jsonrpc.NewError(req.ID, je))
				return
			}
			h.fail(c, err)
			return
		}
		if info.stateless && !h.serves(sc, req.Method) {
			// At 2026-07-28 an unknown method, and the ones it removed (initialize, ping,
			// logging/setLevel, resources/subscribe...), are 404 (SEP-2575).
			h.replyStatus(c, http.StatusNotFound, jsonrpc.NewError(req.ID, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound,
				"method %q not found: at protocol %s this endpoint serves %s", clip(req.Method, 64), StatelessProtocolVersion, h.methods(sc))))
			return
		}
		if req.Method == methodSubscriptionsListen {
			h.listen(c, sc, info, req)
			return
		}
		var call toolCall
		if req.Method == methodToolsCall {
			// The params are decoded here once; a malformed call is answered at once.
			var bad []byte
			if call, bad = decodeCall(req); bad != nil {
				h.reply200(c, info, bad)
				return
			}
			if !h.chargeTool(c, call.args) {
				return
			}
		}
		out := h.dispatch(ctx, sc, info, req, call)
		h.reply200(c, info, out)
	}
}

// reply200 writes a JSON-RPC answer with its length (else chunked over 2 KiB), with
// resultType at 2026-07-28.
func (h *Handler) reply200(c *gin.Context, info requestInfo, out []byte) {
	if info.stateless {
		out = withResultType(out)
	}
	c.Header("Content-Length", strconv.Itoa(len(out)))
	c.Data(http.StatusOK, "application/json", out)
}

// dispatch answers one call with the marshalled response.
func (h *Handler) dispatch(ctx context.Context, sc *scope, info requestInfo, req *jsonrpc.Request, call toolCall) []byte {
	switch req.Method {
	case methodInitialize:
		return h.initialize(sc, req)
	case methodDiscover:
		return h.discover(sc, info, req)
	case methodPing:
		return marshalResponse(&jsonrpc.Response{ID: req.ID, Result: json.RawMessage("{}")})
	case methodToolsList:
		return withCacheHints(h.listTools(ctx, sc, info, req), h.cacheHints(sc))
	case methodToolsCall:
		return h.callTool(ctx, sc, info, req.ID, call)
	case methodResourcesList, methodResourceTemplatesList, methodResourcesRead:
		if sc.hasResources() {
			if req.Method == methodResourcesRead {
				return h.serveResources(ctx, sc, req)
			}
			return withCacheHints(h.serveResources(ctx, sc, req), h.cacheHints(sc))
		}
		fallthrough
	default:
		return marshalResponse(jsonrpc.NewError(req.ID, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound,
			"method %q not found: this endpoint serves %s", clip(req.Method, 64), h.methods(sc))))
	}
}

func (h *Handler) initialize(sc *scope, req *jsonrpc.Request) []byte {
	var p initializeParams
	if err := decodeObject(req.Params, &p); err != nil {
		return invalidParams(req.ID, "initialize: %v", err)
	}
	if p.ProtocolVersion == nil {
		return invalidParams(req.ID, "initialize: params.protocolVersion is required (for example %q)", "2024-11-05")
	}
	res := initializeResult{
		ProtocolVersion: negotiate(*p.ProtocolVersion),
		Capabilities:    h.capabilities(sc, false),
		ServerInfo:      h.serverInfo(sc),
		Instructions:    sc.instructions(),
	}
	resp, err := jsonrpc.NewResult(req.ID, res)
	if err != nil {
		return internalError(req.ID)
	}
	return marshalResponse(resp)
}

func requestInfoOf(c *gin.Context) (requestInfo, error) {
	info := requestInfo{style: styleDot}
	for _, v := range []struct{ name, value string }{{HeaderToolNames, c.GetHeader(HeaderToolNames)}, {QueryToolNames, c.Query(QueryToolNames)}} {
		switch strings.ToLower(v.value) {
		case "":
		case styleDot:
			info.style = styleDot
		case styleUnderscore:
			info.style = styleUnderscore
		default:
			return info, apierr.Invalid(v.name, "want %q or %q, got %q", styleDot, styleUnderscore, clip(v.value, 32))
		}
	}
	if v := strings.TrimSpace(c.GetHeader(HeaderProtocolVersion)); v != "" {
		if !slices.Contains(AllProtocolVersions(), v) {
			info.badVersion = v
		} else {
			info.protocolVersion = v
		}
	}
	// Values are compared as sent, but for the whitespace HTTP allows around them.
	info.method, info.name = strings.TrimSpace(c.GetHeader(HeaderMethod)), strings.TrimSpace(c.GetHeader(HeaderName))
	scheme := "http"
	if c.Request.TLS != nil || strings.EqualFold(c.GetHeader("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	info.base = scheme + "://" + c.Request.Host
	// obs.Middleware assigns the id (or keeps the client's); a bare engine has only the header.
	info.requestID = obs.RequestID(c.Request.Context())
	if info.requestID == "" {
		info.requestID = c.GetHeader(contract.HeaderRequestID)
	}
	return info, nil
}

func readBody(c *gin.Context) ([]byte, error) {
	if c.Request.ContentLength > MaxBodyBytes {
		return nil, tooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		return nil, apierr.New(apierr.InvalidParameter, "could not read the request body")
	}
	return body, nil
}

func tooLarge() error {
	return apierr.New(apierr.PayloadTooLarge, "request body too large: an MCP message may be at most %d bytes (1 MiB)", MaxBodyBytes)
}

// fail renders an HTTP-level error; internal ones are logged, never shown.
func (h *Handler) fail(c *gin.Context, err error) {
	e := apierr.From(err)
	if e.Code == apierr.Internal {
		h.log.ErrorContext(c.Request.Context(), "mcp request failed", "path", c.FullPath(), "err", err)
	}
	apierr.Write(c.Writer, e)
	c.Abort()
}

func (h *Handler) reply(c *gin.Context, resp *jsonrpc.Response) {
	h.replyStatus(c, http.StatusOK, resp)
}

func (h *Handler) replyStatus(c *gin.Context, status int, resp *jsonrpc.Response) {
	c.Data(status, "application/json", marshalResponse(resp))
}

// serves reports whether scope sc answers method at 2026-07-28.
func (h *Handler) serves(sc *scope, method string) bool {
	switch method {
	case methodDiscover, methodToolsList, methodToolsCall:
		return true
	case methodResourcesList, methodResourceTemplatesList, methodResourcesRead, methodSubscriptionsListen:
		return sc.hasResources()
	}
	return false
}

func marshalResponse(resp *jsonrpc.Response) []byte {
	b, err := json.Marshal(resp)
	if err != nil {
		// Only a result that is not valid JSON gets here; answer with an internal error.
		b, _ = json.Marshal(jsonrpc.NewError(resp.ID, jsonrpc.Errorf(jsonrpc.CodeInternalError, "internal error")))
	}
	return b
}

func invalidParams(id jsonrpc.ID, format string, args ...any) []byte {
	return marshalResponse(jsonrpc.NewError(id, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+format, args...)))
}

func internalError(id jsonrpc.ID) []byte {
	return marshalResponse(jsonrpc.NewError(id, jsonrpc.Errorf(jsonrpc.CodeInternalError, "internal error")))
}

// decodeObject decodes params that must be an object (or absent) into v.
func decodeObject(params json.RawMessage, v any) error {
	if len(params) == 0 {
		return nil
	}
	if strings.TrimSpace(string(params))[0] != '{' {
		return errors.New("params must be an object")
	}
	if err := json.Unmarshal(params, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return errors.New("params." + te.Field + " has the wrong type (" + te.Value + ")")
		}
		return errors.New("params do not match the method's shape")
	}
	return nil
}

// clip shortens client-supplied text before it goes into a message (the one rule,
// pkg/apierr).
var clip = apierr.Clip
