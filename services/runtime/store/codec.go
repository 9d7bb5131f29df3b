package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
)

// tagS2 starts a compressed stored value: tagS2, uvarint dictionary id (0: none), then an
// S2 block. Plain values are JSON and start with '[' or '{', never with this byte.
const tagS2 = 0xff

// codec compresses the per-reading blobs (canonical measurements JSON and the raw source
// fragment) with S2 against a raw-content dictionary per source format. Readings cut from
// one provider format share most of their bytes (the NDBC header lines, the NWS GeoJSON
// skeleton, the same measurement keys), so a few samples of the format as the dictionary
// shrink a 336-byte NDBC raw row to ~70 bytes and a 660-byte measurements array to ~110,
// while each reading still decodes on its own (no shared document to fetch).
//
// S2 rather than zstd: zstd with a dictionary re-initializes its match tables for every
// frame (a ~256 KB copy), which made a 300-byte reading cost ~10 µs to compress against
// ~2 µs for S2, for ~10% smaller output (measured in docs/services.md).
type codec struct {
	mu    sync.RWMutex
	dicts map[uint32]*s2.Dict
}

func newCodec() (*codec, error) { return &codec{dicts: map[uint32]*s2.Dict{}}, nil }

// add registers dictionary id (> 0) with its content. Adding a known id is a no-op.
func (c *codec) add(id uint32, content []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.dicts[id]; ok {
		return nil
	}
	// Samples too small for an S2 dictionary (under 16 bytes) leave the id without one:
	// its values are compressed plainly, and the id still names the format.
	c.dicts[id] = s2.MakeDict(content, nil)
	return nil
}

func (c *codec) has(id uint32) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.dicts[id]
	return ok
}

// encode compresses b with dictionary id (0 or unknown: none) and appends it to dst.
// Values that do not shrink are kept plain.
func (c *codec) encode(id uint32, b []byte, dst []byte) []byte {
	if len(b) == 0 {
		return dst
	}
	c.mu.RLock()
	d := c.dicts[id]
	c.mu.RUnlock()
	if d == nil {
		id = 0
	}
	start := len(dst)
	dst = append(dst, tagS2)
	dst = binary.AppendUvarint(dst, uint64(id))
	hdr := len(dst) - start
	need := s2.MaxEncodedLen(len(b))
	if cap(dst)-len(dst) < need {
		grown := make([]byte, len(dst), len(dst)+need)
		copy(grown, dst)
		dst = grown
	}
	var out []byte
	if d != nil {
		out = d.Encode(dst[len(dst):len(dst)+need], b)
	} else {
		out = s2.Encode(dst[len(dst):len(dst)+need], b)
	}
	if hdr+len(out) >= len(b) || b[0] == tagS2 {
		return append(dst[:start], b...)
	}
	return dst[:len(dst)+len(out)]
}

// dictID reports the dictionary a stored value needs (0: none).
func dictID(b []byte) uint32 {
	if len(b) == 0 || b[0] != tagS2 {
		return 0
	}
	id, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return 0
	}
	return uint32(id)
}

// decode reverses encode. A plain value is returned as it is (the caller copies it when
// the buffer is not its own).
func (c *codec) decode(b []byte) ([]byte, error) {
	if len(b) == 0 || b[0] != tagS2 {
		return b, nil
	}
	id, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return nil, errors.New("stored value: bad dictionary id")
	}
	body := b[1+n:]
	if id == 0 {
		out, err := s2.Decode(nil, body)
		if err != nil {
			return nil, fmt.Errorf("s2 decode: %w", err)
		}
		return out, nil
	}
	c.mu.RLock()
	d := c.dicts[uint32(id)]
	c.mu.RUnlock()
	if d == nil {
		return nil, fmt.Errorf("stored value needs unknown dictionary %d", id)
	}
	out, err := d.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("s2 decode with dictionary %d: %w", id, err)
	}
	return out, nil
}

func (c *codec) close() {}
