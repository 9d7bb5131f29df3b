package ratelimit

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

func TestMiddleware(t *testing.T) {
	t.Parallel()
	gin.SetMode(gin.TestMode)
	rdb, prefix := testenv.Redis(t)
	limiters := map[string]Limiter{
		"memory": NewMemory(nil),
		"redis":  NewBatcher(NewRedis(rdb, prefix, time.Second), 0, 0),
	}
	for name, l := range limiters {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			plans := Plans{"tiny": {Rate: 2, Period: time.Hour, Burst: 2}}
			r := gin.New()
			r.Use(func(c *gin.Context) {
				if k := c.GetHeader("x-api-key"); k != "" {
					c.Set("id", Identity{KeyID: k, Environment: "production", Plan: "tiny"})
				}
			})
			r.Use(Middleware(l, plans, func(c *gin.Context) (Identity, bool) {
				v, ok := c.Get("id")
				if !ok {
					return Identity{}, false
				}
				return v.(Identity), true
			}, nil))
			r.GET("/x", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
			r.GET("/fail", func(c *gin.Context) { c.JSON(http.StatusNotFound, gin.H{"error": "no", "code": "not_found"}) })

			do := func(path, key string) *httptest.ResponseRecorder {
				w := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, path, nil)
				if key != "" {
					req.Header.Set("x-api-key", key)
				}
				r.ServeHTTP(w, req)
				return w
			}
			tests := []struct {
				path, key            string
				status               int
				limit, remain, reset string
				retryAfter           bool
			}{
				{"/x", "", 200, "", "", "", false}, // not authenticated: untouched
				{"/x", "a", 200, "2", "1", "1800", false},
				{"/fail", "a", 404, "2", "0", "3600", false}, // errors carry the headers too
				{"/x", "a", 429, "2", "0", "3600", true},
				{"/x", "b", 200, "2", "1", "1800", false}, // another key, its own budget
			}
			for i, tt := range tests {
				w := do(tt.path, tt.key)
				h := w.Header()
				if w.Code != tt.status || h.Get(HeaderLimit) != tt.limit || h.Get(HeaderRemaining) != tt.remain || h.Get(HeaderReset) != tt.reset {
					t.Fatalf("#%d %s key %q: status %d limit %q remaining %q reset %q; want %d %q %q %q",
						i, tt.path, tt.key, w.Code, h.Get(HeaderLimit), h.Get(HeaderRemaining), h.Get(HeaderReset), tt.status, tt.limit, tt.remain, tt.reset)
				}
				if got := h.Get(HeaderRetryAfter) != ""; got != tt.retryAfter {
					t.Errorf("#%d Retry-After = %q", i, h.Get(HeaderRetryAfter))
				}
				if tt.status == 429 {
					var body struct{ Error, Code string }
					if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Code != "rate_limited" || body.Error == "" {
						t.Errorf("429 body = %s, want {error, code: rate_limited}", w.Body)
					}
					if h.Get(HeaderRetryAfter) != "1800" {
						t.Errorf("Retry-After = %q, want 1800 (one unit of 2/hour)", h.Get(HeaderRetryAfter))
					}
					assertEnvelope(t, w)
				}
			}
		})
	}
}

func TestMiddlewareFailClosed(t *testing.T) {
	t.Parallel()
	srv := startRedisServer(t)
	f, err := NewFallback(NewRedis(srv.client(t), "t:", 100*time.Millisecond), NewMemory(nil),
		FallbackOptions{FailClosed: true, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	srv.stop()
	r := gin.New()
	r.Use(Middleware(f, nil, func(*gin.Context) (Identity, bool) { return Identity{KeyID: "k", Environment: "development"}, true }, nil))
	r.GET("/x", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/x", nil))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get(HeaderRetryAfter) == "" {
		t.Fatalf("fail-closed with Redis down: %d %v %s; want 503 with Retry-After", w.Code, w.Header(), w.Body)
	}
	var body struct{ Error, Code string }
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Code != "rate_limit_unavailable" || body.Error == "" {
		t.Errorf("503 body = %s, want {error, code: rate_limit_unavailable}", w.Body)
	}
	assertEnvelope(t, w)
}

// assertEnvelope checks that a refusal went through the one error writer (apierr.Write):
// the same headers as every other error answer, the body exactly the encoded error, and
// the handler behind the middleware never ran (no "ok" appended).
func assertEnvelope(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	h := w.Header()
	want := map[string]string{"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
	for name, v := range want {
		if got := h.Get(name); got != v {
			t.Errorf("%s = %q, want %q (apierr.Write's envelope)", name, got, v)
		}
	}
	var e apierr.Error
	dec := json.NewDecoder(w.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || dec.More() {
		t.Errorf("body is not exactly one apierr.Error: %v (more: %v)", err, dec.More())
	}
}
