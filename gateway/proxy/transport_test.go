package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// newConnTransport returns the transport Upstreams uses for srv, and a counter of the
// connections srv accepted.
func newConnTransport(t *testing.T, h http.Handler) (*connTransport, *httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	std := &http.Transport{}
	ct := &connTransport{addr: canonicalAddr(u), dial: (&net.Dialer{}).DialContext, fallback: std, maxIdle: 4, idleFor: time.Minute}
	t.Cleanup(ct.CloseIdleConnections)
	return ct, srv, &conns
}

func TestConnTransport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		requests  int
		wantBody  string
		wantConns int64
	}{
		{"keep-alive reuses one connection", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "hello "+r.URL.RawQuery)
		}, 20, "hello q=1", 1},
		{"chunked body", func(w http.ResponseWriter, r *http.Request) {
			for range 3 {
				_, _ = io.WriteString(w, strings.Repeat("x", 5000))
				w.(http.Flusher).Flush()
			}
		}, 5, strings.Repeat("x", 15000), 1},
		{"Connection: close dials again", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, "bye")
		}, 3, "bye", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ct, srv, conns := newConnTransport(t, tt.handler)
			c := &http.Client{Transport: ct}
			for range tt.requests {
				resp, err := c.Get(srv.URL + "/x?q=1")
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || string(b) != tt.wantBody {
					t.Fatalf("body %.40q (%d bytes), %v; want %.40q", b, len(b), err, tt.wantBody)
				}
			}
			if n := conns.Load(); n != tt.wantConns {
				t.Errorf("%d connections for %d requests, want %d", n, tt.requests, tt.wantConns)
			}
		})
	}
}

func TestConnTransportUnreadBodyIsDrained(t *testing.T) {
	t.Parallel()
	ct, srv, conns := newConnTransport(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("y", 3000))
	}))
	c := &http.Client{Transport: ct}
	for range 3 {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 10)
		_, _ = resp.Body.Read(buf) // read part, then close
		_ = resp.Body.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1: a closed body is read to the end and its connection reused", n)
	}
}

func TestConnTransportCancelAndDeadline(t *testing.T) {
	t.Parallel()
	ct, srv, _ := newConnTransport(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	for _, withDeadline := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		if withDeadline {
			ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
		} else {
			time.AfterFunc(100*time.Millisecond, cancel)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		done := make(chan error, 1)
		go func() {
			_, err := ct.RoundTrip(req)
			done <- err
		}()
		select {
		case err := <-done:
			want := context.Canceled
			if withDeadline {
				want = context.DeadlineExceeded
			}
			if !errors.Is(err, want) {
				t.Errorf("deadline %v: err = %v, want %v", withDeadline, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("deadline %v: RoundTrip still blocked 10s after the context ended", withDeadline)
		}
		cancel()
	}
}

func TestConnTransportFallsBackForOtherRequests(t *testing.T) {
	t.Parallel()
	ct, srv, _ := newConnTransport(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Method+" "+string(b))
	}))
	c := &http.Client{Transport: ct}
	resp, err := c.Post(srv.URL, "text/plain", strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "POST body" {
		t.Errorf("POST through the fallback = %q", b)
	}
}

func TestWriteHeaderAsHeaderWrite(t *testing.T) {
	t.Parallel()
	h := http.Header{
		"Accept":           {"application/json"},
		"X-Request-Id":     {"abc"},
		"X-Internal-Token": {" tok \r\nX-Evil: 1"},
		"Traceparent":      {"00-1-2-01", "second"},
	}
	var want, got bytes.Buffer
	if err := h.Write(&want); err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(&got)
	writeHeader(bw, h)
	_ = bw.Flush()
	lines := func(b []byte) []string {
		l := strings.Split(strings.TrimSuffix(string(b), "\r\n"), "\r\n")
		slices.Sort(l)
		return l
	}
	if g, w := lines(got.Bytes()), lines(want.Bytes()); !slices.Equal(g, w) {
		t.Errorf("writeHeader wrote\n%q\nHeader.Write writes\n%q", g, w)
	}
	if strings.Contains(got.String(), "\r\nX-Evil") {
		t.Errorf("a value's newline started a header: %q", got.String())
	}
}
