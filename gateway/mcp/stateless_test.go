package mcp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
	"github.com/sensorgate/sensorgate/pkg/mcpproto"
)

// TestStatelessRequest checks a bare client's 2026-07-28 request: every disagreement
// between the headers and the body is an error naming the culprit, and a good request
// reaches the gateway's hops at the legacy version without the per-request keys.
func TestStatelessRequest(t *testing.T) {
	t.Parallel()
	const good = `{"name":"get_readings","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"progressToken":7}}`
	hdr := requestInfo{protocolVersion: StatelessProtocolVersion, method: methodToolsCall, name: "get_readings"}
	tests := []struct {
		name   string
		info   requestInfo
		params string
		code   int
		want   string
	}{
		{"good", hdr, good, 0, ""},
		{"legacy passes", requestInfo{}, `{"name":"x"}`, 0, ""},
		{"header without meta", hdr, `{"name":"get_readings"}`, jsonrpc.CodeInvalidParams, "_meta"},
		{"unknown version", requestInfo{protocolVersion: "2031-01-01", method: methodToolsCall, name: "get_readings"},
			strings.Replace(good, "2026-07-28", "2031-01-01", 1), mcpproto.CodeUnsupportedProtocolVersion, "2031-01-01"},
		{"version header missing", requestInfo{method: methodToolsCall, name: "get_readings"}, good, mcpproto.CodeHeaderMismatch, HeaderProtocolVersion},
		{"method header wrong", requestInfo{protocolVersion: StatelessProtocolVersion, method: "tools/list", name: "get_readings"}, good, mcpproto.CodeHeaderMismatch, HeaderMethod},
		{"name header wrong", requestInfo{protocolVersion: StatelessProtocolVersion, method: methodToolsCall, name: "other"}, good, mcpproto.CodeHeaderMismatch, HeaderName},
		{"no capabilities", hdr, strings.Replace(good, `"io.modelcontextprotocol/clientCapabilities":{},`, "", 1), jsonrpc.CodeInvalidParams, "clientCapabilities"},
	}
	for _, tt := range tests {
		req := &jsonrpc.Request{ID: jsonrpc.IntID(1), Method: methodToolsCall, Params: json.RawMessage(tt.params)}
		info, err := statelessRequest(tt.info, req)
		if tt.code == 0 {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != tt.code || !strings.Contains(je.Message, tt.want) {
			t.Errorf("%s: got %v, want code %d naming %q", tt.name, err, tt.code, tt.want)
		}
		_ = info
	}

	req := &jsonrpc.Request{ID: jsonrpc.IntID(1), Method: methodToolsCall, Params: json.RawMessage(good)}
	info, err := statelessRequest(hdr, req)
	if err != nil || !info.stateless || info.protocolVersion != LatestProtocolVersion {
		t.Fatalf("info %+v, err %v", info, err)
	}
	if got := string(req.Params); strings.Contains(got, "io.modelcontextprotocol/") || !strings.Contains(got, `"progressToken":7`) {
		t.Errorf("forwarded params %s: want the per-request keys gone, the rest kept", got)
	}
}

// TestWithResultType: every 2026-07-28 result says resultType, once; errors are left alone.
func TestWithResultType(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                                `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"tools":[]}}`:                    `{"jsonrpc":"2.0","id":"a","result":{"resultType":"complete","tools":[]}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","x":1}}`:   `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","x":1}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"m"}}`:      `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":4,"result":{ "content":[],"isError":false } }`: `{"jsonrpc":"2.0","id":4,"result":{"resultType":"complete","content":[],"isError":false}}`,
	} {
		if got := string(withResultType([]byte(in))); got != want {
			t.Errorf("withResultType(%s)\n got %s\nwant %s", in, got, want)
		}
	}
}
