package app

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/config"
)

// TestRefusedBodyIsAnsweredNotReset sends 20 MCP requests of 2 MiB the way a client that
// writes its whole body before reading does (Python's urllib, Go's client without Expect:
// 100-continue): each gets its 413 payload_too_large, none a reset connection, because
// the gateway answers before reading and then reads and discards the rest (lingering
// close) instead of closing on the client mid-write.
func TestRefusedBodyIsAnsweredNotReset(t *testing.T) {
	e := env{"SQLITE_PATH": filepath.Join(t.TempDir(), "gateway.db")}.with("SENSORGATE_ENV", "development", "SYNC_INTERVAL", "0",
		"LOG_LEVEL", "error", "SERVICE_URLS", "ocean=http://127.0.0.1:1")
	g := startGateway(t, e)
	addr := strings.TrimPrefix(g.url, "http://")
	body := bytes.Repeat([]byte("x"), 2<<20)
	for i := range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		head := fmt.Sprintf("POST /api/v1/catalog/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nx-api-key: %s\r\nContent-Length: %d\r\n\r\n",
			addr, config.DefaultDevAPIKey, len(body))
		if _, err := c.Write(append([]byte(head), body...)); err != nil {
			c.Close()
			t.Fatalf("request %d: writing the body: %v", i, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			t.Fatalf("request %d: reading the answer: %v", i, err)
		}
		_ = resp.Body.Close()
		c.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("request %d: %d, want 413", i, resp.StatusCode)
		}
	}
}
