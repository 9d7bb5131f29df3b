package h1pool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// server is a real net/http server that counts the connections it accepted.
type server struct {
	*httptest.Server
	conns atomic.Int64
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func get(t *testing.T, tr http.RoundTripper, ctx context.Context, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", url, err)
	}
	return resp, b
}

// A hundred calls one after the other share one kept-alive connection.
func TestKeepAliveReuse(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "answer to %s", r.URL.Path)
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	for i := range 100 {
		p := "/n/" + strconv.Itoa(i)
		resp, b := get(t, tr, context.Background(), s.URL+p)
		if resp.StatusCode != 200 || string(b) != "answer to "+p {
			t.Fatalf("call %d: %d %q", i, resp.StatusCode, b)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("server accepted %d connections for 100 sequential calls, want 1", n)
	}
	if n := tr.Idle(); n != 1 {
		t.Fatalf("pool holds %d idle connections, want 1", n)
	}
	tr.CloseIdleConnections()
	if n := tr.Idle(); n != 0 {
		t.Fatalf("pool holds %d idle connections after CloseIdleConnections", n)
	}
	get(t, tr, context.Background(), s.URL+"/again")
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("after CloseIdleConnections the next call dialed %d connections in all, want 2", n)
	}
}

// Sized (Content-Length) and chunked answers of many sizes are read whole, and both keep
// the connection.
func TestChunkedAndSized(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		body := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		if r.URL.Query().Get("mode") == "sized" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
			_, _ = w.Write(body)
			return
		}
		for len(body) > 0 { // flushed pieces: chunked transfer encoding
			k := min(len(body), 1000)
			_, _ = w.Write(body[:k])
			w.(http.Flusher).Flush()
			body = body[k:]
		}
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	for _, mode := range []string{"sized", "chunked"} {
		for _, n := range []int{0, 1, 100, 4095, 4096, 8193, 65536, 1 << 20} {
			resp, b := get(t, tr, context.Background(), fmt.Sprintf("%s/?mode=%s&n=%d", s.URL, mode, n))
			chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
			if want := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]; !bytes.Equal(b, want) {
				t.Fatalf("%s %d: got %d bytes", mode, n, len(b))
			}
			if mode == "chunked" && n > 1000 && !chunked {
				t.Fatalf("%s %d: answer was not chunked (%v)", mode, n, resp.TransferEncoding)
			}
			if mode == "sized" && resp.ContentLength != int64(n) {
				t.Fatalf("%s %d: Content-Length %d", mode, n, resp.ContentLength)
			}
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("server accepted %d connections, want 1 (every answer kept it)", n)
	}
}

// A service that dies in the middle of an answer: the read fails (never a short body
// taken as whole), the connection is not pooled, and the next call works on a new one.
func TestServiceClosesMidAnswer(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cut" {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + string(bytes.Repeat([]byte("x"), 100)))
			_ = buf.Flush()
			conn.Close()
			return
		}
		if r.URL.Path == "/cutchunked" {
			w.Write(bytes.Repeat([]byte("y"), 100))
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
			return
		}
		_, _ = io.WriteString(w, "fine")
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	for _, p := range []string{"/cut", "/cutchunked"} {
		req, _ := http.NewRequest(http.MethodGet, s.URL+p, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: head: %v", p, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Fatalf("%s: a cut answer read as whole (%d bytes)", p, len(b))
		}
		if len(b) != 100 {
			t.Fatalf("%s: read %d bytes before the cut, want 100", p, len(b))
		}
		if tr.Idle() != 0 {
			t.Fatalf("%s: the cut connection went back to the pool", p)
		}
		if _, b := get(t, tr, context.Background(), s.URL+"/ok"); string(b) != "fine" {
			t.Fatalf("%s: next call got %q", p, b)
		}
		tr.CloseIdleConnections()
	}
}

