package contract_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

var transports = []string{contract.TransportSync, contract.TransportNet}

// flipResolver sends the first lookup of a name to an address where nothing listens (a
// real refused connection) and every later one to the live service.
type flipResolver struct {
	n          atomic.Int64
	dead, live string
}

func (r *flipResolver) LookupHost(_ context.Context, _ string) ([]string, error) {
	if r.n.Add(1) == 1 {
		return []string{r.dead}, nil
	}
	return []string{r.live}, nil
}

// A refused dial is tried again after the backoff, on both transports: for a GET by the
// retry policy, for an MCP message (sent once otherwise) because the service never saw it.
func TestTransportsRetryAfterRefusedDial(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"service_id":"ocean","status":"ok"}`)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, tr := range transports {
		for _, call := range []string{"get", "mcp"} {
			res := &flipResolver{dead: "127.0.0.2", live: "127.0.0.1"} // nothing listens on 127.0.0.2:port
			c := newClient(t, "http://ocean.internal:"+port, contract.Options{Transport: tr, Resolver: res})
			before := calls.Load()
			var err error
			if call == "get" {
				var h contract.Health
				h, err = c.Health(context.Background())
				if err == nil && h.Status != "ok" {
					t.Errorf("%s %s: %+v", tr, call, h)
				}
			} else {
				var resp *contract.Response
				resp, err = c.MCP(context.Background(), []byte(`{}`), "")
				if err == nil && resp.Status != 200 {
					t.Errorf("%s %s: status %d", tr, call, resp.Status)
				}
			}
			if err != nil {
				t.Errorf("%s %s after a refused dial: %v", tr, call, err)
			}
			if got := calls.Load() - before; got != 1 || res.n.Load() != 2 {
				t.Errorf("%s %s: the service saw %d calls after %d lookups, want 1 after 2", tr, call, got, res.n.Load())
			}
			c.CloseIdleConnections()
		}
	}
}

// An export streams through both transports: the client has the answer's head and first
// rows while the service has not written the rest (it waits for the client to say so), and
// a client that closes the answer early makes the service's writes fail (the connection
// is closed, not drained).
func TestTransportsStreamExport(t *testing.T) {
	t.Parallel()
	row := []byte(`{"station":"41002","timestamp":"2026-11-20T00:00:00Z","value":1.5}` + "\n")
	type run struct {
		rows    int // written after the head
		gotHead chan struct{}
		ended   chan error
	}
	var mu sync.Mutex
	var cur *run
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		rn := cur
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = w.Write(bytes.Repeat(row, 10))
		w.(http.Flusher).Flush()
		select {
		case <-rn.gotHead:
		case <-time.After(10 * time.Second):
			rn.ended <- io.ErrNoProgress // the client never had the head: it was not streamed
			return
		}
		for range rn.rows {
			if _, err := w.Write(row); err != nil {
				rn.ended <- err
				return
			}
		}
		rn.ended <- nil
	}))
	defer srv.Close()
	q := url.Values{"station": {"41002"}, "format": {"ndjson"}}
	for _, tr := range transports {
		c := newClient(t, srv.URL, contract.Options{Transport: tr})
		for _, early := range []bool{false, true} {
			// About 1.4 MB to read to the end; to a client that closes early, far more
			// than the socket buffers of both ends hold (several MB on loopback), so the
			// service's writes fail however late the close comes.
			rows := 20000
			if early {
				rows = 1 << 21
			}
			rn := &run{rows: rows, gotHead: make(chan struct{}), ended: make(chan error, 1)}
			mu.Lock()
			cur = rn
			mu.Unlock()
			resp, err := c.Export(context.Background(), q)
			if err != nil {
				t.Fatalf("%s: export: %v", tr, err)
			}
			first := make([]byte, len(row)*10)
			if _, err := io.ReadFull(resp.Body, first); err != nil {
				t.Fatalf("%s: first rows: %v", tr, err)
			}
			close(rn.gotHead)
			if early {
				resp.Body.Close()
				if err := <-rn.ended; err == nil || err == io.ErrNoProgress {
					t.Errorf("%s: the service wrote the whole export to a client that closed it early (%v)", tr, err)
				}
				continue
			}
			rest, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || len(rest) != 20000*len(row) || !bytes.HasPrefix(rest, row) {
				t.Errorf("%s: the rest of the export: %d bytes, %v", tr, len(rest), err)
			}
			if err := <-rn.ended; err != nil {
				t.Errorf("%s: service: %v", tr, err)
			}
		}
		c.CloseIdleConnections()
	}
}

// A service that stops in the middle of an answer is a 502, on both transports, and the
// next call is answered.
func TestTransportsServiceDiesMidAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "cut") {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"data\":[")
			_ = buf.Flush()
			conn.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[]}`)
	}))
	defer srv.Close()
	for _, tr := range transports {
		c := newClient(t, srv.URL, contract.Options{Transport: tr, Retries: -1})
		if _, err := c.Readings(context.Background(), "cut", ""); !contract.IsUnavailable(err) {
			t.Errorf("%s: cut answer: %v, want unavailable", tr, err)
		}
		resp, err := c.Readings(context.Background(), "41002", "")
		if err != nil || resp.Status != 200 || string(resp.Body) != `{"data":[]}` {
			t.Errorf("%s: the call after: %+v %v", tr, resp, err)
		}
		c.CloseIdleConnections()
	}
}
