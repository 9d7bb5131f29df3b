// Command sensorgate-mcp-bridge serves one sensorgate MCP endpoint over stdio, for MCP
// clients that only start local servers: it connects to the gateway over streamable HTTP
// with the API key, lists the endpoint's tools once, and answers each tools/call by calling
// the gateway.
//
//	SENSORGATE_MCP_URL  the endpoint (default http://127.0.0.1:8080/api/v1/catalog/mcp)
//	SENSORGATE_KEY      the API key, sent as x-api-key (required)
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatalf("sensorgate-mcp-bridge: %v", err)
	}
}

// keyTransport adds the API key to every request to the gateway.
type keyTransport struct{ key string }

func (t keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-api-key", t.key)
	return http.DefaultTransport.RoundTrip(r)
}

func run(ctx context.Context) error {
	url := os.Getenv("SENSORGATE_MCP_URL")
	if url == "" {
		url = "http://127.0.0.1:8080/api/v1/catalog/mcp"
	}
	key := os.Getenv("SENSORGATE_KEY")
	if key == "" {
		return errors.New("SENSORGATE_KEY is not set: the gateway needs an API key (x-api-key)")
	}
	impl := &mcp.Implementation{Name: "sensorgate-mcp-bridge", Version: "1"}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	upstream, err := mcp.NewClient(impl, nil).Connect(cctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: keyTransport{key: key}, Timeout: 60 * time.Second},
	}, nil)
	if err != nil {
		return fmt.Errorf("connect %s: %w", url, err)
	}
	defer upstream.Close()

	server := mcp.NewServer(impl, &mcp.ServerOptions{Instructions: upstream.InitializeResult().Instructions})
	for tool, err := range upstream.Tools(cctx, nil) {
		if err != nil {
			return fmt.Errorf("list tools of %s: %w", url, err)
		}
		server.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return upstream.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments, Meta: req.Params.Meta})
		})
	}
	return server.Run(ctx, &mcp.StdioTransport{})
}
