package contract_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// fakeService speaks the internal contract for two stations and records what it was asked.
func fakeService(t *testing.T, token string) (*httptest.Server, *[]*http.Request) {
	t.Helper()
	var seen []*http.Request
	mux := http.NewServeMux()
	stations := []contract.Station{
		{ExternalID: "41002", Name: "South Hatteras", SensorType: "buoy", Status: "active", DataTypes: []string{"wave_height_m"}, ProviderSlug: "ndbc", FeedSlug: "ndbc-realtime"},
		{ExternalID: "TPLM2", Name: "Thomas Point", SensorType: "buoy", Status: "active", DataTypes: []string{"wind_speed_ms"}, ProviderSlug: "ndbc", FeedSlug: "ndbc-realtime"},
	}
	write := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /v1/meta", func(w http.ResponseWriter, r *http.Request) {
		write(w, contract.ServiceMeta{ID: "ocean", Name: "Ocean", Port: 8081, Status: "active", Version: "1.0.0",
			Providers: []contract.Provider{{Slug: "ndbc", Name: "NOAA NDBC"}}, Tools: []string{"ocean.latest_observation"}})
	})
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		write(w, contract.Health{ServiceID: "ocean", Status: contract.StatusDegraded, Store: contract.StoreHealth{Reachable: true}})
	})
	mux.HandleFunc("GET /v1/sensors", func(w http.ResponseWriter, r *http.Request) {
		list := stations
		if r.URL.Query().Get("updated_since") != "" {
			list = stations[1:]
		}
		write(w, contract.StationPage{Sensors: list, Pagination: contract.NewPagination(1, 100, len(list)), ServerTime: contract.Time{Time: time.Date(2026, 11, 21, 6, 50, 0, 0, time.UTC)}})
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Clone(context.Background()))
		if token != "" && r.Header.Get(contract.HeaderInternalToken) != token {
			apierr.Write(w, apierr.New(apierr.Forbidden, "send the shared token"))
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func newClient(t *testing.T, url string, opt contract.Options) *contract.Client {
	t.Helper()
	c, err := contract.NewClient("ocean", url, opt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientCalls(t *testing.T) {
	t.Parallel()
	srv, seen := fakeService(t, "s3cret")
	c := newClient(t, srv.URL+"/", contract.Options{Token: "s3cret"})
	ctx := context.Background()

	m, err := c.Meta(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "ocean" || m.Version != "1.0.0" || len(m.Providers) != 1 || m.Providers[0].Slug != "ndbc" {
		t.Fatalf("Meta = %+v", m)
	}
	h, err := c.Health(ctx)
	if err != nil || h.Status != contract.StatusDegraded || !h.Store.Reachable {
		t.Fatalf("Health = %+v, %v", h, err)
	}
	p, err := c.Sensors(ctx, time.Time{}, 1, 100)
	if err != nil || len(p.Sensors) != 2 || p.Pagination.Total != 2 || p.ServerTime.IsZero() {
		t.Fatalf("Sensors = %+v, %v", p, err)
	}
	since := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	p, err = c.Sensors(ctx, since, 2, 50)
	if err != nil || len(p.Sensors) != 1 || p.Sensors[0].ExternalID != "TPLM2" {
		t.Fatalf("Sensors since = %+v, %v", p, err)
	}
	last := (*seen)[len(*seen)-1]
	q := last.URL.Query()
	if q.Get("updated_since") != "2026-11-20T00:00:00.000Z" || q.Get("page") != "2" || q.Get("limit") != "50" || last.URL.Path != "/v1/sensors" {
		t.Fatalf("request = %s", last.URL)
	}
	for _, r := range *seen {
		if r.Header.Get(contract.HeaderInternalToken) != "s3cret" {
			t.Fatalf("%s sent without the token", r.URL)
		}
	}
}

func TestClientErrors(t *testing.T) {
	t.Parallel()
	srv, _ := fakeService(t, "s3cret")
	ctx := context.Background()

	// A service that refuses the gateway's token is the gateway's fault: 502, unreachable.
	_, err := newClient(t, srv.URL, contract.Options{Token: "wrong"}).Meta(ctx)
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Code != apierr.UpstreamUnavailable || !errors.Is(err, contract.ErrUnreachable) {
		t.Fatalf("wrong token: %v", err)
	}

	// A JSON error of the service comes back as a *ServiceError with its status.
	_, err = newClient(t, srv.URL, contract.Options{Token: "s3cret"}).Sensors(ctx, time.Time{}, -1, 10)
	var se *contract.ServiceError
	if err != nil && (!errors.As(err, &se) || errors.Is(err, contract.ErrUnreachable)) {
		t.Fatalf("service error: %v", err)
	}

	// A non-JSON error answer is upstream_unavailable, after the retries.
	var plainCalls atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainCalls.Add(1)
		http.Error(w, "upstream proxy exploded", http.StatusBadGateway)
	}))
	t.Cleanup(plain.Close)
	_, err = newClient(t, plain.URL, contract.Options{Timeouts: contract.Timeouts{Health: 5 * time.Second}}).Health(ctx)
	if !errors.As(err, &ae) || ae.Code != apierr.UpstreamUnavailable || strings.Contains(err.Error(), "exploded") || plainCalls.Load() != 1+contract.DefaultRetries {
		t.Fatalf("plain 502 (%d calls): %v", plainCalls.Load(), err)
	}

	// A 200 that is not JSON is refused as a bad response.
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html>hello</html>"))
	}))
	t.Cleanup(garbage.Close)
	_, err = newClient(t, garbage.URL, contract.Options{}).Sensors(ctx, time.Time{}, 1, 10)
	if !errors.As(err, &ae) || ae.Code != apierr.UpstreamBadResponse {
		t.Fatalf("garbage answer: %v", err)
	}

	// Nobody listening: ErrUnreachable.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = newClient(t, "http://"+addr, contract.Options{}).Meta(ctx)
	if !errors.Is(err, contract.ErrUnreachable) {
		t.Fatalf("closed port: %v", err)
	}

	// Too slow: ErrTimeout, from the client's timeout and from the caller's deadline.
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); slow.Close() })
	_, err = newClient(t, slow.URL, contract.Options{Timeouts: contract.Timeouts{Catalog: 50 * time.Millisecond}}).Meta(ctx)
	if !errors.Is(err, contract.ErrTimeout) {
		t.Fatalf("client timeout: %v", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = newClient(t, slow.URL, contract.Options{}).Meta(dctx)
	if !errors.Is(err, contract.ErrTimeout) {
		t.Fatalf("context deadline: %v", err)
	}

	// A cancelled caller is neither timeout nor unreachable.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	_, err = newClient(t, slow.URL, contract.Options{}).Meta(cctx)
	if err == nil || errors.Is(err, contract.ErrTimeout) || errors.Is(err, contract.ErrUnreachable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestOneClientRetriesOnlyIdempotentCalls: a service's client passes the request id on,
// retries a GET after a 503 and never sends an MCP message (a POST) twice.
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
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"service_id":"s","status":"ok"}`)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, contract.Options{})
	ctx := obs.WithRequestID(context.Background(), "rid-1")
	h, err := c.Health(ctx)
	if err != nil || h.Status != "ok" || gets.Load() != 2 {
		t.Errorf("GET: %+v %v after %d attempts, want ok after 2", h, err, gets.Load())
	}
	resp, err := c.MCP(ctx, []byte(`{}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 503 || posts.Load() != 1 {
		t.Errorf("POST: %d after %d attempts, want the 503 after 1", resp.Status, posts.Load())
	}
}

func TestNewRejectsBadServiceURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"ftp://x", "127.0.0.1:8081", ""} {
		if _, err := contract.NewClients(map[string]string{"ocean": u}, contract.Options{}); err == nil || !strings.Contains(err.Error(), "ocean") {
			t.Errorf("NewClients with URL %q: err = %v, want one naming the service", u, err)
		}
	}
}

// TestHTTP2WithoutTLS: with Options.HTTP2 a client speaks HTTP/2 by prior knowledge to a
// service that accepts it (pkg/httpserver's H2C), and HTTP/1.1 without it.
func TestHTTP2WithoutTLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(contract.Health{ServiceID: "ocean", Status: r.Proto})
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		http2 bool
		want  string
	}{{true, "HTTP/2.0"}, {false, "HTTP/1.1"}} {
		h, err := newClient(t, srv.URL, contract.Options{HTTP2: tc.http2}).Health(context.Background())
		if err != nil || h.Status != tc.want {
			t.Errorf("HTTP2 %t: %+v %v, want %s", tc.http2, h, err, tc.want)
		}
	}
}
