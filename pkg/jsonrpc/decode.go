package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// DecodeError is why a message was rejected, with the id to answer it under: the
// request's id when it could be read, null otherwise (JSON-RPC 2.0 section 5).
type DecodeError struct {
	ID  ID
	Err *Error
}

func (e *DecodeError) Error() string { return e.Err.Error() }

// Unwrap lets errors.As find the *Error.
func (e *DecodeError) Unwrap() error { return e.Err }

// Response is the error response that answers the rejected message.
func (e *DecodeError) Response() *Response { return NewError(e.ID, e.Err) }

// Decode parses exactly one JSON-RPC 2.0 message. It never panics, whatever the input.
//
// Errors are *DecodeError with:
//   - CodeParseError when data is not one well-formed JSON value (or not UTF-8);
//   - CodeInvalidRequest for a batch (a JSON array), a value that is not an object, a
//     member name given twice, a "jsonrpc" member that is not "2.0", a method that is not
//     a non-empty string, an id that is not a string, number or null, params that are not
//     an object or array, or a response without exactly one of result and error.
//
// Members the specification does not name are ignored.
func Decode(data []byte) (Message, error) {
	if !utf8.Valid(data) {
		return nil, &DecodeError{ID: NullID(), Err: Errorf(CodeParseError, "parse error: the body is not valid UTF-8")}
	}
	if !json.Valid(data) {
		return nil, &DecodeError{ID: NullID(), Err: Errorf(CodeParseError, "parse error: %s", syntaxDetail(data))}
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch trimmed[0] { // json.Valid guarantees a non-empty value
	case '{':
	case '[':
		return nil, &DecodeError{ID: NullID(), Err: Errorf(CodeInvalidRequest, "invalid request: batches are not supported; send one JSON-RPC message per request")}
	default:
		return nil, &DecodeError{ID: NullID(), Err: Errorf(CodeInvalidRequest, "invalid request: a JSON-RPC message must be a JSON object")}
	}
	members, err := objectMembers(trimmed)
	if err != nil {
		return nil, &DecodeError{ID: NullID(), Err: Errorf(CodeInvalidRequest, "invalid request: %v", err)}
	}

	// The id first, so that every later error can be answered under it.
	id := ID{}
	if raw, ok := members["id"]; ok {
		if id, err = parseID(raw); err != nil {
			return nil, &DecodeError{ID: NullID(), Err: Errorf(CodeInvalidRequest, "invalid request: %v", err)}
		}
	}
	answerID := id
	if answerID.IsZero() {
		answerID = NullID()
	}
	fail := func(format string, args ...any) (Message, error) {
		return nil, &DecodeError{ID: answerID, Err: Errorf(CodeInvalidRequest, "invalid request: "+format, args...)}
	}

	raw, ok := members["jsonrpc"]
	if !ok {
		return fail(`the "jsonrpc" member is missing; it must be "2.0"`)
	}
	var version string
	if err := json.Unmarshal(raw, &version); err != nil || version != Version {
		return fail(`the "jsonrpc" member must be the string "2.0", got %s`, clip(raw))
	}

	rawMethod, hasMethod := members["method"]
	rawResult, hasResult := members["result"]
	rawError, hasError := members["error"]

	if !hasMethod && (hasResult || hasError) {
		return decodeResponse(id, rawResult, hasResult, rawError, hasError, fail)
	}
	if !hasMethod {
		return fail(`the "method" member is missing`)
	}
	var method string
	if err := json.Unmarshal(rawMethod, &method); err != nil {
		return fail(`the "method" member must be a string, got %s`, clip(rawMethod))
	}
	if method == "" {
		return fail(`the "method" member is empty`)
	}
	if hasResult || hasError {
		return fail(`a request must not carry "result" or "error"`)
	}
	req := &Request{ID: id, Method: method}
	if p, ok := members["params"]; ok {
		switch firstByte(p) {
		case '{', '[':
			req.Params = p
		default:
			return fail(`the "params" member must be an object or an array, got %s`, clip(p))
		}
	}
	return req, nil
}

func decodeResponse(id ID, rawResult json.RawMessage, hasResult bool, rawError json.RawMessage, hasError bool, fail func(string, ...any) (Message, error)) (Message, error) {
	if hasResult == hasError {
		return fail(`a response must carry exactly one of "result" and "error"`)
	}
	if id.IsZero() {
		return fail(`a response must carry an "id"`)
	}
	resp := &Response{ID: id}
	if hasResult {
		resp.Result = rawResult
		return resp, nil
	}
	var e Error
	if firstByte(rawError) != '{' || json.Unmarshal(rawError, &e) != nil {
		return fail(`the "error" member must be an object with an integer code and a message`)
	}
	resp.Error = &e
	return resp, nil
}

// objectMembers reads the members of a JSON object that is known to be well-formed,
// rejecting a member name that occurs twice: two "method" members would let two parsers
// that keep a different one disagree about what was asked.
func objectMembers(data []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // the opening brace
		return nil, err
	}
	members := make(map[string]json.RawMessage, 4)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("member name is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := members[name]; dup {
			return nil, fmt.Errorf("the member %q occurs more than once", name)
		}
		members[name] = v
	}
	return members, nil
}

// syntaxDetail says where the JSON breaks, without echoing the input.
func syntaxDetail(data []byte) string {
	if len(bytes.TrimSpace(data)) == 0 {
		return "the body is empty; send one JSON-RPC message"
	}
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, se.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends early"
	case err != nil:
		return "invalid JSON: " + err.Error()
	}
	return "invalid JSON"
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// clip shortens a raw value for an error message.
func clip(b []byte) string {
	const max = 40
	if len(b) <= max {
		return string(b)
	}
	n := max
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + "..."
}
