package tools

import (
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
)

// pageCursor is the opaque cursor of the paginated tools (observations, list_stations):
// the next page, its size, a hash of the arguments it belongs to (so a cursor used with
// other filters is refused rather than paging through something else) and, for
// observations, the time range fixed when the first page was asked for (a days window
// does not slide under the caller).
type pageCursor struct {
	Page  int    `json:"p"`
	Limit int    `json:"l"`
	Query uint64 `json:"q"`
	Since string `json:"s,omitempty"`
	Until string `json:"u,omitempty"`
}

func encodeCursor(c pageCursor) string {
	b, _ := json.Marshal(c) // plain struct: always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string, query uint64) (pageCursor, error) {
	var c pageCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Page < 2 || c.Limit < 1 {
		return c, userErrorf("cursor: not a cursor this tool returned; pass nextCursor from the previous result unchanged")
	}
	if c.Query != query {
		return c, userErrorf("cursor: belongs to a call with other arguments; repeat the same arguments with the cursor, or drop the cursor to start over")
	}
	return c, nil
}

// queryHash identifies the arguments a cursor was issued for (the caller clears cursor,
// limit and page first).
func queryHash(v any) uint64 {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	f := fnv.New64a()
	_, _ = f.Write(b)
	return f.Sum64()
}
