package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// tagS2 starts a compressed stored value: tagS2, uvarint dictionary id (0: none), then an
// S2 block. Plain values are JSON and start with '[' or '{', never with this byte.
const tagS2 = 0xff

// tagZstd starts a block compressed with zstd: tagZstd, uvarint dictionary id (0: none),
// then a zstd frame. A plain block starts with its reading count as a uvarint, whose
// first byte is below 0x80 for the at most 64 readings of a block: never this byte.
const tagZstd = 0xfe

// blockZstd selects zstd for blocks (S2 otherwise, for the benchmark's comparison).
var blockZstd = true

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
	// The same dictionaries for zstd, made on first use: an encoder and a decoder each
	// (both safe for concurrent use, and both reuse their state between values).
	content map[uint32][]byte
	zenc    map[uint32]*zstd.Encoder
	zdec    map[uint32]*zstd.Decoder
}

func newCodec() (*codec, error) {
	return &codec{dicts: map[uint32]*s2.Dict{}, content: map[uint32][]byte{},
		zenc: map[uint32]*zstd.Encoder{}, zdec: map[uint32]*zstd.Decoder{}}, nil
}

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
	c.content[id] = content
	return nil
}

// zstdFor returns the zstd encoder and decoder of dictionary id (0 or unknown: none),
// making them on first use.
func (c *codec) zstdFor(id uint32) (*zstd.Encoder, *zstd.Decoder, error) {
	c.mu.RLock()
	enc, dec := c.zenc[id], c.zdec[id]
	content, known := c.content[id]
	c.mu.RUnlock()
	if enc != nil {
		return enc, dec, nil
	}
	if id != 0 && !known {
		return nil, nil, fmt.Errorf("unknown dictionary %d", id)
	}
	eopts := []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0))}
	dopts := []zstd.DOption{zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithDecoderLowmem(true)}
	if len(content) >= 8 {
		eopts = append(eopts, zstd.WithEncoderDictRaw(id, content))
		dopts = append(dopts, zstd.WithDecoderDictRaw(id, content))
	}
	enc, err := zstd.NewWriter(nil, eopts...)
	if err != nil {
		return nil, nil, fmt.Errorf("zstd encoder for dictionary %d: %w", id, err)
	}
	dec, err = zstd.NewReader(nil, dopts...)
	if err != nil {
		return nil, nil, fmt.Errorf("zstd decoder for dictionary %d: %w", id, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.zenc[id] != nil { // made by another goroutine meanwhile
		enc.Close()
		dec.Close()
		return c.zenc[id], c.zdec[id], nil
	}
	c.zenc[id], c.zdec[id] = enc, dec
	return enc, dec, nil
}

// encodeBlock compresses a plain block with dictionary id and appends it to dst: with
// zstd (blockZstd) or as encode does. Unlike a reading, a block is worth an entropy
// coder: zstd re-initializes its tables per value (~10 µs), once per block rather than
// per reading, and then halves what S2 leaves (measured in docs/services.md).
func (c *codec) encodeBlock(id uint32, b []byte, dst []byte) []byte {
	if !blockZstd || len(b) == 0 {
		return c.encode(id, b, dst)
	}
	enc, _, err := c.zstdFor(id)
	if err != nil {
		return c.encode(id, b, dst)
	}
	start := len(dst)
	dst = append(dst, tagZstd)
	dst = binary.AppendUvarint(dst, uint64(id))
	dst = enc.EncodeAll(b, dst)
	if len(dst)-start >= len(b) {
		return append(dst[:start], b...)
	}
	return dst
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
	if len(b) == 0 || (b[0] != tagS2 && b[0] != tagZstd) {
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
	if len(b) == 0 || (b[0] != tagS2 && b[0] != tagZstd) {
		return b, nil
	}
	id, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return nil, errors.New("stored value: bad dictionary id")
	}
	body := b[1+n:]
	if b[0] == tagZstd {
		_, dec, err := c.zstdFor(uint32(id))
		if err != nil {
			return nil, err
		}
		out, err := dec.DecodeAll(body, nil)
		if err != nil {
			return nil, fmt.Errorf("zstd decode with dictionary %d: %w", id, err)
		}
		return out, nil
	}
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

func (c *codec) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.zenc {
		e.Close()
	}
	for _, d := range c.zdec {
		d.Close()
	}
}
