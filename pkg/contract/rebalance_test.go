package contract

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// replicaSet is a service name resolving to the loopback addresses of its replicas (one
// HTTP server per address, all on one port, as replicas of a scaled service are), with
// the answers each replica served.
type replicaSet struct {
	mu    sync.Mutex
	addrs []string
	port  string
	calls map[string]*atomic.Int64
	srvs  map[string]*http.Server
}

func (r *replicaSet) LookupHost(_ context.Context, host string) ([]string, error) {
	if host != "ocean.internal" {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.addrs...), nil
}

// add starts a replica on ip and makes the name resolve to it too.
func (r *replicaSet) add(t *testing.T, ip string) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, r.port))
	if err != nil {
		t.Skipf("cannot listen on %s:%s (%v)", ip, r.port, err)
	}
	if r.port == "0" {
		_, r.port, _ = net.SplitHostPort(ln.Addr().String())
	}
	n := &atomic.Int64{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"readings":[]}`))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	r.mu.Lock()
	r.addrs = append(r.addrs, ip)
	r.calls[ip], r.srvs[ip] = n, srv
	r.mu.Unlock()
}

// remove stops a replica (its connections drop, as when its container is killed) and the
// name stops resolving to it.
func (r *replicaSet) remove(ip string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.srvs[ip].Close()
	for i, a := range r.addrs {
		if a == ip {
			r.addrs = append(r.addrs[:i], r.addrs[i+1:]...)
			break
		}
	}
}

func (r *replicaSet) counts() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int64{}
	for ip, n := range r.calls {
		out[ip] = n.Load()
	}
	return out
}

// callMany makes n readings calls from workers goroutines and fails on any error.
func callMany(t *testing.T, u *Client, workers, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	var next atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				if _, err := u.Get(context.Background(), RouteReadings, fmt.Sprintf("/v1/sensors/x/readings?limit=%d", i)); err != nil {
					errs <- err
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A gateway that called a one-replica service keeps calling it over kept-alive
// connections; after the service scales out, connection recycling and the rotating dialer
// bring the new replicas their share, and after a replica dies the others take every call
// without an error. Concurrent callers share the recycling (run under -race).
func TestScaleOutRebalancesAndFailsOver(t *testing.T) {
	rs := &replicaSet{port: "0", calls: map[string]*atomic.Int64{}, srvs: map[string]*http.Server{}}
	rs.add(t, "127.0.0.1")
	u, err := NewClient("ocean", "http://ocean.internal:"+rs.port, Options{RecycleEvery: 20 * time.Millisecond, Resolver: rs})
	if err != nil {
		t.Fatal(err)
	}
	defer u.CloseIdleConnections()
	callMany(t, u, 4, 40)

	rs.add(t, "127.0.0.2")
	rs.add(t, "127.0.0.3")
	before := rs.counts()
	callMany(t, u, 6, 300)
	after := rs.counts()
	for _, ip := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
		if got := after[ip] - before[ip]; got == 0 {
			t.Errorf("replica %s got no call after the scale-out (calls %v -> %v)", ip, before, after)
		}
	}

	rs.remove("127.0.0.2")
	before = rs.counts()
	callMany(t, u, 6, 100)
	after = rs.counts()
	if got := after["127.0.0.1"] + after["127.0.0.3"] - before["127.0.0.1"] - before["127.0.0.3"]; got != 100 {
		t.Errorf("after replica 2 died, replicas 1 and 3 served %d of 100 calls", got)
	}
}
