package stream

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// Cursor is what a client has seen: per service, the log position of the last event
// delivered (or the service's head when the stream opened). Its text form, the SSE id,
// is opaque to clients: base64url of "service=ms-seq,...".
type Cursor map[string]contract.Position

// maxCursorLen bounds a Last-Event-ID read (a handful of services fit in ~200 bytes).
const maxCursorLen = 1024

// String is the opaque id form.
func (c Cursor) String() string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(c[k].String())
	}
	return base64.RawURLEncoding.EncodeToString([]byte(b.String()))
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
