package auth

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// The identity rides in the request's own obs slot instead of a copied request (issue
// 40). Many keys' requests at once through obs.Middleware, Gin and the auth middleware,
// each handler reading its identity from goroutines of its own (as coalesced fetches
// do): every request sees its own key, never another's (run under -race). Without
// obs.Middleware the identity still reaches the handler (the context fallback).
func TestIdentityPerRequestUnderConcurrency(t *testing.T) {
	st, err := store.Open(context.Background(), store.Config{SQLitePath: filepath.Join(t.TempDir(), "c.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const keys = 6
	secrets := make([]string, keys)
	ids := make([]string, keys)
	for i := range keys {
		s, k := newKey(t, st, catalog.EnvDevelopment, fmt.Sprintf("owner%d", i))
		secrets[i], ids[i] = s, k.ID.String()
	}
	a, err := New(st, Options{Environment: catalog.EnvDevelopment, CacheTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.TestMode)
	r := gin.New()
	r.Use(Middleware(a))
	r.GET("/who", func(c *gin.Context) {
		first, ok := FromGin(c)
		if !ok {
			c.String(http.StatusInternalServerError, "no identity")
			return
		}
		var wg sync.WaitGroup
		seen := make([]string, 4)
		for g := range seen {
			ctx := c.Request.Context()
			wg.Go(func() {
				if id, ok := FromContext(context.WithoutCancel(ctx)); ok {
					seen[g] = id.KeyIDText
				}
			})
		}
		wg.Wait()
		for _, s := range seen {
			if s != first.KeyIDText {
				c.String(http.StatusInternalServerError, "goroutine saw %q, handler %q", s, first.KeyIDText)
				return
			}
		}
		c.String(http.StatusOK, first.KeyIDText)
	})
	for _, wrapped := range []bool{true, false} {
		var h http.Handler = r
		if wrapped {
			h = obs.Middleware(r, obs.HTTPOptions{})
		}
		srv := httptest.NewServer(h)
		var wg sync.WaitGroup
		errs := make(chan error, keys)
		for i := range keys {
			wg.Go(func() {
				for range 50 {
					req, _ := http.NewRequest(http.MethodGet, srv.URL+"/who", nil)
					req.Header.Set(Header, secrets[i])
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						errs <- err
						return
					}
					var b [64]byte
					n, _ := resp.Body.Read(b[:])
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || string(b[:n]) != ids[i] {
						errs <- fmt.Errorf("obs.Middleware %t: key %d got %d %q, want %q", wrapped, i, resp.StatusCode, b[:n], ids[i])
						return
					}
				}
			})
		}
		wg.Wait()
		srv.Close()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}
