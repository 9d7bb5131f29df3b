package tools

import (
	"errors"

	"github.com/sensorgate/sensorgate/pkg/pagecursor"
)

// decodeCursor reads the cursor of a paginated tool (observations, list_stations; the
// cursor itself is pkg/pagecursor's, shared with the gateway's tools), worded as this
// package's user errors.
func decodeCursor(s string, query uint64) (pagecursor.Cursor, error) {
	c, err := pagecursor.Decode(s, query)
	switch {
	case errors.Is(err, pagecursor.ErrNotACursor):
		return c, userErrorf("cursor: not a cursor this tool returned; pass nextCursor from the previous result unchanged")
	case err != nil:
		return c, userErrorf("cursor: belongs to a call with other arguments; repeat the same arguments with the cursor, or drop the cursor to start over")
	}
	return c, nil
}
