package readings

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/pkg/contract"
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
	up, err := contract.NewClient("s", b.srv.URL, contract.Options{Timeouts: contract.Timeouts{Latest: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	cache, err := NewCache(CacheOptions{TTL: 0, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(ctx context.Context) (*contract.Response, error) {
		return up.Get(ctx, contract.RouteLatest, "/v1/slow")
	}

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
		var respB *contract.Response
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
