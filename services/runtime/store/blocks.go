package store

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// blockReadings is the most readings one block holds. A block is compressed with one zstd
// encode against its format's dictionary (the per-call setup, which cost more than the
// compression itself when every reading was its own value, is paid once per block), and a
// latest-reading read decodes a whole block, so the size trades ingest CPU and bytes
// against that read: measured in docs/services.md. A variable so that the benchmark can
// compare sizes.
var blockReadings = 32

// overlapPack compresses blocks while the readings are written (true) or before (false,
// for the benchmark's comparison).
var overlapPack = true

// refShift splits a reading's block reference into the block id (high bits) and the
// reading's index in the block (low bits, so at most 256 readings a block).
const refShift = 8

func blockRef(id int64, idx int) int64 { return id<<refShift | int64(idx) }

func splitRef(ref int64) (id int64, idx int) { return ref >> refShift, int(ref & (1<<refShift - 1)) }

// tagBlockRef starts the measurements column of a reading whose values are in a block:
// tagBlockRef, then its reference (blockRef) as a uvarint. Stored measurements otherwise
// start with '[' (plain JSON) or a codec tag (0xff, 0xfe), never this byte.
const tagBlockRef = 0xfd

// setBlockRefs points each block's rows at it, once the blocks have their ids.
func setBlockRefs(blocks []block, rows []row) {
	buf := make([]byte, 0, 8*len(rows))
	for _, b := range blocks {
		for i, r := range b.rows {
			start := len(buf)
			buf = append(buf, tagBlockRef)
			buf = binary.AppendUvarint(buf, uint64(blockRef(b.id, i)))
			rows[r].measurements = buf[start:len(buf):len(buf)]
		}
	}
}

// parseBlockRef reads the block reference in a stored measurements value, if it is one.
func parseBlockRef(m []byte) (int64, bool) {
	if len(m) < 2 || m[0] != tagBlockRef {
		return 0, false
	}
	ref, n := binary.Uvarint(m[1:])
	if n <= 0 || ref == 0 {
		return 0, false
	}
	return int64(ref), true
}

// block is the stored form of consecutive readings of one station and source format in one
// calendar month (so that it lives in the monthly partition of its readings and is
// dropped with them): their measurements, and separately their raw fragments, each
// concatenated and compressed once.
type block struct {
	id           int64
	station      int32
	ts, tsLast   int64 // first and last reading's time, epoch ms
	measurements []byte
	rawFormat    *int32
	raw          []byte
	rows         []int // indexes of the readings (in the batch's rows) it holds, in order
}

// A plain block is its reading count (uvarint), each value's length (4 bytes little
// endian, so that values can be written straight after the header and their lengths
// filled in afterwards), then the values. A zero length is a missing value (a reading
// without a raw fragment).

// unpack slices the values out of a plain block without copying them. A missing value is
// nil.
func unpack(b []byte) ([][]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > 1<<refShift || uint64(len(b)-k) < 4*n {
		return nil, errors.New("block: bad header")
	}
	lens, body := b[k:k+4*int(n)], b[k+4*int(n):]
	parts := make([][]byte, n)
	for i := range parts {
		l := int(binary.LittleEndian.Uint32(lens[4*i:]))
		if l > len(body) {
			return nil, fmt.Errorf("block: value %d of %d bytes past the end", i, l)
		}
		if l > 0 {
			parts[i] = body[:l:l]
		}
		body = body[l:]
	}
	return parts, nil
}

