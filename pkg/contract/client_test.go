package contract_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
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

func TestClientCalls(t *testing.T) {
	t.Parallel()
	srv, seen := fakeService(t, "s3cret")
	c := contract.NewClient(srv.URL+"/", "s3cret", nil)
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

	// A JSON error of the service comes back as an *apierr.Error with its status.
	_, err := contract.NewClient(srv.URL, "wrong", nil).Meta(ctx)
	var ae *apierr.Error
	var se *contract.ServiceError
	if !errors.As(err, &ae) || ae.Code != apierr.Forbidden || !errors.As(err, &se) || se.StatusCode != http.StatusForbidden {
		t.Fatalf("wrong token: %v", err)
	}
	if errors.Is(err, contract.ErrUnreachable) || errors.Is(err, contract.ErrTimeout) {
		t.Fatalf("an answer is not unreachable: %v", err)
	}

	// A non-JSON error answer is an *HTTPError.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream proxy exploded", http.StatusBadGateway)
	}))
	t.Cleanup(plain.Close)
	_, err = contract.NewClient(plain.URL, "", nil).Health(ctx)
	var he *contract.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusBadGateway || !strings.Contains(he.Body, "exploded") {
		t.Fatalf("plain 502: %v", err)
	}

	// A 200 that is not JSON is a decode error naming the URL.
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html>hello</html>"))
	}))
	t.Cleanup(garbage.Close)
	_, err = contract.NewClient(garbage.URL, "", nil).Sensors(ctx, time.Time{}, 1, 10)
	if err == nil || !strings.Contains(err.Error(), "decode") || !strings.Contains(err.Error(), "/v1/sensors") {
		t.Fatalf("garbage answer: %v", err)
	}

	// Nobody listening: ErrUnreachable.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = contract.NewClient("http://"+addr, "", nil).Meta(ctx)
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
	_, err = contract.NewClient(slow.URL, "", &http.Client{Timeout: 50 * time.Millisecond}).Meta(ctx)
	if !errors.Is(err, contract.ErrTimeout) {
		t.Fatalf("client timeout: %v", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = contract.NewClient(slow.URL, "", nil).Meta(dctx)
	if !errors.Is(err, contract.ErrTimeout) {
		t.Fatalf("context deadline: %v", err)
	}

	// A cancelled caller is neither timeout nor unreachable.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	_, err = contract.NewClient(slow.URL, "", nil).Meta(cctx)
	if err == nil || errors.Is(err, contract.ErrTimeout) || errors.Is(err, contract.ErrUnreachable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
