package h1pool

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// answer is what the fuzzed server says next.
type answer struct {
	status int
	mode   byte // 0 sized, 1 chunked, 2 close-delimited (raw), 3 sized with Connection: close
	body   []byte
	header string
}

// FuzzRoundTrip drives the transport against net/http's server with random answers and
// holds its reading to net/http's own Transport's on the same answers: the same status,
// header and body, and every call after it still right on the same pool (an answer that
// left the connection unusable must not have gone back to it).
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint16(0), byte(0), []byte(`{"ok":true}`), "v", false)
	f.Add(uint16(4), byte(1), bytes.Repeat([]byte("chunk"), 3000), "", false)
	f.Add(uint16(0), byte(2), []byte("until close"), "x y", false)
	f.Add(uint16(302), byte(3), []byte("bye"), "", true)
	f.Add(uint16(104), byte(0), []byte("no body on 304"), "", false)
	f.Add(uint16(4), byte(0), []byte{}, "", true)
	var next atomic.Pointer[answer]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := next.Load()
		if a.header != "" {
			w.Header().Set("X-Fuzz", a.header)
		}
		switch a.mode {
		case 2:
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			_, _ = buf.WriteString("HTTP/1.1 " + strconv.Itoa(a.status) + " Fuzz\r\nX-Fuzz: raw\r\n\r\n")
			if r.Method != http.MethodHead && a.status != http.StatusNoContent && a.status != http.StatusNotModified {
				_, _ = buf.Write(a.body)
			}
			_ = buf.Flush()
			return
		case 3:
			w.Header().Set("Connection", "close")
			fallthrough
		case 0:
			w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
			w.WriteHeader(a.status)
			_, _ = w.Write(a.body)
		default:
			w.WriteHeader(a.status)
			half := len(a.body) / 2
			_, _ = w.Write(a.body[:half])
			w.(http.Flusher).Flush()
			_, _ = w.Write(a.body[half:])
		}
	}))
	defer srv.Close()
	tr := &Transport{MaxIdlePerHost: 2}
	defer tr.CloseIdleConnections()
	ref := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2}
	defer ref.CloseIdleConnections()

	call := func(t *testing.T, rt http.RoundTripper, method string) (int, string, []byte) {
		t.Helper()
		// A bound on every call: a hang is a failure with its input, not a stuck worker.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+"/f", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatalf("%T %s: %v", rt, method, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%T %s: body: %v", rt, method, err)
		}
		return resp.StatusCode, resp.Header.Get("X-Fuzz"), b
	}
	f.Fuzz(func(t *testing.T, status uint16, mode byte, body []byte, header string, head bool) {
		a := &answer{status: 200 + int(status)%400, mode: mode % 4, body: body, header: printable(header)}
		next.Store(a)
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		ws, wh, wb := call(t, ref, method)
		for i := range 2 { // the second call reuses the connection when the first kept it
			s, h, b := call(t, tr, method)
			if s != ws || h != wh || !bytes.Equal(b, wb) {
				t.Fatalf("call %d: got %d %q %d bytes, net/http read %d %q %d bytes", i, s, h, len(b), ws, wh, len(wb))
			}
		}
		// Whatever the answer was, a plain one after it on the same pool is read right.
		next.Store(&answer{status: 200, body: []byte("plain")})
		if s, _, b := call(t, tr, http.MethodGet); s != 200 || string(b) != "plain" {
			t.Fatalf("the call after: %d %q", s, b)
		}
	})
}

// printable keeps the visible ASCII of s: a header value net/http's server would send
// broken (a control byte) fails both clients alike and says nothing about either.
func printable(s string) string {
	b := make([]byte, 0, len(s))
	for i := range len(s) {
		if s[i] >= 0x20 && s[i] < 0x7f {
			b = append(b, s[i])
		}
	}
	return string(b)
}