// groupBlocks cuts rows (all new) into blocks: per station, source format and month, in
// time order, at most blockReadings each. Groups of a single reading are not blocks: that
// reading keeps its values inline in its row (the steady state of a live poll, where a
// block would only add a row and an index entry). It returns the blocks with their rows
// set, and the indexes of the inline rows.
func groupBlocks(rows []row) (blocks []block, inline []int) {
	type groupKey struct {
		station int32
		format  string
		month   int64
	}
	groups := map[groupKey][]int{}
	var order []groupKey
	for i := range rows {
		k := groupKey{rows[i].station, rows[i].format, monthStart(rows[i].ts).UnixMilli()}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	for _, k := range order {
		idx := groups[k]
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(rows[a].ts, rows[b].ts) })
		for len(idx) > 0 {
			n := min(len(idx), blockReadings)
			part := idx[:n:n]
			idx = idx[n:]
			if n == 1 {
				inline = append(inline, part[0])
				continue
			}
			blocks = append(blocks, block{station: k.station, ts: rows[part[0]].ts, tsLast: rows[part[n-1]].ts, rows: part})
		}
	}
	return blocks, inline
}

// packer encodes and compresses blocks and inline rows on one goroutine, reusing its
// buffers: the plain block is written once, straight from the observations (the
// measurements JSON is encoded into it, the raw fragments copied), and compressed output
// is cut from one growing arena instead of an allocation per value.
type packer struct {
	c       *codec
	me      *measEncoder
	plain   []byte
	scratch []byte
	arena   []byte
}

func newPacker(c *codec) *packer { return &packer{c: c, me: newMeasEncoder()} }

// keep copies b into the arena and returns the copy, capped.
func (p *packer) keep(b []byte) []byte {
	if cap(p.arena)-len(p.arena) < len(b) {
		p.arena = make([]byte, 0, max(256<<10, len(b)))
	}
	start := len(p.arena)
	p.arena = append(p.arena, b...)
	return p.arena[start:len(p.arena):len(p.arena)]
}

// header starts a plain block of n values and returns where its lengths go.
func (p *packer) header(n int) int {
	p.plain = binary.AppendUvarint(p.plain[:0], uint64(n))
	at := len(p.plain)
	for range 4 * n {
		p.plain = append(p.plain, 0)
	}
	return at
}

// block fills b's blobs from its rows.
func (p *packer) block(b *block, rows []row) error {
	at := p.header(len(b.rows))
	for i, r := range b.rows {
		start := len(p.plain)
		var err error
		if p.plain, err = p.me.encode(p.plain, rows[r].meas, rows[r].verdicts); err != nil {
			return fmt.Errorf("measurements at %d: %w", rows[r].ts, err)
		}
		binary.LittleEndian.PutUint32(p.plain[at+4*i:], uint32(len(p.plain)-start))
	}
	first := &rows[b.rows[0]]
	p.scratch = p.c.encodeBlock(first.mDict, p.plain, p.scratch[:0])
	b.measurements = p.keep(p.scratch)

	at = p.header(len(b.rows))
	hasRaw := false
	for i, r := range b.rows {
		raw := rows[r].rawPlain
		hasRaw = hasRaw || len(raw) > 0
		p.plain = append(p.plain, raw...)
		binary.LittleEndian.PutUint32(p.plain[at+4*i:], uint32(len(raw)))
	}
	if hasRaw {
		p.scratch = p.c.encodeBlock(first.rawDict, p.plain, p.scratch[:0])
		b.raw = p.keep(p.scratch)
		id := int32(first.rawDict)
		b.rawFormat = &id
	}
	return nil
}

// inline fills a row's own blobs, as every row was stored before blocks.
func (p *packer) inline(r *row) error {
	var err error
	if p.plain, err = p.me.encode(p.plain[:0], r.meas, r.verdicts); err != nil {
		return fmt.Errorf("measurements at %d: %w", r.ts, err)
	}
	p.scratch = p.c.encode(r.mDict, p.plain, p.scratch[:0])
	r.measurements = p.keep(p.scratch)
	if len(r.rawPlain) > 0 {
		p.scratch = p.c.encode(r.rawDict, r.rawPlain, p.scratch[:0])
		r.raw = p.keep(p.scratch)
		id := int32(r.rawDict)
		r.rawFormat = &id
	}
	return nil
}
