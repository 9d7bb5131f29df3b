package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		case "/readyz":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/stall":
			<-r.Context().Done()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + closed.Addr().String() + "/healthz"
	_ = closed.Close()

	tests := []struct {
		name    string
		url     string
		wantErr string // "" for healthy
	}{
		{"healthy", srv.URL + "/healthz", ""},
		{"not ready", srv.URL + "/readyz", "status 503"},
		{"missing path", srv.URL + "/nope", "status 404"},
		{"stalled server", srv.URL + "/stall", "deadline exceeded"},
		{"refused", refused, "refused"},
		{"no url", "", "no URL"},
		{"not http", "ftp://127.0.0.1/x", "want an http(s) URL"},
		{"no host", "http:///healthz", "want an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			var body strings.Builder
			err := check(ctx, http.DefaultTransport, tt.url, &body)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("check(%q) = %v, want healthy", tt.url, err)
				}
				if body.String() != `{"status":"ok"}` {
					t.Fatalf("check(%q) copied body %q, want the answer's", tt.url, body.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("check(%q) = %v, want an error containing %q", tt.url, err, tt.wantErr)
			}
		})
	}
}

// The container's internal token goes along when set, so -print can read a service's
// /metrics; without one no header is sent.
func TestTokenTransport(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Internal-Token") != "s3cret" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte("metrics"))
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var body strings.Builder
	if err := check(ctx, tokenTransport{http.DefaultTransport, "s3cret"}, srv.URL+"/metrics", &body); err != nil || body.String() != "metrics" {
		t.Fatalf("with the token: %v, body %q", err, body.String())
	}
	if err := check(ctx, tokenTransport{http.DefaultTransport, ""}, srv.URL+"/metrics", io.Discard); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("without a token: %v, want status 403", err)
	}
}
