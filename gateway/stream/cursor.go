package stream

import (
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// Cursor is what a client has seen: per service, the log position of the last event
// delivered (or the service's head when the stream opened). Its text form, the SSE id,
// is opaque to clients: base64url of "service=ms-seq,...".
type Cursor map[string]contract.Position

// maxCursorLen bounds a Last-Event-ID read (a handful of services fit in ~200 bytes).
const maxCursorLen = 1024

// cursorEncoder appends a stream's cursor as its id text without allocating: every event
// of every stream carries its own cursor, so a burst of 330 readings to 1,000 streams
// encodes 330,000 of them (docs/live.md "Figures"). One encoder belongs to one stream.
type cursorEncoder struct {
	keys []string // the cursor's services, sorted
	raw  []byte
}

// append appends c's id form, the bytes String gives, to dst.
func (e *cursorEncoder) append(dst []byte, c Cursor) []byte {
	if !e.sameKeys(c) {
		e.keys = e.keys[:0]
		for k := range c {
			e.keys = append(e.keys, k)
		}
		slices.Sort(e.keys)
	}
	e.raw = e.raw[:0]
	for i, k := range e.keys {
		if i > 0 {
			e.raw = append(e.raw, ',')
		}
		p := c[k]
		e.raw = append(e.raw, k...)
		e.raw = append(e.raw, '=')
		e.raw = strconv.AppendUint(e.raw, p.MS, 10)
		e.raw = append(e.raw, '-')
		e.raw = strconv.AppendUint(e.raw, p.Seq, 10)
	}
	return base64.RawURLEncoding.AppendEncode(dst, e.raw)
}

// sameKeys reports whether the sorted keys are still c's (a stream's cursor gains a
// service when that service's log first answers; it never loses one).
func (e *cursorEncoder) sameKeys(c Cursor) bool {
	if len(e.keys) != len(c) {
		return false
	}
	for _, k := range e.keys {
		if _, ok := c[k]; !ok {
			return false
		}
	}
	return true
}

var errCursor = errors.New("not a cursor this API issued")

// ParseCursor reads an id this package issued.
func ParseCursor(s string) (Cursor, error) {
	if len(s) > maxCursorLen {
		return nil, errCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(raw) == 0 {
		return nil, errCursor
	}
	c := Cursor{}
	for _, part := range strings.Split(string(raw), ",") {
		svc, pos, ok := strings.Cut(part, "=")
		if !ok || svc == "" {
			return nil, errCursor
		}
		p, err := contract.ParsePosition(pos)
		if err != nil {
			return nil, errCursor
		}
		c[svc] = p
	}
	return c, nil
}
