package httpserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// start serves h with cfg on a real loopback listener; cancel begins the shutdown and wait
// returns what Serve returned (waiting at most 10 s).
func start(t *testing.T, cfg Config, h func(s *Server) http.Handler) (s *Server, base string, cancel context.CancelFunc, wait func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s = New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ctx, ln, h(s)) }()
	wait = sync.OnceValue(func() error {
		select {
		case err := <-errc:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("Serve did not return within 10s")
		}
	})
	t.Cleanup(func() {
		cancel()
		if err := wait(); err != nil && strings.Contains(err.Error(), "did not return") {
			t.Error(err)
		}
	})
	return s, "http://" + ln.Addr().String(), cancel, wait
}

// returned reports whether Serve has returned within d, and what it returned.
func returned(errc <-chan error, d time.Duration) (bool, error) {
	select {
	case err := <-errc:
		return true, err
	case <-time.After(d):
		return false, nil
	}
}

// fresh is a client that opens a new connection for every request, so each request says
// whether the listener still accepts.
func fresh() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

func TestInFlightRequestIsAnsweredOnShutdown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	_, base, cancel, wait := start(t, Config{ShutdownTimeout: 5 * time.Second}, func(*Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-release
			if err := r.Context().Err(); err != nil {
				t.Errorf("request context cancelled by the shutdown: %v", err)
			}
			_, _ = io.WriteString(w, "finished")
		})
	})
	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := fresh().Get(base + "/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{string(b), err}
	}()
	<-entered
	cancel()
	errc := make(chan error, 1)
	go func() { errc <- wait() }()
	if ok, err := returned(errc, 300*time.Millisecond); ok {
		t.Fatalf("Serve returned (%v) with a request in flight", err)
	}
	close(release)
	if r := <-got; r.err != nil || r.body != "finished" {
		t.Fatalf("in-flight request: body %q, err %v; want it answered", r.body, r.err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Serve after a clean drain: %v", err)
	}
}

func TestReadinessGoesFalseBeforeTheListenerCloses(t *testing.T) {
	const delay = 400 * time.Millisecond
	var shutdownHooks atomic.Int32
	s, base, cancel, wait := start(t, Config{ShutdownDelay: delay, ShutdownTimeout: 5 * time.Second,
		OnShutdown: []func(){func() { shutdownHooks.Add(1) }}}, func(s *Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !s.Ready() {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
	})
	c := fresh()
	resp, err := c.Get(base + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz before shutdown: %v %v", resp, err)
	}
	resp.Body.Close()

	began := time.Now()
	cancel()
	select {
	case <-s.Stopping():
	case <-time.After(2 * time.Second):
		t.Fatal("Stopping not closed after the context ended")
	}
	// A new connection is still accepted during the delay, and readiness says 503 on it.
	resp, err = c.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("readyz during the shutdown delay: %v (the listener closed before readiness could say so)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz during the shutdown delay = %d, want 503", resp.StatusCode)
	}
	if n := shutdownHooks.Load(); n != 0 {
		t.Fatalf("OnShutdown ran %d times before the delay was over", n)
	}
	if err := wait(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if waited := time.Since(began); waited < delay {
		t.Fatalf("Serve returned after %s, before the %s delay", waited, delay)
	}
	// http.Server runs the hooks on their own goroutines.
	for deadline := time.Now().Add(2 * time.Second); shutdownHooks.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := shutdownHooks.Load(); n != 1 {
		t.Fatalf("OnShutdown ran %d times, want 1", n)
	}
	if _, err := c.Get(base + "/readyz"); err == nil {
		t.Fatal("the listener still accepts after Serve returned")
	}
}

func TestRequestsStillRunningAtTheGracePeriodsEndAreCutWithAnError(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	_, base, cancel, wait := start(t, Config{ShutdownTimeout: 200 * time.Millisecond}, func(*Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
	})
	go func() {
		if resp, err := fresh().Get(base + "/stuck"); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	cancel()
	if err := wait(); err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not finish within 200ms") {
		t.Fatalf("Serve = %v, want the grace period named and context.DeadlineExceeded", err)
	}
}

func TestServingErrorIsReturnedAndStops(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // Serve's Accept fails at once
	s := New(Config{ShutdownDelay: time.Hour, ShutdownTimeout: time.Second})
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(context.Background(), ln, http.NotFoundHandler()) }()
	ok, err := returned(errc, 5*time.Second)
	if !ok {
		t.Fatal("Serve did not return the serving error (waited out the shutdown delay?)")
	}
	if err == nil || !strings.HasPrefix(err.Error(), "serve: ") {
		t.Fatalf("Serve on a closed listener = %v, want a serve error", err)
	}
	if s.Ready() {
		t.Fatal("Ready after serving failed")
	}
}

