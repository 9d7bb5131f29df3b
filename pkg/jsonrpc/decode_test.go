package jsonrpc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in     string
		wantID       string // JSON text of the id, "" for a notification
		wantMethod   string
		wantParams   string
		notification bool
	}{
		{"numeric id", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05"}}`, "1", "initialize", `{"protocolVersion":"2024-11-05"}`, false},
		{"string id", `{"jsonrpc":"2.0","id":"abc","method":"tools/list"}`, `"abc"`, "tools/list", "", false},
		{"null id is a call", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, "null", "ping", "", false},
		{"fractional id kept verbatim", `{"jsonrpc":"2.0","id":1.0,"method":"ping"}`, "1.0", "ping", "", false},
		{"huge id keeps every digit", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, "123456789012345678901234567890", "ping", "", false},
		{"negative id", `{"jsonrpc":"2.0","id":-7,"method":"ping"}`, "-7", "ping", "", false},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", "notifications/initialized", "", true},
		{"array params", `{"jsonrpc":"2.0","id":2,"method":"m","params":[1,2]}`, "2", "m", "[1,2]", false},
		{"member order free, whitespace", " \n{\"method\":\"ping\", \"id\" : \"x\" , \"jsonrpc\":\"2.0\"}\n", `"x"`, "ping", "", false},
		{"unknown members ignored", `{"jsonrpc":"2.0","id":3,"method":"ping","extra":true}`, "3", "ping", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg, err := Decode([]byte(tt.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			req, ok := msg.(*Request)
			if !ok {
				t.Fatalf("got %T, want *Request", msg)
			}
			if req.IsNotification() != tt.notification {
				t.Errorf("IsNotification = %v, want %v", req.IsNotification(), tt.notification)
			}
			if !tt.notification && req.ID.String() != tt.wantID {
				t.Errorf("id = %s, want %s", req.ID, tt.wantID)
			}
			if req.Method != tt.wantMethod {
				t.Errorf("method = %q, want %q", req.Method, tt.wantMethod)
			}
			if string(req.Params) != tt.wantParams {
				t.Errorf("params = %s, want %s", req.Params, tt.wantParams)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		code     int
		id       string // id the error must be answered under
		mention  string // substring the message must contain
	}{
		{"empty body", ``, CodeParseError, "null", "empty"},
		{"whitespace only", "  \n ", CodeParseError, "null", "empty"},
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":"ping"`, CodeParseError, "null", "parse error"},
		{"garbage", `not json`, CodeParseError, "null", "invalid JSON"},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, CodeParseError, "null", "parse error"},
		{"invalid utf-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", CodeParseError, "null", "UTF-8"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, CodeInvalidRequest, "null", "batch"},
		{"empty batch", `[]`, CodeInvalidRequest, "null", "batch"},
		{"scalar", `42`, CodeInvalidRequest, "null", "object"},
		{"string", `"ping"`, CodeInvalidRequest, "null", "object"},
		{"missing jsonrpc", `{"id":1,"method":"ping"}`, CodeInvalidRequest, "1", `"jsonrpc"`},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, CodeInvalidRequest, "1", `"2.0"`},
		{"numeric version", `{"jsonrpc":2.0,"id":"a","method":"ping"}`, CodeInvalidRequest, `"a"`, `"2.0"`},
		{"missing method", `{"jsonrpc":"2.0","id":1}`, CodeInvalidRequest, "1", `"method"`},
		{"method not string", `{"jsonrpc":"2.0","id":1,"method":5}`, CodeInvalidRequest, "1", `"method"`},
		{"empty method", `{"jsonrpc":"2.0","id":1,"method":""}`, CodeInvalidRequest, "1", "empty"},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, CodeInvalidRequest, "null", "id"},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, CodeInvalidRequest, "null", "id"},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, CodeInvalidRequest, "null", "id"},
		{"string params", `{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`, CodeInvalidRequest, "1", `"params"`},
		{"null params", `{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`, CodeInvalidRequest, "1", `"params"`},
		{"duplicate method", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}`, CodeInvalidRequest, "null", "more than once"},
		{"request with result", `{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, CodeInvalidRequest, "1", "result"},
		{"response with both", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, CodeInvalidRequest, "1", "exactly one"},
		{"response without id", `{"jsonrpc":"2.0","result":{}}`, CodeInvalidRequest, "null", `"id"`},
		{"response bad error", `{"jsonrpc":"2.0","id":1,"error":"boom"}`, CodeInvalidRequest, "1", `"error"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg, err := Decode([]byte(tt.in))
			if err == nil {
				t.Fatalf("Decode accepted %q as %#v", tt.in, msg)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is %T, want *DecodeError", err, err)
			}
			if de.Err.Code != tt.code {
				t.Errorf("code = %d, want %d (%s)", de.Err.Code, tt.code, de.Err.Message)
			}
			if de.ID.String() != tt.id {
				t.Errorf("answer id = %s, want %s", de.ID, tt.id)
			}
			if !strings.Contains(de.Err.Message, tt.mention) {
				t.Errorf("message %q does not mention %q", de.Err.Message, tt.mention)
			}
			var je *Error
			if !errors.As(err, &je) || je.Code != tt.code {
				t.Errorf("errors.As(*Error) did not find code %d", tt.code)
			}
			b, mErr := json.Marshal(de.Response())
			if mErr != nil {
				t.Fatalf("marshal error response: %v", mErr)
			}
			var wire map[string]any
			if err := json.Unmarshal(b, &wire); err != nil {
				t.Fatalf("error response is not JSON: %v", err)
			}
			if wire["jsonrpc"] != "2.0" || wire["error"] == nil || wire["result"] != nil {
				t.Errorf("error response %s is not a JSON-RPC error", b)
			}
		})
	}
}

func TestDecodeResponses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		isError  bool
	}{
		{"result", `{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`, false},
		{"null result", `{"jsonrpc":"2.0","id":"q","result":null}`, false},
		{"error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no such method"}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg, err := Decode([]byte(tt.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			resp, ok := msg.(*Response)
			if !ok {
				t.Fatalf("got %T, want *Response", msg)
			}
			if (resp.Error != nil) != tt.isError {
				t.Errorf("error = %v, want isError %v", resp.Error, tt.isError)
			}
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  any
		want string
	}{
		{"call", &Request{ID: IntID(7), Method: "tools/list", Params: json.RawMessage(`{}`)}, `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`},
		{"notification", &Request{Method: "notifications/initialized"}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"string id result", &Response{ID: StringID("a\"b"), Result: json.RawMessage(`{"x":1}`)}, `{"jsonrpc":"2.0","id":"a\"b","result":{"x":1}}`},
		{"empty result is {}", &Response{ID: IntID(1)}, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"error with absent id", NewError(ID{}, Errorf(CodeParseError, "bad")), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}`},
		{"error with data", NewError(IntID(2), Errorf(CodeInternalError, "up").WithData(map[string]string{"code": "upstream_timeout"})), `{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"up","data":{"code":"upstream_timeout"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.msg)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if string(b) != tt.want {
				t.Errorf("got %s\nwant %s", b, tt.want)
			}
			if _, err := Decode(b); err != nil {
				t.Errorf("own output does not decode: %v", err)
			}
		})
	}
}

// FuzzDecode checks that no input makes Decode panic, that every rejection carries a
// JSON-RPC error code and an answerable id, and that every accepted message survives a
// marshal/decode round trip unchanged.
func FuzzDecode(f *testing.F) {
	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"ocean.latest_observation","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping","method":"x"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\\ud800\",\"method\":\"\xc3\"}",
		``, `{`, `null`, `"`, `{"a":`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, err := Decode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is %T, want *DecodeError", err, err)
			}
			if c := de.Err.Code; c != CodeParseError && c != CodeInvalidRequest {
				t.Fatalf("code %d is neither parse error nor invalid request", c)
			}
			if de.ID.IsZero() {
				t.Fatalf("rejection without an id to answer under")
			}
			if _, err := json.Marshal(de.Response()); err != nil {
				t.Fatalf("error response does not marshal: %v", err)
			}
			return
		}
		b, err := json.Marshal(msg)
		if err != nil {
			t.Fatalf("accepted message does not marshal: %v", err)
		}
		again, err := Decode(b)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", b, err)
		}
		switch m := msg.(type) {
		case *Request:
			r2, ok := again.(*Request)
			if !ok || r2.Method != m.Method || !r2.ID.Equal(m.ID) {
				t.Fatalf("round trip changed the request: %s", b)
			}
		case *Response:
			r2, ok := again.(*Response)
			if !ok || !r2.ID.Equal(m.ID) || (r2.Error == nil) != (m.Error == nil) {
				t.Fatalf("round trip changed the response: %s", b)
			}
		}
	})
}
