// Command goproxy is the load test's reference Go hop: net/http's server and
// httputil.ReverseProxy with a tuned transport and pooled copy buffers, and nothing else
// (no routing, auth, rate limit or cache). It shows what Go's own HTTP stack costs for the
// hop the gateway makes, so that the gateway's figures can be read against Go's floor as
// well as against nginx.
//
//	goproxy -addr 127.0.0.1:9000 -backend http://127.0.0.1:9001
package main

import (
	"flag"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// bufferPool lends ReverseProxy its 32 KB copy buffers instead of allocating one per
// request.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte  { return *(b.p.Get().(*[]byte)) }
func (b *bufferPool) Put(v []byte) { b.p.Put(&v) }

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "listen address")
	backend := flag.String("backend", "", "backend URL")
	flag.Parse()
	u, err := url.Parse(*backend)
	if err != nil || u.Host == "" {
		log.Fatalf("goproxy: -backend %q is not a URL", *backend)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 512,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	bp := &bufferPool{p: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}
	rp.BufferPool = bp
	rp.ErrorLog = log.New(log.Writer(), "goproxy: ", 0)
	srv := &http.Server{Addr: *addr, Handler: rp, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
