// Package jsonrpc holds the JSON-RPC 2.0 messages that every sensorgate MCP endpoint
// speaks, and one strict decoder for them, so that the gateway and the services reject the
// same malformed input with the same error codes.
//
// The decoder takes exactly one message per call: MCP over HTTP (from protocol version
// 2025-06-18 on) forbids batches, so a JSON array is an invalid request (-32600), not a
// batch to unpack.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Version is the only value the "jsonrpc" member may take.
const Version = "2.0"

// Error codes of the JSON-RPC 2.0 specification.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is the error object of a response. It implements error so that handlers can
// return it and callers can tell a protocol error from any other failure with errors.As.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// Errorf returns an Error with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithData returns a copy of e carrying v, marshalled, as its data member. A v that cannot
// be marshalled leaves data empty: the error itself matters more than its detail.
func (e *Error) WithData(v any) *Error {
	c := *e
	if b, err := json.Marshal(v); err == nil {
		c.Data = b
	}
	return &c
}

// ID is the id of a request: a string, a number or null. The zero ID is "absent", which
// makes a request a notification. The id is kept as its compact JSON text so that it goes
// back to the client exactly as it came (1.0 stays 1.0, big integers keep every digit).
type ID struct{ raw []byte }

// StringID returns the id "s".
func StringID(s string) ID {
	b, _ := json.Marshal(s) // a string always marshals
	return ID{raw: b}
}

// IntID returns the numeric id n.
func IntID(n int64) ID { return ID{raw: fmt.Appendf(nil, "%d", n)} }

// NullID is the explicit null id, used in error responses whose request id is unknown.
func NullID() ID { return ID{raw: []byte("null")} }

// IsZero reports whether the id is absent (the message is a notification).
func (id ID) IsZero() bool { return id.raw == nil }

// IsNull reports whether the id is present and null.
func (id ID) IsNull() bool { return bytes.Equal(id.raw, []byte("null")) }

// Raw returns the id's JSON text ("null" for an absent id).
func (id ID) Raw() json.RawMessage {
	if id.raw == nil {
		return json.RawMessage("null")
	}
	return json.RawMessage(id.raw)
}

// String returns the id's JSON text, for logs.
func (id ID) String() string { return string(id.Raw()) }

// Equal reports whether two ids are the same id: the same JSON text, or two strings of
// the same value written with other escapes (encoding/json writes "&" as "\u0026" when it
// marshals a response, so a client's "&1" comes back as "\u00261": the same string).
func (id ID) Equal(o ID) bool {
	if bytes.Equal(id.raw, o.raw) {
		return true
	}
	if len(id.raw) == 0 || len(o.raw) == 0 || id.raw[0] != '"' || o.raw[0] != '"' {
		return false
	}
	var a, b string
	return json.Unmarshal(id.raw, &a) == nil && json.Unmarshal(o.raw, &b) == nil && a == b
}

// MarshalJSON implements json.Marshaler; an absent id marshals as null.
func (id ID) MarshalJSON() ([]byte, error) { return id.Raw(), nil }

// UnmarshalJSON implements json.Unmarshaler with the same rules as Decode.
func (id *ID) UnmarshalJSON(b []byte) error {
	v, err := parseID(b)
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// parseID accepts a JSON string, number or null, and keeps its compact text.
func parseID(b []byte) (ID, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ID{}, fmt.Errorf("id is empty")
	}
	switch c := b[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return ID{}, fmt.Errorf("id is not a valid string: %w", err)
		}
	case c == '-' || (c >= '0' && c <= '9'):
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return ID{}, fmt.Errorf("id is not a valid number: %w", err)
		}
	case bytes.Equal(b, []byte("null")):
	default:
		return ID{}, fmt.Errorf("id must be a string, a number or null")
	}
	return ID{raw: append([]byte(nil), b...)}, nil
}

// Message is a decoded message: a *Request (a call or a notification) or a *Response.
type Message interface{ isMessage() }

// Request is a call, or a notification when ID is absent.
type Request struct {
	ID     ID
	Method string
	// Params is the params member as it came (an object or an array), nil when absent.
	Params json.RawMessage
}

func (*Request) isMessage() {}

// IsNotification reports whether the request expects no response.
func (r *Request) IsNotification() bool { return r.ID.IsZero() }

// MarshalJSON implements json.Marshaler.
func (r *Request) MarshalJSON() ([]byte, error) {
	type wire struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id,omitempty"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}
	w := wire{JSONRPC: Version, Method: r.Method, Params: r.Params}
	if !r.ID.IsZero() {
		w.ID = r.ID.Raw()
	}
	return json.Marshal(w)
}

// Response answers a call: exactly one of Result and Error is set.
type Response struct {
	ID     ID
	Result json.RawMessage
	Error  *Error
}

func (*Response) isMessage() {}

// MarshalJSON implements json.Marshaler. A response without an error and without a result
// carries the result {}, so that it is never ambiguous.
func (r *Response) MarshalJSON() ([]byte, error) {
	type wire struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *Error          `json:"error,omitempty"`
	}
	w := wire{JSONRPC: Version, ID: r.ID.Raw(), Result: r.Result, Error: r.Error}
	if r.Error == nil && len(r.Result) == 0 {
		w.Result = json.RawMessage("{}")
	}
	return json.Marshal(w)
}

// NewResult returns the response to id carrying v as its result.
func NewResult(id ID, v any) (*Response, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("jsonrpc: marshal result: %w", err)
	}
	return &Response{ID: id, Result: b}, nil
}

// NewError returns the error response to id.
func NewError(id ID, err *Error) *Response {
	if id.IsZero() {
		id = NullID()
	}
	return &Response{ID: id, Error: err}
}