func TestTheSharedLimitsAreSet(t *testing.T) {
	conn := func(ctx context.Context, _ net.Conn) context.Context { return ctx }
	srv := New(Config{ConnContext: conn}).httpServer(http.NotFoundHandler())
	if srv.ReadHeaderTimeout != ReadHeaderTimeout || srv.ReadTimeout != ReadTimeout || srv.WriteTimeout != WriteTimeout ||
		srv.IdleTimeout != IdleTimeout || srv.MaxHeaderBytes != MaxHeaderBytes || srv.ErrorLog == nil || srv.ConnContext == nil {
		t.Fatalf("server limits: header %s read %s write %s idle %s max header %d, error log %v, conn context set %v",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.MaxHeaderBytes, srv.ErrorLog, srv.ConnContext != nil)
	}
	for _, d := range []time.Duration{ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout} {
		if d <= 0 {
			t.Fatalf("a zero timeout means none: %s", d)
		}
	}
}

// A client that sends its header slower than ReadHeaderTimeout is cut off: the timeout is
// really in force on a served connection, not only set.
func TestSlowHeaderIsCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out ReadHeaderTimeout")
	}
	_, base, _, _ := start(t, Config{ShutdownTimeout: time.Second}, func(*Server) http.Handler { return http.NotFoundHandler() })
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n"); err != nil { // never the blank line
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(ReadHeaderTimeout + 5*time.Second))
	began := time.Now()
	_, err = io.ReadAll(c)
	if took := time.Since(began); err != nil || took < ReadHeaderTimeout-time.Second {
		t.Fatalf("connection with an unfinished header closed after %s (err %v), want about %s", took, err, ReadHeaderTimeout)
	}
}

// TestLocalOnly: a server on a loopback listener answers requests for localhost names
// only, from pages of localhost only (DNS rebinding: a page of evil.example whose name
// points at 127.0.0.1 must not reach it); one listening elsewhere answers any name.
func TestLocalOnly(t *testing.T) {
	t.Parallel()
	ok := func(*Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	}
	_, base, _, _ := start(t, Config{}, ok)
	for _, tt := range []struct {
		host, origin string
		want         int
	}{
		{"", "", 200}, // the listener's own address
		{"localhost:8080", "", 200},
		{"api.localhost", "http://app.localhost:3000", 200},
		{"[::1]:8080", "http://127.0.0.1:8080", 200},
		{"127.0.0.1", "null", 200},
		{"evil.example.com", "http://evil.example.com", 403},
		{"evil.example.com", "", 403},
		{"localhost:8080", "http://evil.example.com", 403},
		{"127.0.0.1.evil.example", "", 403},
		{"localhost.evil.example", "", 403},
	} {
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		if tt.host != "" {
			req.Host = tt.host
		}
		if tt.origin != "" {
			req.Header.Set("Origin", tt.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want || tt.want == 403 && !strings.Contains(string(body), "DNS rebinding") {
			t.Errorf("Host %q, Origin %q: %d %s, want %d", tt.host, tt.origin, resp.StatusCode, body, tt.want)
		}
	}

	// Not on loopback: any name is answered (the keys and CORS guard it).
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skipf("no wildcard listener here: %v", err)
	}
	s := New(Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Serve(ctx, ln, ok(s)) }()
	req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/", nil)
	req.Host = "sensorgate.example.org"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("wildcard listener, Host sensorgate.example.org: %d, want 200", resp.StatusCode)
	}
}
