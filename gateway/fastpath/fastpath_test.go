package fastpath

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sensorgate/sensorgate/gateway/proxy"
)

// TestMatch: the native path takes plain readings GETs only; everything else, odd ids
// above all, is the engine's.
func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		method, uri string
		ok          bool
		route       proxy.Route
		ref, query  string
	}{
		{"GET", "/api/v1/sensors/SG001/readings", true, proxy.RouteReadings, "SG001", ""},
		{"GET", "/api/v1/sensors/SG001/readings?limit=2&since=x", true, proxy.RouteReadings, "SG001", "limit=2&since=x"},
		{"GET", "/api/v1/sensors/6f1c0c3e-5e7b-5d7a-9a43-0d6b2e7f9a10/readings/latest", true, proxy.RouteLatest, "6f1c0c3e-5e7b-5d7a-9a43-0d6b2e7f9a10", ""},
		{"GET", "/api/v1/sensors/a.b_c~d-e/readings/latest?parameter=x", true, proxy.RouteLatest, "a.b_c~d-e", "parameter=x"},
		{"HEAD", "/api/v1/sensors/SG001/readings", false, 0, "", ""},
		{"POST", "/api/v1/sensors/SG001/readings", false, 0, "", ""},
		{"GET", "/api/v1/sensors/SG001/readings/", false, 0, "", ""},
		{"GET", "/api/v1/sensors/SG001/readings/latest/", false, 0, "", ""},
		{"GET", "/api/v1/sensors/SG001", false, 0, "", ""},
		{"GET", "/api/v1/sensors//readings", false, 0, "", ""},
		{"GET", "/api/v1/sensors/../readings", false, 0, "", ""},
		{"GET", "/api/v1/sensors/./readings", false, 0, "", ""},
		{"GET", "/api/v1/sensors/a%2fb/readings", false, 0, "", ""},
		{"GET", "/api/v1/sensors/a%00b/readings", false, 0, "", ""},
		{"GET", "/api/v1/sensors/a:b/readings", false, 0, "", ""},
		{"GET", "/api/v1/sensors/a/b/readings", false, 0, "", ""},
		{"GET", "/api/v1/sensors/SG001/readings/latest/x", false, 0, "", ""},
		{"GET", "/api/v2/sensors/SG001/readings", false, 0, "", ""},
		{"GET", "//api/v1/sensors/SG001/readings", false, 0, "", ""},
	} {
		var c fasthttp.RequestCtx
		c.Request.Header.SetMethod(tc.method)
		c.Request.Header.SetRequestURI(tc.uri)
		route, ref, query, ok := match(&c)
		if ok != tc.ok || (ok && (route != tc.route || ref != tc.ref || query != tc.query)) {
			t.Errorf("%s %s: match = %v %q %q %v; want %v %q %q %v", tc.method, tc.uri, route, ref, query, ok, tc.route, tc.ref, tc.query, tc.ok)
		}
	}
}

// TestServerLimits: requests the server cannot take are answered in the API's error shape.
func TestServerLimits(t *testing.T) {
	engine := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	srv := NewServer(Options{Engine: engine})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	base := "http://" + ln.Addr().String()

	do := func(req *http.Request) (int, string) {
		t.Helper()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var e struct{ Code string }
		_ = json.Unmarshal(b, &e)
		return resp.StatusCode, e.Code
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/x", nil)
	if st, _ := do(req); st != http.StatusOK {
		t.Errorf("plain request through the engine: %d", st)
	}
	// Only the head is sent: the server refuses by the declared length, before reading the
	// body (a client still writing it would see the connection reset instead).
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", MaxBodyBytes+1)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), `"code":"payload_too_large"`) {
		t.Errorf("body over %d bytes: %d %s, want 413 payload_too_large", MaxBodyBytes, resp.StatusCode, b)
	}
	req, _ = http.NewRequest(http.MethodGet, base+"/x", nil)
	req.Header.Set("X-Big", strings.Repeat("y", MaxHeaderBytes))
	if st, code := do(req); st != http.StatusRequestHeaderFieldsTooLarge || code != "invalid_parameter" {
		t.Errorf("headers over %d bytes: %d %q, want 431 invalid_parameter", MaxHeaderBytes, st, code)
	}
}
