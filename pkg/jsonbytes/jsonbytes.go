// Package jsonbytes writes and checks JSON text byte for byte as encoding/json does, without
// reflection, for the hot paths where encoding/json's cost showed in CPU profiles: area
// latest's 1,000-item answers, the services' batched latest answer that feeds it, and the
// data_types column of every catalog row (docs/live.md, "Area latest").
//
// Every writer here gives exactly what json.Marshal gives for the same value (the tests
// compare them), so a caller can switch without changing a byte of its answers.
package jsonbytes

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s quoted and escaped as encoding/json does (HTML characters,
// control characters, invalid UTF-8 as U+FFFD, U+2028/U+2029), without allocating.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendFloat appends f as encoding/json writes a float64. NaN and infinities, which
// json.Marshal refuses, are written as null; callers that must refuse them check first.
func AppendFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	format := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// special marks the bytes after which AppendCompact may have to change something:
// whitespace, the HTML characters encoding/json escapes in strings, the first byte of
// U+2028/U+2029, and the quote and backslash that delimit strings.
var special = func() (t [256]bool) {
	for _, c := range []byte{' ', '\t', '\n', '\r', '<', '>', '&', 0xE2, '"', '\\'} {
		t[c] = true
	}
	return t
}()

// AppendCompact appends JSON already known to be valid (Valid, or decoded by encoding/json)
// as json.Marshal writes a json.RawMessage: insignificant whitespace dropped, and <, >, &
// and U+2028/U+2029 in strings escaped. Runs of ordinary bytes are copied whole, so JSON
// that is already compact and escaped, as the services write it, costs about a copy.
func AppendCompact(b, raw []byte) []byte {
	inString := false
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !special[c] {
			continue
		}
		switch {
		case c == '"':
			inString = !inString
		case c == '\\':
			if inString {
				i++ // the escaped byte is copied as it is (a quote among them)
			}
		case !inString:
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				b = append(b, raw[start:i]...)
				start = i + 1
			}
		case c == '<' || c == '>' || c == '&':
			b = append(b, raw[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
			b = append(b, raw[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
			i += 2
			start = i + 1
		}
	}
	return append(b, raw[start:]...)
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// Valid reports whether b is one JSON value (surrounded by optional whitespace), the same
// answer as json.Valid, several times faster: it checks the grammar in one pass without
// encoding/json's per-byte state machine.
func Valid(b []byte) bool {
	i := skipSpace(b, 0)
	end, ok := SkipValue(b, i)
	return ok && skipSpace(b, end) == len(b)
}

// SkipValue checks the JSON value starting at b[i] (no leading whitespace) and returns the
// index just past it.
func SkipValue(b []byte, i int) (int, bool) {
	return skipValue(b, i, 0)
}

func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{':
		if depth++; depth > maxDepth {
			return i, false
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			var ok bool
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = skipString(b, i); !ok {
				return i, false
			}
			if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = skipValue(b, skipSpace(b, i+1), depth); !ok {
				return i, false
			}
			if i = skipSpace(b, i); i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case '}':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '[':
		if depth++; depth > maxDepth {
			return i, false
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = skipValue(b, i, depth); !ok {
				return i, false
			}
			if i = skipSpace(b, i); i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(b, i)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	}
	return i, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func skipLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// skipString checks the string starting at the quote b[i]: escapes are JSON's, control
// characters are refused, other bytes pass (encoding/json does not check UTF-8 either).
func skipString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i++; i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skipNumber checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func skipNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	return i, true
}

// StringList decodes a JSON array of strings as json.Unmarshal into a []string does (nil
// for null), reading the common form (compact, no escapes, ASCII) directly and handing
// anything else to encoding/json.
func StringList(s string) ([]string, error) {
	if out, ok := plainStringList(s); ok {
		return out, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, err
	}
	return out, nil
}

func plainStringList(s string) ([]string, bool) {
	if s == "null" {
		return nil, true
	}
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	body := s[1 : len(s)-1]
	if body == "" {
		return []string{}, true
	}
	n := 1
	for i := 0; i < len(body); i++ {
		if body[i] == ',' {
			n++
		}
	}
	out := make([]string, 0, n)
	for {
		if len(body) < 2 || body[0] != '"' {
			return nil, false
		}
		end := 1
		for ; end < len(body); end++ {
			c := body[end]
			if c == '"' {
				break
			}
			if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
				return nil, false
			}
		}
		if end == len(body) {
			return nil, false
		}
		out = append(out, body[1:end])
		body = body[end+1:]
		if body == "" {
			return out, true
		}
		if body[0] != ',' {
			return nil, false
		}
		body = body[1:]
	}
}
