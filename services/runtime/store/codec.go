package store

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdMagic starts every zstd frame; a stored value that does not start with it is plain.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// codec compresses the per-reading blobs (canonical measurements JSON and the raw source
// fragment) with zstd against a raw-content dictionary per source format. Readings cut
// from one provider format share almost all of their bytes (the NDBC header line, the NWS
// GeoJSON skeleton, the same measurement keys), so a sample of that format used as the
// dictionary shrinks a 3 KB NWS feature or a 100-byte NDBC row to a few dozen bytes while
// each reading still decodes on its own (no shared document to fetch).
//
// Each dictionary's id is written into the zstd frame header, so a stored value names the
// dictionary it needs.
type codec struct {
	mu  sync.RWMutex
	enc map[uint32]*zstd.Encoder
	dec map[uint32]*zstd.Decoder
	// plain compresses without a dictionary (id 0).
	plain  *zstd.Encoder
	dplain *zstd.Decoder
}

func newCodec() (*codec, error) {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(2), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(64<<20))
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	return &codec{enc: map[uint32]*zstd.Encoder{}, dec: map[uint32]*zstd.Decoder{}, plain: e, dplain: d}, nil
}

// add registers dictionary id (> 0) with its content. Adding a known id is a no-op.
func (c *codec) add(id uint32, content []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.enc[id]; ok {
		return nil
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(2),
		zstd.WithLowerEncoderMem(true), zstd.WithEncoderDictRaw(id, content))
	if err != nil {
		return fmt.Errorf("zstd encoder for dictionary %d: %w", id, err)
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(64<<20),
		zstd.WithDecoderDictRaw(id, content))
	if err != nil {
		return fmt.Errorf("zstd decoder for dictionary %d: %w", id, err)
	}
	c.enc[id], c.dec[id] = e, d
	return nil
}

func (c *codec) has(id uint32) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.enc[id]
	return ok
}

// encode compresses b with dictionary id (0: none). Values too small to gain are kept
// plain; the decoder tells the two apart by the zstd magic number.
func (c *codec) encode(id uint32, b []byte, dst []byte) []byte {
	if len(b) == 0 {
		return dst
	}
	c.mu.RLock()
	e := c.enc[id]
	c.mu.RUnlock()
	if e == nil {
		e = c.plain
	}
	out := e.EncodeAll(b, dst)
	if len(out)-len(dst) >= len(b) && !bytes.HasPrefix(b, zstdMagic) {
		return append(dst, b...)
	}
	return out
}

// decode reverses encode; dictID returns the dictionary a stored value needs.
func (c *codec) decode(b []byte) ([]byte, error) {
	if !bytes.HasPrefix(b, zstdMagic) {
		return b, nil
	}
	var h zstd.Header
	if err := h.Decode(b); err != nil {
		return nil, fmt.Errorf("zstd header: %w", err)
	}
	d := c.dplain
	if h.DictionaryID != 0 {
		c.mu.RLock()
		d = c.dec[h.DictionaryID]
		c.mu.RUnlock()
		if d == nil {
			return nil, fmt.Errorf("stored value needs unknown dictionary %d", h.DictionaryID)
		}
	}
	out, err := d.DecodeAll(b, nil)
	if err != nil {
		return nil, fmt.Errorf("zstd decode: %w", err)
	}
	return out, nil
}

// dictID reports the dictionary a stored value was compressed with (0: none or plain).
func dictID(b []byte) uint32 {
	if !bytes.HasPrefix(b, zstdMagic) {
		return 0
	}
	var h zstd.Header
	if err := h.Decode(b); err != nil {
		return 0
	}
	return h.DictionaryID
}

func (c *codec) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.enc {
		_ = e.Close()
	}
	for _, d := range c.dec {
		d.Close()
	}
	_ = c.plain.Close()
	c.dplain.Close()
}
