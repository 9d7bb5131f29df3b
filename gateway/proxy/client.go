package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// Client returns an *http.Client for the calls to services that do not go through Get: the
// catalog sync, the health prober, MCP forwarding and the MCP tools' readings. Every call
// the gateway makes to a service thus goes over that service's one pooled transport, with
// the request id (and a client span) passed on and, for an idempotent call without a body,
// the retry policy of Get within the call's deadline; a POST is sent once. timeout bounds
// each call (0: only the caller's context does; take it from Deadline).
func (u *Upstreams) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: routing{u},
		Timeout:   timeout,
		// The services never redirect; a redirect would be a misconfiguration to see, not to
		// follow to another host with the internal token.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// routing sends a request over the transport of the service its URL names.
type routing struct{ u *Upstreams }

func (t routing) RoundTrip(req *http.Request) (*http.Response, error) {
	s := t.u.byHost[req.URL.Host]
	if s == nil {
		s = t.u.other
	}
	return t.u.do(req.Context(), s, req)
}

// streamHeaders are the headers of a service's streamed answer passed to the client.
var streamHeaders = []string{"Content-Type", "Cache-Control", "Content-Disposition", "Link", "X-Total-Count", "Last-Modified", "Etag"}

// copyBufs are the buffers of Stream's copies.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// Stream calls GET pathQuery on the service and passes its answer to w as it arrives: the
// status and streamHeaders, then the body, each read flushed at once when the answer is an
// event stream or chunked (no Content-Length), so a client sees every event or row as the
// service writes it. RouteStream's deadline bounds the wait for the answer's headers, not
// the stream, which runs until the service ends it or ctx ends (the client left, or the
// gateway stops). A failure before anything was written is returned as *apierr.Error (502,
// 504) for the caller to render, as Get's are; a 5xx answer is such a failure. After the
// first byte, a failure can only cut the stream; it is returned for the log.
func (u *Upstreams) Stream(ctx context.Context, serviceID, pathQuery string, w http.ResponseWriter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, r, err := u.open(ctx, serviceID, pathQuery)
	if err != nil {
		return err
	}
	if r != nil {
		w.Header().Set("Content-Type", r.ContentType)
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(r.Status)
		_, _ = w.Write(r.Body)
		return nil
	}
	defer resp.Body.Close()
	for _, h := range streamHeaders {
		if v := resp.Header.Values(h); len(v) > 0 {
			w.Header()[h] = v
		}
	}
	flush := resp.ContentLength < 0 || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	rc := http.NewResponseController(w)
	if flush {
		// A stream outlives the server's write timeout: the service and ctx bound it.
		_ = rc.SetWriteDeadline(time.Time{})
	}
	w.WriteHeader(resp.StatusCode)
	if flush {
		_ = rc.Flush()
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr // the client left
			}
			if flush {
				if ferr := rc.Flush(); ferr != nil {
					return ferr
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// Open calls GET pathQuery on the service for an answer too large to hold (the bulk export)
// and returns its 200 open, for the caller to read as it arrives and close; ctx bounds it
// as Stream's does (a caller that goes away closes the call and the service stops its
// scan). Every other answer is an error: the service's own 4xx error as an *apierr.Error,
// anything else as Stream's failures are.
func (u *Upstreams) Open(ctx context.Context, serviceID, pathQuery string) (*http.Response, error) {
	resp, r, err := u.open(ctx, serviceID, pathQuery)
	if err != nil {
		return nil, err
	}
	if r != nil {
		var e apierr.Error
		if json.Unmarshal(r.Body, &e) != nil || e.Code == "" {
			return nil, apierr.New(apierr.UpstreamBadResponse, "service %q gave an answer the gateway does not pass on", serviceID)
		}
		return nil, &e
	}
	return resp, nil
}

// open sends a streamed call and waits, at most RouteStream's deadline, for its headers:
// a 200 comes back open; any other answer is judged as Get's are, into a Response to pass
// on (a service's own 4xx error) or an error.
func (u *Upstreams) open(ctx context.Context, serviceID, pathQuery string) (*http.Response, *Response, error) {
	s, ok := u.services[serviceID]
	if !ok {
		return nil, nil, apierr.New(apierr.UpstreamUnavailable, "service %q is not configured on this gateway", serviceID)
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	timeout := u.Deadline(RouteStream)
	headerTimer := time.AfterFunc(timeout, cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+pathQuery, nil)
	if err != nil {
		cancel()
		return nil, nil, apierr.New(apierr.UpstreamUnavailable, "service %q: bad request path", serviceID)
	}
	req.Header["Accept"] = []string{"text/event-stream, application/x-ndjson, text/csv, application/json"}
	if u.tokenV != nil {
		req.Header[contract.HeaderInternalToken] = u.tokenV
	}
	resp, err := u.do(ctx, s, req)
	if !headerTimer.Stop() { // the headers came too late, if at all
		cancel()
		if resp != nil {
			_ = resp.Body.Close()
		}
		u.observe(serviceID, obs.OutcomeTimeout, start)
		_, _, err = u.timedOut(ctx, s, RouteStream, timeout, err)
		return nil, nil, err
	}
	if err != nil {
		cancel()
		_, outcome, err := u.failure(ctx, ctx, s, RouteStream, timeout, err)
		u.observe(serviceID, outcome, start)
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		cancel()
		r, outcome, err := u.judge(ctx, s, RouteStream, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		u.observe(serviceID, outcome, start)
		return nil, r, err
	}
	u.observe(serviceID, obs.OutcomeOK, start)
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil, nil
}

// cancelOnClose releases an open call's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

func (u *Upstreams) observe(serviceID, outcome string, start time.Time) {
	if u.opt.Metrics != nil {
		u.opt.Metrics.ObserveUpstream(serviceID, outcome, time.Since(start))
	}
}
