// Package h1pool is a synchronous HTTP/1.1 client transport: each call takes a kept-alive
// connection from a pool, writes the request and reads the answer on the caller's own
// goroutine. net/http's Transport gives every connection a read loop and a write loop
// goroutine and hands each request and answer across channels to them; on the gateway's
// hop to a service on the same network that hand-over was about a third of the hop's
// CPU (docs/speed.md). Parsing is net/http's own (Request.Write, http.ReadResponse); only
// the connection handling is here.
//
// The answer's body is read lazily from the connection, so a large answer streams: the
// connection goes back to the pool when the body has been read to its end (and only if
// both sides keep it alive), and a body closed before its end closes the connection.
// A context's deadline and cancellation bound the whole call, the body's reading included.
//
// Only plain http:// is spoken; anything else (https, HTTP/2) is for net/http's Transport.
package h1pool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Transport.
const (
	DefaultMaxIdlePerHost = 256
	DefaultIdleTimeout    = 90 * time.Second
	bufSize               = 8 << 10
)

// Transport is an http.RoundTripper over pooled HTTP/1.1 connections. The zero value
// dials with net.Dialer and keeps DefaultMaxIdlePerHost idle connections per host. It is
// safe for concurrent use.
type Transport struct {
	// DialContext opens a connection to addr (host:port); nil uses a net.Dialer with a
	// 2 s timeout.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxIdlePerHost bounds the idle connections kept per host (default
	// DefaultMaxIdlePerHost); a connection freed beyond it is closed.
	MaxIdlePerHost int
	// IdleTimeout is how long an idle connection may wait in the pool before it is
	// closed rather than reused (default DefaultIdleTimeout); it should be shorter than
	// the servers' own idle timeout.
	IdleTimeout time.Duration

	mu   sync.Mutex
	idle map[string][]*conn // by host:port, most recently used last
	// gen counts CloseIdleConnections: a connection of an older generation is closed when
	// it is freed instead of going back to the pool.
	gen atomic.Uint64
}

// conn is one kept-alive connection with its buffers.
type conn struct {
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	key    string
	gen    uint64
	idleAt time.Time
	reused bool
}

// longAgo is a deadline already passed: setting it makes a blocked read or write return.
var longAgo = time.Unix(1, 0)

// ErrScheme is returned for a request that is not plain http://.
var ErrScheme = errors.New("h1pool: only http:// is supported")

// RoundTrip sends req and returns its answer, the body still to be read. It closes
// req.Body. A call that failed on a reused connection before any byte of the answer came
// is sent once more on a new connection when that cannot run it twice: the request is a
// GET or HEAD, or writing it failed, or the server closed the connection without a word
// (it had timed out the idle connection as the request went out), with a body that can be
// sent again (GetBody). This is net/http's own rule for kept-alive connections.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, fmt.Errorf("%w: %q", ErrScheme, req.URL)
	}
	ctx := req.Context()
	key := req.URL.Host
	if req.URL.Port() == "" {
		key += ":80"
	}
	for {
		if err := ctx.Err(); err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, err
		}
		c, err := t.get(ctx, key)
		if err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, err
		}
		resp, retry, err := t.send(ctx, c, req)
		if err == nil {
			return resp, nil
		}
		if !retry {
			return nil, err
		}
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, err
			}
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, err
			}
			req = req.Clone(ctx) // the caller's request is not changed under it
			req.Body = body
		}
	}
}

// send writes req on c and reads the answer's head. retry reports a failure that may be
// tried again on a new connection (see RoundTrip).
func (t *Transport) send(ctx context.Context, c *conn, req *http.Request) (*http.Response, bool, error) {
	dl, _ := ctx.Deadline() // zero: none
	if err := c.nc.SetDeadline(dl); err != nil {
		c.nc.Close()
		return nil, c.reused, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(longAgo) })
	fail := func(err error, retry bool) (*http.Response, bool, error) {
		stop()
		c.nc.Close()
		if cerr := ctxErr(ctx, err); cerr != nil {
			return nil, false, fmt.Errorf("%w: %w", cerr, err)
		}
		return nil, retry, err
	}
	if err := req.Write(c.bw); err != nil {
		return fail(err, c.reused)
	}
	if err := c.bw.Flush(); err != nil {
		return fail(err, c.reused)
	}
	var resp *http.Response
	for {
		if _, err := c.br.Peek(1); err != nil {
			// Nothing of the answer came: a reused connection the server had closed.
			replay := req.Method == http.MethodGet || req.Method == http.MethodHead || errors.Is(err, io.EOF)
			return fail(err, c.reused && replay)
		}
		var err error
		resp, err = http.ReadResponse(c.br, req)
		if err != nil {
			return fail(err, false)
		}
		// 1xx answers (100 Continue, 103 Early Hints) come before the real one.
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	keep := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
	b := &body{t: t, c: c, stop: stop, keep: keep}
	if resp.Body == http.NoBody || resp.Body == nil {
		b.finish(true)
		resp.Body = http.NoBody
		return resp, false, nil
	}
	b.rc = resp.Body
	b.ctx = ctx
	resp.Body = b
	return resp, false, nil
}

