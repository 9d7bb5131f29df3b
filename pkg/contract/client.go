package contract

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
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// Errors of a Client that say the service could not be asked, as opposed to a service
// that answered with an error (*ServiceError). They come wrapped with an *apierr.Error
// (502 upstream_unavailable, 504 upstream_timeout) for the client's answer; test with
// errors.Is.
var (
	// ErrUnreachable: connection refused or reset, unknown host, a 5xx after the retries,
	// or an answer the gateway does not pass on.
	ErrUnreachable = errors.New("service unreachable")
	// ErrTimeout: the service did not answer within the deadline.
	ErrTimeout = errors.New("service timed out")
)

// ServiceError is a service's JSON error answer to a typed call: the *apierr.Error it
// sent (reachable with errors.As) and the HTTP status it came with.
type ServiceError struct {
	StatusCode int
	Path       string
	Err        *apierr.Error
}

func (e *ServiceError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.Path, e.StatusCode, e.Err.Error())
}

// Unwrap exposes the *apierr.Error.
func (e *ServiceError) Unwrap() error { return e.Err }

// IsUnavailable reports whether err says the service could not be asked or failed (as
// opposed to refusing the request): the cases where the gateway marks its data
// unavailable and carries on.
func IsUnavailable(err error) bool {
	if errors.Is(err, ErrUnreachable) || errors.Is(err, ErrTimeout) {
		return true
	}
	var se *ServiceError
	return errors.As(err, &se) && se.StatusCode >= 500
}

// Client calls one backing service: the only road from the gateway to it. It owns the
// service's connection pool, sends every call with the internal token, the request id and
// a client span, bounds each by its route's deadline, and retries only calls that are safe
// to repeat. It is safe for concurrent use.
type Client struct {
	id, base string
	sh       *shared
	rt       http.RoundTripper // the request id (and spans) over tr
	tr       idleCloser        // *h1pool.Transport or *http.Transport
	// next rotates new connections over the service's addresses; recycled is when its idle
	// connections were last closed (unix nanoseconds).
	next     atomic.Uint32
	recycled atomic.Int64
}

// idleCloser is the transport's pool, closed at shutdown and by recycle.
type idleCloser interface{ CloseIdleConnections() }

// ID is the service's id.
func (c *Client) ID() string { return c.id }

// BaseURL is the service address the client calls.
func (c *Client) BaseURL() string { return c.base }

// Deadline is the deadline of one call of route, retries included, from the one table.
func (c *Client) Deadline(r Route) time.Duration {
	if r >= 0 && r < routeCount {
		return c.sh.deadlines[r]
	}
	return c.sh.deadlines[RouteHealth]
}

// CloseIdleConnections releases the pool, at shutdown.
func (c *Client) CloseIdleConnections() { c.tr.CloseIdleConnections() }

// Response is a service's answer as the gateway keeps it: immutable once built, so cache
// hits and coalesced callers share it.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
	ETag        string // strong validator of Body
	FetchedAt   time.Time

	// contentTypeV, etagV and lengthV are the header values ready to assign, made once
	// per answer instead of once per request served from it; all are windows of hdrV
	// (capacity 1: an append to one copies instead of writing into another).
	contentTypeV, etagV, lengthV []string
	hdrV                         [3]string
}

// NewResponse is an answer of a service with body (owned by the Response from now on),
// its strong validator and its ready-made header values.
func NewResponse(status int, contentType string, body []byte, fetchedAt time.Time) *Response {
	var b [16]byte // a quoted base-36 uint64 is at most 15 bytes: one allocation, the string
	tag := append(b[:0], '"')
	tag = strconv.AppendUint(tag, xxhash.Sum64(body), 36)
	etag := string(append(tag, '"'))
	r := &Response{Status: status, ContentType: contentType, Body: body, ETag: etag, FetchedAt: fetchedAt}
	r.hdrV = [3]string{contentType, etag, strconv.Itoa(len(body))}
	r.contentTypeV, r.etagV, r.lengthV = r.hdrV[0:1:1], r.hdrV[1:2:2], r.hdrV[2:3:3]
	return r
}

