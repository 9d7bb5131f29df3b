// Package pagecursor is the opaque cursor of the paginated MCP tools of the gateway and the
// services: the next page, its size, a hash of the arguments it belongs to (so a cursor used
// with other filters is refused rather than paging through something else) and, where a
// tool has one, the time range fixed when the first page was asked for (a days window does
// not slide under the caller).
package pagecursor

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash/fnv"
)

// Cursor is what a cursor string holds.
type Cursor struct {
	Page  int    `json:"p"`
	Limit int    `json:"l"`
	Query uint64 `json:"q"`
	Since string `json:"s,omitempty"`
	Until string `json:"u,omitempty"`
}

// Errors of Decode; callers word them in their own error envelope.
var (
	// ErrNotACursor: the string is not a cursor a tool returned (or names no next page).
	ErrNotACursor = errors.New("not a cursor this tool returned")
	// ErrOtherQuery: the cursor belongs to a call with other arguments.
	ErrOtherQuery = errors.New("cursor belongs to a call with other arguments")
)

// Encode returns the cursor string of c.
func Encode(c Cursor) string {
	b, _ := json.Marshal(c) // plain struct: always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode reads a cursor string that must belong to the arguments hashed as query.
func Decode(s string, query uint64) (Cursor, error) {
	var c Cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Page < 2 || c.Limit < 1 {
		return c, ErrNotACursor
	}
	if c.Query != query {
		return c, ErrOtherQuery
	}
	return c, nil
}

// QueryHash identifies the arguments a cursor was issued for; the caller clears the
// cursor, limit and page arguments first.
func QueryHash(v any) uint64 {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	f := fnv.New64a()
	_, _ = f.Write(b)
	return f.Sum64()
}
