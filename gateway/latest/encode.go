package latest

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// appendAnswer appends ans as JSON, byte for byte what json.Marshal(ans) gives
// (encode_test.go checks it), without its cost: encoding/json re-validates and compacts
// every item's measurements (json.RawMessage), the bulk of a 1,000-sensor answer, which
// are the services' own JSON, already checked when their answer was decoded. The other
// fields are written directly, so an item costs no allocation (docs/live.md, figures).
func appendAnswer(b []byte, ans *Answer) ([]byte, error) {
	b = append(b, `{"items":`...)
	if ans.Items == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range ans.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendItem(b, &ans.Items[i])
		}
		b = append(b, ']')
	}
	// The small rest goes through encoding/json.
	rest, err := json.Marshal(struct {
		Warnings      []Warning           `json:"warnings"`
		MaxAgeSeconds *int64              `json:"max_age_seconds"`
		ServerTime    contract.Time       `json:"server_time"`
		Pagination    contract.Pagination `json:"pagination"`
	}{ans.Warnings, ans.MaxAgeSeconds, ans.ServerTime, ans.Pagination})
	if err != nil {
		return nil, err
	}
	b = append(b, ',')
	return append(b, rest[1:]...), nil
}

// answerSize estimates the JSON size of ans, so its buffer grows at most once.
func answerSize(ans *Answer) int {
	size := 512
	for i := range ans.Items {
		size += 360 + len(ans.Items[i].Name) + len(ans.Items[i].Measurements)
	}
	return size
}

func appendItem(b []byte, it *Item) []byte {
	b = append(b, `{"sensor_id":`...)
	b = appendString(b, it.SensorID)
	b = append(b, `,"external_id":`...)
	b = appendString(b, it.ExternalID)
	b = append(b, `,"name":`...)
	b = appendString(b, it.Name)
	b = append(b, `,"latitude":`...)
	b = appendOptFloat(b, it.Latitude)
	b = append(b, `,"longitude":`...)
	b = appendOptFloat(b, it.Longitude)
	b = append(b, `,"service_id":`...)
	b = appendString(b, it.ServiceID)
	b = append(b, `,"timestamp":`...)
	if it.Timestamp == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = it.Timestamp.UTC().AppendFormat(b, contract.TimeLayout)
		b = append(b, '"')
	}
	b = append(b, `,"age_seconds":`...)
	if it.AgeSeconds == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *it.AgeSeconds, 10)
	}
	b = append(b, `,"expected_interval_seconds":`...)
	b = strconv.AppendInt(b, it.ExpectedIntervalSeconds, 10)
	b = append(b, `,"stale_after_seconds":`...)
	b = strconv.AppendInt(b, it.StaleAfterSeconds, 10)
	b = append(b, `,"stale":`...)
	b = strconv.AppendBool(b, it.Stale)
	b = append(b, `,"unavailable":`...)
	b = strconv.AppendBool(b, it.Unavailable)
	b = append(b, `,"measurements":`...)
	if it.Measurements == nil {
		b = append(b, "null"...)
	} else {
		b = appendCompact(b, it.Measurements)
	}
	return append(b, '}')
}

// appendCompact appends JSON already known to be valid as json.Marshal writes a
// json.RawMessage: insignificant whitespace dropped, and <, >, & and U+2028/U+2029 in
// strings escaped. The services send it compact, so this is mostly a copy.
func appendCompact(b, raw []byte) []byte {
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			case c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
				continue
			case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
				i += 2
				continue
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		b = append(b, c)
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString appends s quoted and escaped as encoding/json does (HTML characters,
// control characters, invalid UTF-8 as U+FFFD, U+2028/U+2029), without allocating.
func appendString(b []byte, s string) []byte {
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

// appendOptFloat appends f as encoding/json writes a float64 (null when nil).
func appendOptFloat(b []byte, f *float64) []byte {
	if f == nil {
		return append(b, "null"...)
	}
	v := *f
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...) // json.Marshal would fail; coordinates never are
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
