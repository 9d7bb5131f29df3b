package mcpproto

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
)

// TestCheck: every way a request can break 2026-07-28's per-request rules is refused with
// the code SEP-2575 gives it, naming the culprit; a good request and an older one pass.
func TestCheck(t *testing.T) {
	t.Parallel()
	const good = `{"name":"get_readings","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`
	hdr := Headers{Version: Stateless, Method: "tools/call", Name: "get_readings"}
	for _, tt := range []struct {
		name      string
		h         Headers
		params    string
		stateless bool
		code      int
		want      string
	}{
		{"good", hdr, good, true, 0, ""},
		{"older version passes", Headers{Version: "2025-06-18"}, `{"name":"x"}`, false, 0, ""},
		{"no header, no meta", Headers{}, `{}`, false, 0, ""},
		{"header without meta", hdr, `{"name":"get_readings"}`, false, jsonrpc.CodeInvalidParams, "_meta"},
		{"unknown version in both", Headers{Version: "2031-01-01", Method: "tools/call", Name: "get_readings"},
			strings.Replace(good, "2026-07-28", "2031-01-01", 1), false, CodeUnsupportedProtocolVersion, "2031-01-01"},
		{"unknown version in the header only", Headers{Version: "1999-01-01"}, `{}`, false, CodeUnsupportedProtocolVersion, "1999-01-01"},
		{"header and meta differ", Headers{Version: Stateless, Method: "tools/call", Name: "get_readings"},
			strings.Replace(good, "2026-07-28", "2031-01-01", 1), false, CodeHeaderMismatch, HeaderProtocolVersion},
		{"version header missing", Headers{Method: "tools/call", Name: "get_readings"}, good, false, CodeHeaderMismatch, HeaderProtocolVersion},
		{"method header missing", Headers{Version: Stateless, Name: "get_readings"}, good, false, CodeHeaderMismatch, HeaderMethod},
		{"method header in capitals", Headers{Version: Stateless, Method: "TOOLS/CALL", Name: "get_readings"}, good, false, CodeHeaderMismatch, HeaderMethod},
		{"name header wrong", Headers{Version: Stateless, Method: "tools/call", Name: "other"}, good, false, CodeHeaderMismatch, HeaderName},
		{"no capabilities", hdr, strings.Replace(good, `,"io.modelcontextprotocol/clientCapabilities":{}`, "", 1), false, jsonrpc.CodeInvalidParams, "clientCapabilities"},
	} {
		stateless, err := Check(tt.h, "tools/call", json.RawMessage(tt.params))
		switch {
		case tt.code == 0 && (err != nil || stateless != tt.stateless):
			t.Errorf("%s: stateless %v, err %v", tt.name, stateless, err)
		case tt.code != 0 && (err == nil || err.Code != tt.code || !strings.Contains(err.Message, tt.want)):
			t.Errorf("%s: got %v, want code %d naming %q", tt.name, err, tt.code, tt.want)
		}
	}
	// The unsupported-version error says which versions are.
	_, err := Check(Headers{Version: "1999-01-01"}, "tools/list", nil)
	var data struct{ Supported []string }
	if err == nil || json.Unmarshal(err.Data, &data) != nil || len(data.Supported) != len(All()) {
		t.Errorf("unsupported version: %v", err)
	}
}