// body is an answer's body on its connection: read to its end, the connection goes back
// to the pool; closed or failed before, the connection is closed.
type body struct {
	t    *Transport
	c    *conn
	rc   io.ReadCloser // net/http's body reader over c.br
	ctx  context.Context
	stop func() bool
	keep bool
	done atomic.Bool
	eof  atomic.Bool // the end was read: a read after it is io.EOF again
}

func (b *body) Read(p []byte) (int, error) {
	if b.done.Load() {
		if b.eof.Load() {
			return 0, io.EOF
		}
		return 0, errBodyDone
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.eof.Store(true)
		b.finish(true)
	case err != nil:
		b.finish(false)
		if cerr := ctxErr(b.ctx, err); cerr != nil {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
	}
	return n, err
}

// errBodyDone is a read after the body was closed or failed.
var errBodyDone = errors.New("h1pool: read on a closed response body")

// Close ends the answer. Before its end, the connection is closed rather than read to the
// end: an export the client gave up on is not drained.
func (b *body) Close() error {
	b.finish(false)
	return nil
}

// finish frees the connection once: to the pool when the answer was read whole on a
// kept-alive connection whose deadline never fired, otherwise closed.
func (b *body) finish(whole bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	if !b.stop() { // the context ended: the connection's deadline is in the past
		whole = false
	}
	if whole && b.keep && b.c.br.Buffered() == 0 {
		b.t.put(b.c)
		return
	}
	b.c.nc.Close()
}

// get takes the most recently used idle connection to key that has not waited past
// IdleTimeout, or dials a new one.
func (t *Transport) get(ctx context.Context, key string) (*conn, error) {
	timeout := t.IdleTimeout
	if timeout <= 0 {
		timeout = DefaultIdleTimeout
	}
	now := time.Now()
	var stale []*conn
	t.mu.Lock()
	list := t.idle[key]
	var c *conn
	for len(list) > 0 {
		last := list[len(list)-1]
		list[len(list)-1] = nil
		list = list[:len(list)-1]
		if now.Sub(last.idleAt) < timeout {
			c = last
			break
		}
		stale = append(stale, last)
	}
	if t.idle != nil {
		t.idle[key] = list
	}
	t.mu.Unlock()
	for _, s := range stale {
		s.nc.Close()
	}
	if c != nil {
		c.reused = true
		return c, nil
	}
	dial := t.DialContext
	if dial == nil {
		d := net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	nc, err := dial(ctx, "tcp", key)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, br: bufio.NewReaderSize(nc, bufSize), bw: bufio.NewWriterSize(nc, bufSize), key: key, gen: t.gen.Load()}, nil
}

// put returns a connection whose answer was read whole to the pool.
func (t *Transport) put(c *conn) {
	max := t.MaxIdlePerHost
	if max <= 0 {
		max = DefaultMaxIdlePerHost
	}
	c.idleAt = time.Now()
	t.mu.Lock()
	if c.gen != t.gen.Load() || len(t.idle[c.key]) >= max {
		t.mu.Unlock()
		c.nc.Close()
		return
	}
	if t.idle == nil {
		t.idle = make(map[string][]*conn)
	}
	t.idle[c.key] = append(t.idle[c.key], c)
	t.mu.Unlock()
}

// CloseIdleConnections closes the idle connections; those in use are closed when their
// answer ends instead of going back to the pool.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	t.gen.Add(1)
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.nc.Close()
		}
	}
}

// Idle is the number of idle connections in the pool (for tests and metrics).
func (t *Transport) Idle() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, list := range t.idle {
		n += len(list)
	}
	return n
}

// ctxErr is the context's error behind a failed read or write: its own once it is done,
// and DeadlineExceeded for the connection's deadline (the context's) that fired a moment
// before the context's timer did.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if dl, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}