// ContentTypeValue and ETagValue are the header values of the answer, ready to assign.
func (r *Response) ContentTypeValue() []string { return r.contentTypeV }

// ETagValue: see ContentTypeValue.
func (r *Response) ETagValue() []string { return r.etagV }

// ContentLengthValue is the length of Body as a Content-Length value: see ContentTypeValue.
func (r *Response) ContentLengthValue() []string { return r.lengthV }

// Latest asks for a station's newest reading; query is the public query as the gateway
// forwards it (already encoded, may be empty). Like Readings and Aggregate, it returns the
// service's answer as it came (a 4xx error of the service included) for the gateway to
// pass on byte for byte.
func (c *Client) Latest(ctx context.Context, externalID, query string) (*Response, error) {
	return c.Get(ctx, RouteLatest, withQuery(LatestPath(externalID), query))
}

// Readings asks for one page of a station's readings.
func (c *Client) Readings(ctx context.Context, externalID, query string) (*Response, error) {
	return c.Get(ctx, RouteReadings, withQuery(ReadingsPath(externalID), query))
}

// Aggregate asks for a station's aggregates.
func (c *Client) Aggregate(ctx context.Context, externalID, query string) (*Response, error) {
	return c.Get(ctx, RouteAggregate, withQuery(AggregatePath(externalID), query))
}

// HealthAnswer is the service's health document as it came.
func (c *Client) HealthAnswer(ctx context.Context) (*Response, error) {
	return c.Get(ctx, RouteHealth, PathHealth)
}

func withQuery(path, query string) string {
	if query == "" {
		return path
	}
	return path + "?" + query
}

// Get calls GET pathQuery (already escaped) within route's deadline. A service's answer
// that the gateway may pass on is returned as a Response: a 200 of the expected media
// type, or a 4xx in the error shape. Failures are *apierr.Error (502 upstream_unavailable
// wrapping ErrUnreachable, 504 upstream_timeout wrapping ErrTimeout); a caller that went
// away gets its context's error.
func (c *Client) Get(ctx context.Context, route Route, pathQuery string) (*Response, error) {
	var out *Response
	err := c.call(ctx, callSpec{route: route, method: http.MethodGet, pathQuery: pathQuery, idem: true},
		func(status int, ct string, body []byte) error {
			out = NewResponse(status, ct, bytes.Clone(body), time.Now())
			return nil
		})
	return out, err
}

// Meta fetches GET /v1/meta.
func (c *Client) Meta(ctx context.Context) (ServiceMeta, error) {
	var m ServiceMeta
	err := c.getJSON(ctx, RouteCatalog, PathMeta, &m)
	return m, err
}

// Health fetches GET /v1/health.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.getJSON(ctx, RouteHealth, PathHealth, &h)
	return h, err
}

