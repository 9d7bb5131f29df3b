package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// ForwardRequest is one JSON-RPC call on its way to a service's POST /mcp.
type ForwardRequest struct {
	Service catalog.Service
	// Body is the complete JSON-RPC request.
	Body []byte
	// ProtocolVersion is the client's Mcp-Protocol-Version header, passed on when set.
	ProtocolVersion string
	// RequestID is passed on in contract.HeaderRequestID.
	RequestID string
}

// Forwarder posts one JSON-RPC call to a service and returns the JSON-RPC response.
// Failures are *apierr.Error with code upstream_unavailable or upstream_timeout, or a
// *jsonrpc.Error when the service refused the message itself.
type Forwarder interface {
	Forward(ctx context.Context, r ForwardRequest) ([]byte, error)
}

// HTTPForwarderConfig configures an HTTPForwarder; zero fields take the defaults.
type HTTPForwarderConfig struct {
	// Client is the HTTP client (default: a pooled client for many small calls).
	Client *http.Client
	// InternalToken is sent in contract.HeaderInternalToken when set.
	InternalToken string
	// Timeout bounds one forwarded call, retries included (default 15s).
	Timeout time.Duration
	// MaxResponseBytes bounds a service's answer (default 16 MiB).
	MaxResponseBytes int64
	// Tracing, when enabled, gives each forwarded call a client span whose W3C
	// traceparent goes to the service (only for the default Client).
	Tracing *obs.Tracing
}

// HTTPForwarder forwards over HTTP. A call is retried once, and only when the connection
// was refused, so a tool never runs twice.
type HTTPForwarder struct {
	client  *http.Client
	token   string
	timeout time.Duration
	max     int64
}

var _ Forwarder = (*HTTPForwarder)(nil)

// NewHTTPForwarder returns a Forwarder with cfg's settings.
func NewHTTPForwarder(cfg HTTPForwarderConfig) *HTTPForwarder {
	if cfg.Client == nil {
		cfg.Client = newPooledClient(cfg.Tracing)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 16 << 20
	}
	return &HTTPForwarder{client: cfg.Client, token: cfg.InternalToken, timeout: cfg.Timeout, max: cfg.MaxResponseBytes}
}

// newPooledClient keeps enough idle connections per service that the forwarding hot path
// never pays for a new TCP connection under load.
func newPooledClient(tracing *obs.Tracing) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 128
	t.IdleConnTimeout = 90 * time.Second
	t.ResponseHeaderTimeout = 30 * time.Second
	return &http.Client{Transport: obs.Transport(t, tracing)}
}

// Forward implements Forwarder.
func (f *HTTPForwarder) Forward(ctx context.Context, r ForwardRequest) ([]byte, error) {
	if r.Service.URL == "" {
		return nil, apierr.New(apierr.UpstreamUnavailable, "service %s has no internal address configured", r.Service.ID)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	url := strings.TrimRight(r.Service.URL, "/") + contract.PathMCP
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, upstreamErr(r.Service.ID, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
		body, err := f.do(ctx, url, r)
		if err == nil {
			return body, nil
		}
		lastErr = err
		if !errors.Is(err, syscall.ECONNREFUSED) {
			break
		}
	}
	return nil, upstreamErr(r.Service.ID, lastErr)
}

func (f *HTTPForwarder) do(ctx context.Context, url string, r ForwardRequest) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(r.Body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	// The services' streamable HTTP handler insists on both.
	req.Header.Set("Accept", "application/json, text/event-stream")
	if f.token != "" {
		req.Header.Set(contract.HeaderInternalToken, f.token)
	}
	if r.RequestID != "" {
		req.Header.Set(contract.HeaderRequestID, r.RequestID)
	}
	if r.ProtocolVersion != "" {
		req.Header.Set(HeaderProtocolVersion, r.ProtocolVersion)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.max+1))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if int64(len(body)) > f.max {
		return nil, &statusError{status: resp.StatusCode, msg: fmt.Sprintf("answer larger than %d bytes", f.max)}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		if body, err = responseFromSSE(body); err != nil {
			return nil, &statusError{status: resp.StatusCode, msg: err.Error()}
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
	case resp.StatusCode >= 500:
		return nil, &statusError{status: resp.StatusCode, msg: "server error"}
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, &statusError{status: resp.StatusCode, msg: "the service refused the gateway's internal token"}
	case resp.StatusCode >= 400:
		// The service refused the message itself: that is the client's request, so it goes
		// back as invalid. Only a message in the API's error shape is passed on; any other
		// body (an error page, internals) stays out of the answer (docs/security.md).
		var e apierr.Error
		if mt == "application/json" && json.Unmarshal(body, &e) == nil && e.Code != "" && e.Message != "" {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "service refused the request: %s", clip(strings.TrimSpace(e.Message), 200))
		}
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "service refused the request (HTTP %d)", resp.StatusCode)
	default:
		return nil, &statusError{status: resp.StatusCode, msg: "the answer is not a JSON-RPC response"}
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

type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return fmt.Sprintf("status %d: %s", e.status, e.msg) }

// upstreamErr turns a transport failure into the API error a client sees, keeping the
// cause for the log.
func upstreamErr(serviceID string, err error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w: %w", apierr.New(apierr.UpstreamTimeout, "service %s did not answer in time", serviceID), err)
	}
	return fmt.Errorf("%w: %w", apierr.New(apierr.UpstreamUnavailable, "service %s is unavailable", serviceID), err)
}
