// Command goproxy is the load test's reference Go hops: net/http's server and nothing
// else (no routing, auth, rate limit or cache) in front of the backend, in one of four
// modes, so that the gateway's figures can be read against Go's own floors as well as
// against nginx:
//
//   - proxy: httputil.ReverseProxy with a tuned net/http Transport and pooled copy
//     buffers (the go-proxy row);
//   - sync: the gateway's own upstream transport, pkg/h1pool (the request written and the
//     answer read on the handler's goroutine over kept-alive connections), the answer
//     copied through (the go-sync row);
//   - fasthttp: fasthttp's HostClient behind the same handler (option (b) of issue 40;
//     the go-fasthttp row when FASTHTTP=1);
//   - static: a fixed body of -size bytes, no upstream at all (the go-static row: the floor
//     of a cache hit).
//
// Usage:
//
//	goproxy -mode sync -addr 127.0.0.1:9000 -backend http://127.0.0.1:9001
package main

import (
	"bytes"
	"flag"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sensorgate/sensorgate/pkg/h1pool"
)

// bufferPool lends its 32 KB copy buffers instead of allocating one per request.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte  { return *(b.p.Get().(*[]byte)) }
func (b *bufferPool) Put(v []byte) { b.p.Put(&v) }

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "listen address")
	backend := flag.String("backend", "", "backend URL (not for -mode static)")
	mode := flag.String("mode", "proxy", "proxy, sync, fasthttp or static")
	size := flag.Int("size", 2700, "body size of -mode static")
	flag.Parse()
	bp := &bufferPool{p: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}
	var h http.Handler
	if *mode == "static" {
		body := bytes.Repeat([]byte("0123456789abcdef"), *size/16+1)[:*size]
		length := []string{strconv.Itoa(len(body))}
		ct := []string{"application/json"}
		h = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header()["Content-Type"] = ct
			w.Header()["Content-Length"] = length
			_, _ = w.Write(body)
		})
	} else {
		u, err := url.Parse(*backend)
		if err != nil || u.Host == "" {
			log.Fatalf("goproxy: -backend %q is not a URL", *backend)
		}
		switch *mode {
		case "proxy":
			rp := httputil.NewSingleHostReverseProxy(u)
			rp.Transport = &http.Transport{
				MaxIdleConns:        512,
				MaxIdleConnsPerHost: 512,
				IdleConnTimeout:     90 * time.Second,
				DisableCompression:  true,
			}
			rp.BufferPool = bp
			rp.ErrorLog = log.New(log.Writer(), "goproxy: ", 0)
			h = rp
		case "sync":
			h = syncHop(u, bp)
		case "fasthttp":
			h = fastHop(u)
		default:
			log.Fatalf("goproxy: -mode %q: want proxy, sync, fasthttp or static", *mode)
		}
	}
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

// syncHop forwards each request's method, path and query to the backend over pkg/h1pool
// and copies the answer's status, content type and body back.
func syncHop(u *url.URL, bp *bufferPool) http.Handler {
	tr := &h1pool.Transport{MaxIdlePerHost: 512}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, out.String(), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		copyAnswer(w, resp.StatusCode, resp.Header.Get("Content-Type"), resp.ContentLength)
		buf := bp.Get()
		_, _ = io.CopyBuffer(w, resp.Body, buf)
		bp.Put(buf)
	})
}

// fastHop is syncHop over fasthttp's HostClient.
func fastHop(u *url.URL) http.Handler {
	hc := &fasthttp.HostClient{Addr: u.Host, MaxConns: 512, MaxIdleConnDuration: 90 * time.Second}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod(r.Method)
		req.SetRequestURI(u.Scheme + "://" + u.Host + r.URL.RequestURI())
		if err := hc.Do(req, resp); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body := resp.Body()
		copyAnswer(w, resp.StatusCode(), string(resp.Header.ContentType()), int64(len(body)))
		_, _ = w.Write(body)
	})
}

func copyAnswer(w http.ResponseWriter, status int, ct string, length int64) {
	if ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	if length >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(length, 10))
	}
	w.WriteHeader(status)
}
