package api

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/pkg/obs"
)

// TestChainFlushesStreams proves that a handler behind the gateway's whole middleware chain
// (obs.Middleware, trimTrailingSlash, Gin and its middleware) can stream: each event it
// flushes reaches a real client over a real connection before the handler writes the next
// one, and the write deadline can be lifted through every wrapper. Server-Sent Events and
// bulk export build on this.
func TestChainFlushesStreams(t *testing.T) {
	met, err := obs.NewMetrics(prometheus.NewRegistry(), "gateway")
	if err != nil {
		t.Fatal(err)
	}
	d := withDefaults(Deps{Metrics: met})
	r := engine(d)
	h := chain(d, r)
	read := make(chan struct{})
	r.GET("/test/stream", func(c *gin.Context) {
		rc := http.NewResponseController(c.Writer)
		if err := rc.SetWriteDeadline(time.Time{}); err != nil {
			t.Errorf("SetWriteDeadline through the chain: %v", err)
		}
		c.Header("Content-Type", "text/event-stream")
		for i := range 3 {
			_, _ = c.Writer.WriteString("data: " + string(rune('a'+i)) + "\n\n")
			if err := rc.Flush(); err != nil {
				t.Errorf("Flush through the chain: %v", err)
				return
			}
			select { // the next event only once the client has seen this one
			case <-read:
			case <-time.After(10 * time.Second):
				t.Error("the client never saw a flushed event")
				return
			}
		}
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/test/stream/", nil)
	if err != nil {
		t.Fatal(err)
	}
	// An event-stream client that also accepts gzip: events are never compressed.
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		t.Errorf("event stream sent with Content-Encoding %q", ce)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("status %d, request id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if want := "data: " + string(rune('a'+i)) + "\n"; line != want {
			t.Fatalf("event %d: %q, want %q", i, line, want)
		}
		if _, err := br.ReadString('\n'); err != nil { // the blank line ending the event
			t.Fatal(err)
		}
		read <- struct{}{}
	}
}
