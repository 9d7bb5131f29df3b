package tools_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProtocolVersions: a service's own MCP endpoint (the go-sdk's stateless handler)
// speaks 2026-07-28 through server/discover and the older versions through initialize,
// and its tools answer at each.
func TestProtocolVersions(t *testing.T) {
	t.Parallel()
	url := serve(t, "ocean", oceanFixture(t)...)
	for _, version := range []string{"2026-07-28", "2025-11-25", "2025-06-18", "2024-11-05"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "tools-test", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %q, want %q", got, version)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ocean.list_stations", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("ocean.list_stations: %v %+v", err, res)
			}
		})
	}
}
