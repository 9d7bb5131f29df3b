package store

import (
	"crypto/sha1"
	"hash"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/pkg/ids"
)

// readingIDs computes ids.Reading for many readings of one sensor without the string
// building and hasher allocation of each call (a 500-row page needs 500 ids). The result
// is the same UUIDv5; TestReadingIDsMatch holds it to ids.Reading.
type readingIDs struct {
	h      hash.Hash
	prefix []byte // "reading:<sensor uuid>:"
	buf    []byte
	sum    []byte
}

func newReadingIDs(sensor uuid.UUID) *readingIDs {
	return &readingIDs{h: sha1.New(), prefix: []byte("reading:" + sensor.String() + ":"), buf: make([]byte, 0, 96), sum: make([]byte, 0, sha1.Size)}
}

func (r *readingIDs) id(ts time.Time) uuid.UUID {
	r.buf = append(r.buf[:0], r.prefix...)
	r.buf = ts.UTC().Truncate(time.Millisecond).AppendFormat(r.buf, time.RFC3339Nano)
	r.h.Reset()
	r.h.Write(ids.Namespace[:])
	r.h.Write(r.buf)
	r.sum = r.h.Sum(r.sum[:0])
	var u uuid.UUID
	copy(u[:], r.sum)
	u[6] = (u[6] & 0x0f) | 0x50 // version 5
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u
}
