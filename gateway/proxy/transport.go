package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"time"
)

// connTransport is a small HTTP/1.1 client transport for GETs to one service over plain
// HTTP on the internal network. http.Transport runs two goroutines per connection and
// hands every request and response between them; here the calling goroutine writes the
// request and reads the response on a pooled keep-alive connection itself, which saves
// those hand-offs (a fifth of the gateway's CPU on an uncached readings call). Anything
// else (a body, another method, HTTPS) goes to the fallback http.Transport. It is a plain
// RoundTripper: Upstreams.do retries over it with go-retryablehttp's policy and backoff.
type connTransport struct {
	addr     string // host:port
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	fallback http.RoundTripper
	maxIdle  int
	idleFor  time.Duration

	mu   sync.Mutex
	idle []*pconn // most recently used last
}

type pconn struct {
	c      net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	usedAt time.Time
	reused bool
}

var aLongTimeAgo = time.Unix(1, 0)

func (t *connTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || (req.Body != nil && req.Body != http.NoBody) || req.URL.Scheme != "http" || canonicalAddr(req.URL) != t.addr {
		return t.fallback.RoundTrip(req)
	}
	ctx := req.Context()
	for attempt := 0; ; attempt++ {
		pc, err := t.conn(ctx)
		if err != nil {
			return nil, err
		}
		resp, started, err := t.roundTrip(ctx, pc, req)
		if err == nil {
			return resp, nil
		}
		_ = pc.c.Close()
		// A connection unblocked by the context's deadline failed because of it, not
		// because it broke.
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			return nil, fmt.Errorf("GET %s: %w (%w)", req.URL.Path, context.DeadlineExceeded, err)
		}
		// A kept-alive connection the service closed while idle fails before any byte of
		// an answer: that is not an answer, so try once more on a new connection (as
		// http.Transport does for idempotent requests).
		if pc.reused && !started && attempt == 0 && ctx.Err() == nil {
			continue
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("GET %s: %w (%w)", req.URL.Path, ctx.Err(), err)
		}
		return nil, err
	}
}

// conn returns an idle connection or dials one.
func (t *connTransport) conn(ctx context.Context) (*pconn, error) {
	now := time.Now()
	t.mu.Lock()
	for len(t.idle) > 0 {
		pc := t.idle[len(t.idle)-1]
		t.idle = t.idle[:len(t.idle)-1]
		if now.Sub(pc.usedAt) < t.idleFor {
			t.mu.Unlock()
			pc.reused = true
			return pc, nil
		}
		_ = pc.c.Close()
	}
	t.mu.Unlock()
	c, err := t.dial(ctx, "tcp", t.addr)
	if err != nil {
		return nil, err
	}
	return &pconn{c: c, br: bufio.NewReaderSize(c, 8<<10), bw: bufio.NewWriterSize(c, 4<<10)}, nil
}

func (t *connTransport) put(pc *pconn) {
	pc.usedAt = time.Now()
	t.mu.Lock()
	if len(t.idle) < t.maxIdle {
		t.idle = append(t.idle, pc)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	_ = pc.c.Close()
}

// CloseIdleConnections closes the pool (Upstreams.do, when a service keeps failing).
func (t *connTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, pc := range idle {
		_ = pc.c.Close()
	}
	if ci, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// roundTrip writes req and reads the response head; started says whether any byte of an
// answer arrived.
func (t *connTransport) roundTrip(ctx context.Context, pc *pconn, req *http.Request) (*http.Response, bool, error) {
	// The context's end, by its deadline or by cancellation, unblocks the write or read by
	// moving the connection's deadline into the past. The connection itself keeps no
	// deadline: setting one per call and clearing it after cost two timer updates (and
	// clock reads) per upstream call, and the context's timer already fires at the same
	// moment.
	stop := context.AfterFunc(ctx, func() { _ = pc.c.SetDeadline(aLongTimeAgo) })
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	bw := pc.bw
	_, _ = bw.WriteString("GET ")
	_, _ = bw.WriteString(req.URL.RequestURI())
	_, _ = bw.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = bw.WriteString(host)
	_, _ = bw.WriteString("\r\n")
	writeHeader(bw, req.Header)
	_, _ = bw.WriteString("\r\n")
	if err := bw.Flush(); err != nil {
		stop()
		return nil, false, err
	}
	if _, err := pc.br.Peek(1); err != nil {
		stop()
		return nil, false, err
	}
	resp, err := http.ReadResponse(pc.br, req)
	if err != nil {
		stop()
		return nil, true, err
	}
	resp.Body = &pconnBody{rc: resp.Body, t: t, pc: pc, stop: stop, keep: !resp.Close}
	return resp, true, nil
}

// writeHeader writes h as http.Header.Write does, but in map order: Header.Write sorts the
// keys (a pooled sorter and a sort per request) for reproducible output, which an upstream
// call does not need. As Header.Write does, it replaces CR and LF in values with spaces, so
// that no value can start a header of its own.
func writeHeader(bw *bufio.Writer, h http.Header) {
	for k, vs := range h {
		for _, v := range vs {
			_, _ = bw.WriteString(k)
			_, _ = bw.WriteString(": ")
			if strings.ContainsAny(v, "\r\n") {
				v = headerNewlines.Replace(v)
			}
			_, _ = bw.WriteString(textproto.TrimString(v))
			_, _ = bw.WriteString("\r\n")
		}
	}
}

var headerNewlines = strings.NewReplacer("\n", " ", "\r", " ")

// pconnBody gives the connection back to the pool once the body was read to the end and
// closed, and closes it otherwise.
type pconnBody struct {
	rc   io.ReadCloser
	t    *connTransport
	pc   *pconn
	stop func() bool
	keep bool
	err  error
	done bool
}

func (b *pconnBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.err = err
	}
	return n, err
}

func (b *pconnBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	err := b.rc.Close() // reads what is left of the body, so the connection can carry the next request
	cancelled := !b.stop()
	if b.keep && err == nil && b.err == nil && !cancelled {
		b.t.put(b.pc)
		return nil
	}
	_ = b.pc.c.Close()
	return err
}
