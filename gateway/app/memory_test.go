package app

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/config"
)

// heapObjects is the bytes of live and not-yet-swept heap objects after a GC, from
// runtime/metrics (the gateway runs in this process).
func heapObjects() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestLargeAnnouncedBodiesDoNotGrowTheHeap opens 400 connections to a whole gateway, each
// announcing a large body and sending only its first KiB: 150 without a key announcing
// 512 KiB (401 before the body is read), 150 with a key announcing 4 MiB on an MCP route
// whose limit is 1 MiB (413 before the body is read, as it would be without a key), and 100
// with a key announcing 512 KiB, within the limit, left idle in the middle of their bodies. The gateway's heap must stay bounded while they
// are all open: nothing is allocated from a client's Content-Length (the fasthttp build
// allocated it before the key check and reached 1.7 GB RSS).
func TestLargeAnnouncedBodiesDoNotGrowTheHeap(t *testing.T) {
	e := env{"SQLITE_PATH": filepath.Join(t.TempDir(), "gateway.db")}.with("SENSORGATE_ENV", "development", "SYNC_INTERVAL", "0",
		"LOG_LEVEL", "error", "SERVICE_URLS", "ocean=http://127.0.0.1:1")
	g := startGateway(t, e)
	addr := strings.TrimPrefix(g.url, "http://")
	before := heapObjects()

	type kind struct {
		n      int
		key    string
		length int
		want   int // status answered before the body is read; 0: none (the body is awaited)
	}
	kinds := []kind{
		{150, "", 512 << 10, http.StatusUnauthorized},
		{150, config.DefaultDevAPIKey, 4 << 20, http.StatusRequestEntityTooLarge},
		{100, config.DefaultDevAPIKey, 512 << 10, 0},
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	first := strings.Repeat("x", 1024)
	for _, k := range kinds {
		for i := range k.n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("connection %d: %v", len(conns), err)
			}
			conns = append(conns, c)
			req := fmt.Sprintf("POST /api/v1/catalog/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", addr, k.length)
			if k.key != "" {
				req += "x-api-key: " + k.key + "\r\n"
			}
			if _, err := c.Write([]byte(req + "\r\n" + first)); err != nil {
				t.Fatalf("connection %d: write: %v", i, err)
			}
			if k.want == 0 {
				continue
			}
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("connection %d (%d bytes announced, key %t): %v", i, k.length, k.key != "", err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != k.want {
				t.Fatalf("connection %d (%d bytes announced, key %t): %d, want %d", i, k.length, k.key != "", resp.StatusCode, k.want)
			}
		}
	}
	// The idle ones are in the MCP handler by now, waiting for the rest of their bodies.
	time.Sleep(500 * time.Millisecond)
	after := heapObjects()
	growth := int64(after) - int64(before)
	t.Logf("heap objects: %d KiB before, %d KiB with %d connections open (%+d KiB)", before>>10, after>>10, len(conns), growth>>10)
	// 400 connections' own buffers and goroutine state are a few MiB; one announced body
	// allocated would be 0.5-4 MiB, all of them 1.3 GB.
	const bound = 48 << 20
	if growth > bound {
		t.Errorf("the heap grew by %d MiB with %d connections announcing large bodies; want under %d MiB", growth>>20, len(conns), bound>>20)
	}
}