// Sensors fetches one page of GET /v1/sensors; a zero updatedSince lists every station,
// otherwise only those changed since then.
func (c *Client) Sensors(ctx context.Context, updatedSince time.Time, page, limit int) (StationPage, error) {
	var p StationPage
	q := url.Values{}
	if !updatedSince.IsZero() {
		q.Set("updated_since", FormatTime(updatedSince))
	}
	if page > 0 {
		q.Set("page", strconv.Itoa(page))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	err := c.getJSON(ctx, RouteCatalog, withQuery(PathSensors, q.Encode()), &p)
	return p, err
}

// LatestBatch calls POST PathLatestBatch; the service keeps the measurements whose
// quality flag qc holds. It only reads, so it is retried like a GET.
func (c *Client) LatestBatch(ctx context.Context, externalIDs []string, qc QCFilter) (LatestBatchResponse, error) {
	var out LatestBatchResponse
	req := LatestBatchRequest{ExternalIDs: externalIDs}
	if !qc.All() {
		req.QC = qc.String()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return out, fmt.Errorf("contract: latest batch: %w", err)
	}
	err = c.call(ctx, callSpec{route: RouteLatestBatch, method: http.MethodPost, pathQuery: PathLatestBatch, body: body, idem: true},
		decodeInto(PathLatestBatch, &out))
	return out, err
}

// Events calls GET PathEvents: after "" asks only for the log's current head (Last);
// wait > 0 holds the answer until an event arrives or wait passes (the call's deadline is
// wait plus RouteEvents').
func (c *Client) Events(ctx context.Context, after string, limit int, wait time.Duration) (EventsPage, error) {
	var p EventsPage
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if wait > 0 {
		q.Set("wait", strconv.FormatInt(wait.Milliseconds(), 10)+"ms")
	}
	pq := withQuery(PathEvents, q.Encode())
	err := c.call(ctx, callSpec{route: RouteEvents, method: http.MethodGet, pathQuery: pq, idem: true, extra: max(wait, 0)},
		decodeInto(PathEvents, &p))
	return p, err
}

// MCP posts one JSON-RPC message to the service's MCP endpoint and returns the answer as
// it came, whatever its status (the caller reads JSON-RPC, which the SDK sends with 400
// and 404 too). A message is sent once: a tool must not run twice. protocolVersion, when
// set, goes in the Mcp-Protocol-Version header.
func (c *Client) MCP(ctx context.Context, body []byte, protocolVersion string) (*Response, error) {
	var out *Response
	hdr := http.Header{
		"Content-Type": {"application/json"},
		// The services' streamable HTTP handler insists on both.
		"Accept": {"application/json, text/event-stream"},
	}
	if protocolVersion != "" {
		hdr.Set("Mcp-Protocol-Version", protocolVersion)
	}
	err := c.call(ctx, callSpec{route: RouteMCP, method: http.MethodPost, pathQuery: PathMCP, body: body, header: hdr, raw: true},
		func(status int, ct string, b []byte) error {
			out = &Response{Status: status, ContentType: ct, Body: bytes.Clone(b), FetchedAt: time.Now()}
			return nil
		})
	return out, err
}

// getJSON is a GET whose 200 is decoded into out; a service's error answer is a
// *ServiceError.
func (c *Client) getJSON(ctx context.Context, route Route, pathQuery string, out any) error {
	return c.call(ctx, callSpec{route: route, method: http.MethodGet, pathQuery: pathQuery, idem: true}, decodeInto(pathQuery, out))
}

// decodeInto reads a judged answer into out: the 200's JSON, or the service's error.
func decodeInto(path string, out any) func(int, string, []byte) error {
	return func(status int, _ string, body []byte) error {
		if status != http.StatusOK {
			var ae apierr.Error
			if err := json.Unmarshal(body, &ae); err != nil {
				return fmt.Errorf("contract: %s: HTTP %d: %w", path, status, err)
			}
			return &ServiceError{StatusCode: status, Path: path, Err: &ae}
		}
		var err error
		if d, ok := out.(bodyDecoder); ok {
			// Its values point into the bytes they were read from: a copy of its own, not
			// the pooled buffer the next call reuses.
			err = d.decodeJSON(bytes.Clone(body))
		} else {
			err = json.Unmarshal(body, out)
		}
		if err != nil {
			return fmt.Errorf("%w: %w", apierr.New(apierr.UpstreamBadResponse, "service answer to %s could not be read", path),
				fmt.Errorf("%w: decode: %w", ErrUnreachable, err))
		}
		return nil
	}
}

// bodyDecoder is an answer type with a decoder of its own, faster than encoding/json
// (LatestBatchResponse).
type bodyDecoder interface{ decodeJSON([]byte) error }

// callSpec is one call to a service.
type callSpec struct {
	route     Route
	method    string
	pathQuery string
	body      []byte
	header    http.Header // extra request headers
	// idem marks a call that is safe to send again (it only reads).
	idem bool
	// raw skips judging: every answer goes to use as it came (MCP).
	raw bool
	// extra lengthens the route's deadline (a long poll's wait).
	extra time.Duration
}

var acceptJSON = []string{"application/json"}

// readBuf is what one answer is read into (pooled): the buffer and the reader that
// bounds the body to MaxBody, one allocation for both, reused.
type readBuf struct {
	buf bytes.Buffer
	lr  io.LimitedReader
}

// call sends one call within its deadline and hands the judged answer to use while the
// pooled buffer holding it is live (use must copy what it keeps).
func (c *Client) call(parent context.Context, s callSpec, use func(status int, ct string, body []byte) error) error {
	start := time.Now()
	c.recycle()
	outcome, err := c.roundTrip(parent, s, use)
	c.observe(outcome, start)
	return err
}

func (c *Client) roundTrip(parent context.Context, s callSpec, use func(int, string, []byte) error) (string, error) {
	timeout := c.Deadline(s.route) + s.extra
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	var body io.Reader
	if s.body != nil {
		body = bytes.NewReader(s.body)
	}
	req, err := http.NewRequestWithContext(ctx, s.method, c.base+s.pathQuery, body)
	if err != nil {
		return obs.OutcomeUnavailable, fmt.Errorf("%w: %w", apierr.New(apierr.UpstreamUnavailable, "service %q: bad request path", c.id), err)
	}
	for k, v := range s.header {
		req.Header[k] = v
	}
	// The fixed headers are shared, ready-made values (transports only read them).
	if s.header == nil {
		req.Header["Accept"] = acceptJSON
		if s.body != nil {
			req.Header["Content-Type"] = acceptJSON
		}
	}
	if c.sh.tokenV != nil {
		req.Header[HeaderInternalToken] = c.sh.tokenV // canonical form already
	}
	if idV := obs.RequestIDValues(parent); idV != nil {
		req.Header[HeaderRequestID] = idV // the incoming request's own value, read only
	}
	resp, err := c.do(ctx, req, s.idem)
	if err != nil {
		if resp != nil {
			_ = resp.Body.Close()
		}
		return c.failure(parent, ctx, s.route, timeout, err)
	}
	defer resp.Body.Close()

	rb := c.sh.bufs.Get().(*readBuf)
	buf := &rb.buf
	buf.Reset()
	defer func() {
		rb.lr.R = nil           // the body is not kept past this call
		if buf.Cap() <= 1<<20 { // keep the pool from holding on to rare huge pages
			c.sh.bufs.Put(rb)
		}
	}()
	if n := resp.ContentLength; n > 0 && n <= int64(c.sh.opt.MaxBody) {
		buf.Grow(int(n)) // one buffer of the declared size instead of doubling up to it
	}
	rb.lr = io.LimitedReader{R: resp.Body, N: int64(c.sh.opt.MaxBody) + 1}
	n, err := buf.ReadFrom(&rb.lr)
	if err != nil {
		return c.failure(parent, ctx, s.route, timeout, err)
	}
	if n > int64(c.sh.opt.MaxBody) {
		c.sh.opt.Logger.ErrorContext(parent, "upstream answer too large", "service", c.id, "route", s.route.String(), "limit", c.sh.opt.MaxBody)
		return obs.OutcomeServerError, fmt.Errorf("%w: %w", apierr.New(apierr.UpstreamUnavailable, "service %q answered more than %d bytes", c.id, c.sh.opt.MaxBody), ErrUnreachable)
	}
	ct := resp.Header.Get("Content-Type")
	if s.raw {
		return obs.UpstreamOutcome(resp.StatusCode, nil), use(resp.StatusCode, ct, buf.Bytes())
	}
	status, b, outcome, err := c.judge(parent, s.route, resp.StatusCode, ct, buf.Bytes())
	if err != nil {
		return outcome, err
	}
	if status != http.StatusOK {
		ct = jsonContentType
	}
	return outcome, use(status, ct, b)
}

// judge decides what of a service's answer the gateway accepts. Only what it expects
// passes (docs/security.md "What the gateway accepts from services"):
//
//   - 200 with a JSON body (application/json starting with { or [), or on the readings and
//     aggregate routes one of the answer formats (text/csv, application/x-ndjson,
//     application/geo+json);
//   - a 4xx in the {error, code} shape with a known code whose status matches: re-encoded,
//     so nothing but those two fields (and at most maxUpstreamMessage bytes of message)
//     reaches the client;
//   - 401 or 403: the service refused the gateway itself (a wrong internal token), 502
//     upstream_unavailable;
//   - a 5xx: 502 upstream_unavailable;
//   - anything else (HTML, a redirect, 204, another 2xx, an error without the shape, a JSON
//     type over a body that is not JSON): 502 upstream_bad_response.
//
// The log line of a refused answer has its status, content type and length, never its
// body: provider payload text and service internals stay out of the logs too.
func (c *Client) judge(parent context.Context, route Route, status int, ct string, body []byte) (int, []byte, string, error) {
	refuse := func(level slog.Level, msg, code, format string, args ...any) (int, []byte, string, error) {
		c.sh.opt.Logger.Log(parent, level, msg, "service", c.id, "route", route.String(), "status", status,
			"content_type", clipHeader(ct), "length", len(body))
		return 0, nil, obs.OutcomeServerError, fmt.Errorf("%w: %w", apierr.New(code, format, args...), ErrUnreachable)
	}
	switch {
	case status >= 500:
		return refuse(slog.LevelWarn, "upstream error", apierr.UpstreamUnavailable, "service %q failed to answer (HTTP %d)", c.id, status)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return refuse(slog.LevelError, "upstream refused the gateway (check INTERNAL_TOKEN on both sides)", apierr.UpstreamUnavailable,
			"service %q could not answer this request", c.id)
	case status >= 400:
		e, ok := upstreamError(status, ct, body)
		if !ok {
			// A 404 from a service that lacks the route, an error page: a gateway fault,
			// not the client's.
			return refuse(slog.LevelError, "upstream answered an unexpected error", apierr.UpstreamBadResponse,
				"service %q gave an answer the gateway does not pass on", c.id)
		}
		return status, e, obs.OutcomeOK, nil
	case status != http.StatusOK:
		return refuse(slog.LevelError, "upstream answered an unexpected status", apierr.UpstreamBadResponse,
			"service %q gave an answer the gateway does not pass on", c.id)
	}
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case err == nil && mt == "application/json" && looksJSON(body):
	case err == nil && (route == RouteReadings || route == RouteAggregate) && formatTypes[mt]:
	default:
		return refuse(slog.LevelError, "upstream answered an unexpected media type", apierr.UpstreamBadResponse,
			"service %q gave an answer the gateway does not pass on", c.id)
	}
	return status, body, obs.OutcomeOK, nil
}

// formatTypes are the answer formats a readings or aggregate answer may come in besides
// JSON.
var formatTypes = map[string]bool{"text/csv": true, "application/x-ndjson": true, "application/geo+json": true}

const jsonContentType = "application/json; charset=utf-8"

// maxUpstreamMessage bounds the message of a service's error passed on to the client.
const maxUpstreamMessage = 512

// looksJSON is a cheap check that a body declared JSON is a JSON object or array, not an
// HTML page under a JSON content type; the whole body is not parsed on this hot path.
func looksJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// upstreamError re-encodes a service's 4xx answer when it is the {error, code} shape with a
// known code of that status: only the two fields, the message clipped.
func upstreamError(status int, ct string, body []byte) ([]byte, bool) {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return nil, false
	}
	var e apierr.Error
	if err := json.Unmarshal(body, &e); err != nil || !apierr.Known(e.Code) || e.Status() != status || e.Message == "" {
		return nil, false
	}
	if len(e.Message) > maxUpstreamMessage {
		e.Message = strings.ToValidUTF8(e.Message[:maxUpstreamMessage], "") + "..."
	}
	b, err := json.Marshal(&e)
	return b, err == nil
}

// clipHeader bounds a header value written to the log.
func clipHeader(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}