// The service closed a kept-alive connection while it sat idle in the pool (a restart,
// its idle timeout): the next call finds it dead and is sent again on a new connection.
func TestStaleIdleConnection(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Method)
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	get(t, tr, context.Background(), s.URL)
	s.CloseClientConnections() // closes the idle connection on the server's side
	if _, b := get(t, tr, context.Background(), s.URL); string(b) != "GET" {
		t.Fatalf("after the server closed the idle connection: %q", b)
	}
	// A POST with a body that can be sent again (GetBody) is sent again too when the
	// server closed without a word.
	s.CloseClientConnections()
	req, _ := http.NewRequest(http.MethodPost, s.URL, bytes.NewReader([]byte("payload")))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("POST on a stale connection: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "POST" {
		t.Fatalf("POST: %q", b)
	}
	if n := s.conns.Load(); n != 3 {
		t.Fatalf("server accepted %d connections, want 3", n)
	}
}

// A refused dial is an error at once (the caller's retry policy decides what follows),
// never a hang; the transport then works against a live address.
func TestRefusedDial(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	tr := &Transport{}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	_, err = tr.RoundTrip(req)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("dial to a closed port: %v, want a dial *net.OpError", err)
	}
}

// A slow reader gets a large answer whole, a few bytes at a time, and the connection goes
// back to the pool at its end; a body closed before its end closes the connection instead
// of draining it.
func TestSlowReaderAndEarlyClose(t *testing.T) {
	const size = 4 << 20
	done := make(chan struct{}, 4)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		chunk := bytes.Repeat([]byte{'z'}, 64<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return // the client went away
			}
		}
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	var total int
	p := make([]byte, 997)
	for i := 0; ; i++ {
		n, err := resp.Body.Read(p)
		total += n
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", total, err)
		}
		if i%512 == 0 {
			time.Sleep(time.Millisecond) // the server's writes back up meanwhile
		}
	}
	resp.Body.Close()
	if total != size {
		t.Fatalf("slow reader got %d bytes, want %d", total, size)
	}
	if tr.Idle() != 1 {
		t.Fatalf("the connection of a whole answer is not pooled (%d idle)", tr.Idle())
	}
	<-done

	req, _ = http.NewRequest(http.MethodGet, s.URL, nil)
	resp, err = tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, p); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // 4 MiB left unread: the connection is closed, not drained
	<-done            // the server's write fails: it saw the connection close
	if tr.Idle() != 0 {
		t.Fatalf("a body closed early left its connection in the pool")
	}
	if _, err := resp.Body.Read(p); err == nil {
		t.Fatal("read after Close succeeded")
	}
}

// The context bounds the call and the reading of its body: a stalled service ends in the
// context's error, not a hang.
func TestDeadlineAndCancel(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			_, _ = io.WriteString(w, "start")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	tr := &Transport{}
	defer tr.CloseIdleConnections()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/head", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled head: %v, want DeadlineExceeded", err)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx2, http.MethodGet, s.URL+"/body", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, cancel2)
	_, err = io.ReadAll(resp.Body)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stalled body after cancel: %v, want Canceled", err)
	}
	resp.Body.Close()
	if tr.Idle() != 0 {
		t.Fatal("a canceled call's connection went back to the pool")
	}
}

// Many callers at once, each answer of its own size and kind: nobody ever reads another
// caller's answer, and the pool never grows past the callers.
func TestConcurrentCallers(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		body := bytes.Repeat([]byte(id+";"), n)
		if r.URL.Query().Get("chunked") == "1" {
			half := len(body) / 2
			_, _ = w.Write(body[:half])
			w.(http.Flusher).Flush()
			_, _ = w.Write(body[half:])
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})
	tr := &Transport{MaxIdlePerHost: 4}
	defer tr.CloseIdleConnections()
	const callers, calls = 8, 150
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for g := range callers {
		wg.Go(func() {
			for i := range calls {
				id := fmt.Sprintf("g%d-%d", g, i)
				n := (g*calls+i)%700 + 1
				url := fmt.Sprintf("%s/?id=%s&n=%d&chunked=%d", s.URL, id, n, i%2)
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				if want := bytes.Repeat([]byte(id+";"), n); !bytes.Equal(b, want) {
					errs <- fmt.Errorf("%s got another answer (%d bytes, starts %q)", id, len(b), b[:min(20, len(b))])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := tr.Idle(); n > 4 {
		t.Fatalf("%d idle connections, MaxIdlePerHost is 4", n)
	}
}

// Only plain http:// is spoken.
func TestScheme(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "https://example.invalid/", nil)
	if _, err := (&Transport{}).RoundTrip(req); !errors.Is(err, ErrScheme) {
		t.Fatalf("https: %v, want ErrScheme", err)
	}
}
