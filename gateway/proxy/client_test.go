package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// slowBackend answers GET /v1/slow after delay and reports, per request, whether the
// gateway cancelled it before the answer.
type slowBackend struct {
	srv       *httptest.Server
	started   atomic.Int64
	cancelled atomic.Int64
	answered  atomic.Int64
}

func newSlowBackend(t *testing.T, delay time.Duration) *slowBackend {
	b := &slowBackend{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.started.Add(1)
		select {
		case <-time.After(delay):
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok":true}`)
			b.answered.Add(1)
		case <-r.Context().Done():
			b.cancelled.Add(1)
		}
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClientLeavingCancelsUnlessCoalesced: a caller that goes away cancels its upstream
// call at once when it was alone; when another caller was coalesced with it, the call runs
// on and the other caller gets the answer.
func TestClientLeavingCancelsUnlessCoalesced(t *testing.T) {
	t.Parallel()
	b := newSlowBackend(t, 400*time.Millisecond)
	up, err := New(Options{Services: map[string]string{"s": b.srv.URL}, Timeouts: Timeouts{Latest: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	cache, err := NewCache(CacheOptions{TTL: 0, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(ctx context.Context) (*Response, error) { return up.Get(ctx, "s", RouteLatest, "/v1/slow") }

	t.Run("alone", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		before := b.started.Load()
		go func() { _, err := cache.Do(ctx, "alone", fetch); done <- err }()
		waitFor(t, "the call to reach the service", func() bool { return b.started.Load() > before })
		start := time.Now()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("caller got %v, want its context's error", err)
		}
		// The service sees the cancellation long before its 400 ms answer would come.
		waitFor(t, "the service to see the cancellation", func() bool { return b.cancelled.Load() >= 1 })
		if b.answered.Load() != 0 {
			t.Errorf("the service answered a call whose only caller had gone")
		}
		t.Logf("cancellation reached the service %s after the caller left", time.Since(start).Round(time.Millisecond))
	})

	t.Run("coalesced", func(t *testing.T) {
		cancelledBefore, answeredBefore := b.cancelled.Load(), b.answered.Load()
		ctxA, cancelA := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var errA, errB error
		var respB *Response
		wg.Add(2)
		go func() { defer wg.Done(); _, errA = cache.Do(ctxA, "shared", fetch) }()
		waitFor(t, "the first call", func() bool { cache.mu.Lock(); defer cache.mu.Unlock(); return cache.calls["shared"] != nil })
		go func() { defer wg.Done(); respB, errB = cache.Do(context.Background(), "shared", fetch) }()
		waitFor(t, "the second caller to join", func() bool {
			cache.mu.Lock()
			defer cache.mu.Unlock()
			cl := cache.calls["shared"]
			return cl != nil && cl.waiters == 2
		})
		cancelA()
		wg.Wait()
		if !errors.Is(errA, context.Canceled) {
			t.Errorf("the caller that left got %v", errA)
		}
		if errB != nil || respB == nil || respB.Status != 200 || string(respB.Body) != `{"ok":true}` {
			t.Fatalf("the coalesced caller got %v %+v", errB, respB)
		}
		if b.cancelled.Load() != cancelledBefore || b.answered.Load() != answeredBefore+1 {
			t.Errorf("the shared call was cancelled (%d cancelled, %d answered since)", b.cancelled.Load()-cancelledBefore, b.answered.Load()-answeredBefore)
		}
	})
}

// TestOneClientRetriesOnlyIdempotentCalls: the client that the sync, the prober and MCP
// forwarding use goes over the service's pool, retries a GET after a 503 and never sends a
// POST twice.
func TestOneClientRetriesOnlyIdempotentCalls(t *testing.T) {
	t.Parallel()
	var gets, posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := gets.Load()
		if r.Method == http.MethodPost {
			n = posts.Add(1)
		} else {
			n = gets.Add(1)
		}
		if r.Header.Get(contract.HeaderRequestID) != "rid-1" {
			t.Errorf("request id not passed on: %q", r.Header.Get(contract.HeaderRequestID))
		}
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	up, err := New(Options{Services: map[string]string{"s": srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	c := up.Client(2 * time.Second)
	ctx := obs.WithRequestID(context.Background(), "rid-1")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/health", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || gets.Load() != 2 {
		t.Errorf("GET: %d after %d attempts, want 200 after 2", resp.StatusCode, gets.Load())
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{}`))
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 503 || posts.Load() != 1 {
		t.Errorf("POST: %d after %d attempts, want the 503 after 1", resp.StatusCode, posts.Load())
	}
}

// TestStreamPassesEventsThrough: an event stream of a service reaches the client event by
// event (the service writes the next only after the client has read the previous one),
// with its Content-Type and without the server's write deadline.
func TestStreamPassesEventsThrough(t *testing.T) {
	t.Parallel()
	read := make(chan struct{})
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-read:
			case <-time.After(10 * time.Second):
				return
			}
		}
	}))
	defer svc.Close()
	up, err := New(Options{Services: map[string]string{"s": svc.URL}})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := up.Stream(r.Context(), "s", "/v1/stream", w); err != nil {
			t.Errorf("stream: %v", err)
		}
	}))
	defer gw.Close()
	resp, err := http.Get(gw.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("data: %d\n", i) {
			t.Fatalf("event %d: %q %v", i, line, err)
		}
		_, _ = br.ReadString('\n')
		read <- struct{}{}
	}
}

// TestStreamsNeverMix runs many streamed calls at once through the pooled copy buffers
// (run under -race in make test): each client receives exactly its own answer, larger than
// one buffer, byte for byte.
func TestStreamsNeverMix(t *testing.T) {
	t.Parallel()
	body := func(id string) string { return strings.Repeat(id+",", 40<<10/(len(id)+1)) }
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		b := body(r.URL.Query().Get("id"))
		for len(b) > 0 { // written and flushed in pieces, so copies interleave
			n := min(len(b), 5000)
			_, _ = io.WriteString(w, b[:n])
			w.(http.Flusher).Flush()
			b = b[n:]
		}
	}))
	defer svc.Close()
	up, err := New(Options{Services: map[string]string{"s": svc.URL}})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := up.Stream(r.Context(), "s", "/v1/export?id="+r.URL.Query().Get("id"), w); err != nil {
			t.Errorf("stream: %v", err)
		}
	}))
	defer gw.Close()
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("client%02d", i)
			resp, err := http.Get(gw.URL + "?id=" + id)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil || string(got) != body(id) {
				t.Errorf("%s: %d bytes (%v), not its own answer of %d bytes", id, len(got), err, len(body(id)))
			}
		}()
	}
	wg.Wait()
}
