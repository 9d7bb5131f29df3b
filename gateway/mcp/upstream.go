package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
)

// Readings is the gateway's one readings path (readings.Handlers.Answer): the MCP tools
// read through the same cache, coalescing and validation as REST, so a tool call right
// after the same REST query is a cache hit.
type Readings interface {
	Answer(ctx context.Context, route contract.Route, ref, rawQuery string) (*contract.Response, error)
}

// latest, readingsPage and aggregate ask the readings path for sensor s, with q as REST
// would forward it.
func (h *Handler) latest(ctx context.Context, s catalog.Sensor, q url.Values) (contract.LatestResponse, error) {
	var out contract.LatestResponse
	return out, h.answer(ctx, contract.RouteLatest, s, q, &out)
}

func (h *Handler) readingsPage(ctx context.Context, s catalog.Sensor, q url.Values) (contract.ReadingsResponse, error) {
	var out contract.ReadingsResponse
	return out, h.answer(ctx, contract.RouteReadings, s, q, &out)
}

func (h *Handler) aggregate(ctx context.Context, s catalog.Sensor, q url.Values) (contract.AggregateResponse, error) {
	var out contract.AggregateResponse
	return out, h.answer(ctx, contract.RouteAggregate, s, q, &out)
}

// answer decodes the readings path's JSON answer into out; a service's error answer (404
// no_readings, 400 invalid_parameter) comes back as its *apierr.Error.
func (h *Handler) answer(ctx context.Context, route contract.Route, s catalog.Sensor, q url.Values, out any) error {
	resp, err := h.readings.Answer(ctx, route, s.ID.String(), q.Encode())
	if err != nil {
		return err
	}
	if resp.Status != http.StatusOK {
		var e apierr.Error
		if json.Unmarshal(resp.Body, &e) != nil || e.Code == "" {
			return apierr.New(apierr.UpstreamBadResponse, "service %s gave an answer the gateway does not pass on", s.ServiceID)
		}
		return &e
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return fmt.Errorf("%w: %w", apierr.New(apierr.UpstreamBadResponse, "service %s answered readings the gateway cannot read", s.ServiceID), err)
	}
	return nil
}

// forward posts one JSON-RPC message to the service's MCP endpoint through its client
// (sent once: a tool must not run twice) and returns the JSON-RPC response. Failures are
// *apierr.Error (upstream_unavailable, upstream_timeout), or a *jsonrpc.Error when the
// service refused the message itself.
func (h *Handler) forward(ctx context.Context, sc *scope, info requestInfo, body []byte) ([]byte, error) {
	c, ok := h.clients[sc.service.ID]
	if !ok {
		return nil, apierr.New(apierr.UpstreamUnavailable, "service %s is not configured on this gateway", sc.service.ID)
	}
	return forwardTo(ctx, c, body, info.protocolVersion)
}

func forwardTo(ctx context.Context, c *contract.Client, body []byte, protocolVersion string) ([]byte, error) {
	resp, err := c.MCP(ctx, body, protocolVersion)
	if err != nil {
		return nil, err
	}
	return rpcAnswer(c.ID(), resp)
}

// rpcAnswer finds the JSON-RPC response in a service's answer to a forwarded message.
func rpcAnswer(serviceID string, resp *contract.Response) ([]byte, error) {
	body := resp.Body
	mt, _, _ := mime.ParseMediaType(resp.ContentType)
	unavailable := func(format string, args ...any) error {
		return fmt.Errorf("%w: HTTP %d: %s", apierr.New(apierr.UpstreamUnavailable, "service %s is unavailable", serviceID), resp.Status, fmt.Sprintf(format, args...))
	}
	if mt == "text/event-stream" {
		var err error
		if body, err = responseFromSSE(body); err != nil {
			return nil, unavailable("%v", err)
		}
	}
	// A JSON-RPC response is the answer whatever the status: the go-sdk sends some
	// protocol errors with 400 or 404.
	if msg, err := jsonrpc.Decode(body); err == nil {
		if _, ok := msg.(*jsonrpc.Response); ok {
			return body, nil
		}
	}
	switch {
	case resp.Status >= 500:
		return nil, unavailable("server error")
	case resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden:
		return nil, unavailable("the service refused the gateway's internal token")
	case resp.Status >= 400:
		// The service refused the message itself: that is the client's request, so it goes
		// back as invalid. Only a message in the API's error shape is passed on; any other
		// body (an error page, internals) stays out of the answer (docs/security.md).
		var e apierr.Error
		if mt == "application/json" && json.Unmarshal(body, &e) == nil && e.Code != "" && e.Message != "" {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "service refused the request: %s", clip(strings.TrimSpace(e.Message), 200))
		}
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "service refused the request (HTTP %d)", resp.Status)
	default:
		return nil, unavailable("the answer is not a JSON-RPC response")
	}
}

// responseFromSSE returns the first JSON-RPC response in an event stream.
func responseFromSSE(body []byte) ([]byte, error) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), len(body)+1)
	var data []byte
	flush := func() []byte {
		defer func() { data = data[:0] }()
		if len(data) == 0 {
			return nil
		}
		if msg, err := jsonrpc.Decode(data); err == nil {
			if _, ok := msg.(*jsonrpc.Response); ok {
				return append([]byte(nil), data...)
			}
		}
		return nil
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if out := flush(); out != nil {
				return out, nil
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
		}
	}
	if out := flush(); out != nil {
		return out, nil
	}
	return nil, errors.New("the event stream holds no JSON-RPC response")
}
