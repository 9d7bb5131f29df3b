// Package netcdf writes netCDF classic files in the 64-bit offset variant (CDF-2, the
// "NetCDF Classic Format Specification" of Unidata), which every netCDF reader opens:
// ncdump, the netCDF-C and netCDF-Java libraries, netCDF4-python and xarray. No pure-Go
// writer of the format was sound enough to take (docs/formats.md), and the format is
// short: a header naming dimensions, attributes and variables with the offset of each
// variable's data, then the fixed-size variables, then the records of the variables that
// run along the one unlimited (record) dimension, interleaved record by record.
//
// The writer streams: the caller gives the whole header first, with the number of
// records it will write, then the fixed variables in header order, then the records one
// at a time; nothing but one record is held in memory. The number of records must be
// known up front (the header carries it); a caller that learns it only at the end spools
// its data first (gateway/export does).
package netcdf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unicode/utf8"
)

// Type is a netCDF classic external data type.
type Type int32

// The classic types (NC_BYTE .. NC_DOUBLE).
const (
	Byte   Type = 1 // signed 8-bit integer
	Char   Type = 2 // 8-bit character (text)
	Short  Type = 3
	Int    Type = 4
	Float  Type = 5
	Double Type = 6
)

// Size is the size in bytes of one value of t.
func (t Type) Size() int {
	switch t {
	case Byte, Char:
		return 1
	case Short:
		return 2
	case Int, Float:
		return 4
	case Double:
		return 8
	}
	return 0
}

// Fill values the netCDF library uses for data never written (NC_FILL_*); a variable's
// own _FillValue attribute overrides them.
const (
	FillByte   int8    = -127
	FillInt    int32   = -2147483647
	FillDouble float64 = 9.9692099683868690e+36
)

// Tags of the header's lists.
const (
	tagDimension = 0x0A
	tagVariable  = 0x0B
	tagAttribute = 0x0C
)

// Dim is a dimension; Len 0 makes it the record (unlimited) dimension, of which a file
// has at most one.
type Dim struct {
	Name string
	Len  int
}

// Attr is an attribute. Value is a string (Char), or an int8, int16, int32, float32 or
// float64, or a slice of one of those (an attribute holds a list of one type).
type Attr struct {
	Name  string
	Value any
}

// Var is a variable over the named dimensions (the record dimension, if any, first).
type Var struct {
	Name  string
	Type  Type
	Dims  []string
	Attrs []Attr
}

// Header describes a whole file.
type Header struct {
	Dims    []Dim
	Attrs   []Attr // global attributes
	Vars    []Var
	NumRecs int // records the caller will write
}

// layout is a header's computed sizes and offsets.
type layout struct {
	dimIdx    map[string]int
	recDim    int // -1: none
	vsize     []int64
	begin     []int64
	isRec     []bool
	recVars   []int // indexes of record variables, in header order
	recOff    []int // each record variable's offset within a record
	recSize   int64
	headerLen int64
	size      int64 // of the whole file
}

// Size returns the size in bytes of the file h describes.
func (h *Header) Size() (int64, error) {
	l, err := h.layout()
	if err != nil {
		return 0, err
	}
	return l.size, nil
}

func pad4(n int64) int64 { return (n + 3) &^ 3 }

func (h *Header) layout() (*layout, error) {
	l := &layout{dimIdx: map[string]int{}, recDim: -1}
	for i, d := range h.Dims {
		if err := checkName(d.Name); err != nil {
			return nil, fmt.Errorf("dimension %d: %w", i, err)
		}
		if _, dup := l.dimIdx[d.Name]; dup {
			return nil, fmt.Errorf("dimension %q declared twice", d.Name)
		}
		if d.Len < 0 {
			return nil, fmt.Errorf("dimension %q: negative length", d.Name)
		}
		if d.Len == 0 {
			if l.recDim >= 0 {
				return nil, fmt.Errorf("dimension %q: a classic file has one record dimension, %q is already", d.Name, h.Dims[l.recDim].Name)
			}
			l.recDim = i
		}
		l.dimIdx[d.Name] = i
	}
	if h.NumRecs < 0 || int64(h.NumRecs) > math.MaxUint32-1 {
		return nil, fmt.Errorf("numrecs %d out of range", h.NumRecs)
	}
	if err := checkAttrs(h.Attrs); err != nil {
		return nil, fmt.Errorf("global attributes: %w", err)
	}
	n := len(h.Vars)
	l.vsize, l.begin, l.isRec = make([]int64, n), make([]int64, n), make([]bool, n)
	seen := map[string]bool{}
	for i, v := range h.Vars {
		if err := checkName(v.Name); err != nil {
			return nil, fmt.Errorf("variable %d: %w", i, err)
		}
		if seen[v.Name] {
			return nil, fmt.Errorf("variable %q declared twice", v.Name)
		}
		seen[v.Name] = true
		if v.Type.Size() == 0 {
			return nil, fmt.Errorf("variable %q: unknown type %d", v.Name, v.Type)
		}
		if err := checkAttrs(v.Attrs); err != nil {
			return nil, fmt.Errorf("variable %q: %w", v.Name, err)
		}
		size := int64(v.Type.Size())
		for j, dn := range v.Dims {
			di, ok := l.dimIdx[dn]
			if !ok {
				return nil, fmt.Errorf("variable %q: no dimension %q", v.Name, dn)
			}
			if di == l.recDim {
				if j != 0 {
					return nil, fmt.Errorf("variable %q: the record dimension must come first", v.Name)
				}
				l.isRec[i] = true
				continue
			}
			size *= int64(h.Dims[di].Len)
		}
		l.vsize[i] = pad4(size)
		if l.isRec[i] {
			l.recVars = append(l.recVars, i)
		}
	}
	l.headerLen = h.encodedLen()
	off := l.headerLen
	for i := range h.Vars {
		if !l.isRec[i] {
			l.begin[i] = off
			off += l.vsize[i]
		}
	}
	recStart := off
	for _, i := range l.recVars {
		l.begin[i] = recStart + l.recSize
		l.recOff = append(l.recOff, int(l.recSize))
		l.recSize += l.vsize[i]
	}
	if len(l.recVars) == 1 {
		// The one exception of the format: a single record variable is not padded.
		v := h.Vars[l.recVars[0]]
		l.recSize = int64(v.Type.Size())
		for _, dn := range v.Dims[1:] {
			l.recSize *= int64(h.Dims[l.dimIdx[dn]].Len)
		}
	}
	if l.recSize > math.MaxUint32 {
		return nil, errors.New("a record is larger than 4 GiB")
	}
	l.size = recStart + int64(h.NumRecs)*l.recSize
	return l, nil
}

// checkName applies the format's rule for names: UTF-8, a letter, digit or underscore
// first, no '/' and no control characters, no trailing space.
func checkName(s string) error {
	if s == "" || !utf8.ValidString(s) {
		return fmt.Errorf("name %q is empty or not UTF-8", s)
	}
	for i, r := range s {
		switch {
		case r < 0x20 || r == 0x7f || r == '/':
			return fmt.Errorf("name %q has a character the format forbids", s)
		case i == 0 && !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 0x7f):
			return fmt.Errorf("name %q must start with a letter, digit or underscore", s)
		}
	}
	if s[len(s)-1] == ' ' {
		return fmt.Errorf("name %q ends in a space", s)
	}
	return nil
}

func checkAttrs(as []Attr) error {
	seen := map[string]bool{}
	for _, a := range as {
		if err := checkName(a.Name); err != nil {
			return fmt.Errorf("attribute: %w", err)
		}
		if seen[a.Name] {
			return fmt.Errorf("attribute %q given twice", a.Name)
		}
		seen[a.Name] = true
		if _, _, _, err := attrValues(a.Value); err != nil {
			return fmt.Errorf("attribute %q: %w", a.Name, err)
		}
	}
	return nil
}

// attrValues encodes an attribute's value: its type, count and big-endian bytes (unpadded).
func attrValues(v any) (Type, int, []byte, error) {
	be := binary.BigEndian
	switch x := v.(type) {
	case string:
		return Char, len(x), []byte(x), nil
	case int8:
		return Byte, 1, []byte{byte(x)}, nil
	case []int8:
		b := make([]byte, len(x))
		for i, e := range x {
			b[i] = byte(e)
		}
		return Byte, len(x), b, nil
	case int16:
		return attrValues([]int16{x})
	case []int16:
		b := make([]byte, 0, 2*len(x))
		for _, e := range x {
			b = be.AppendUint16(b, uint16(e))
		}
		return Short, len(x), b, nil
	case int32:
		return attrValues([]int32{x})
	case []int32:
		b := make([]byte, 0, 4*len(x))
		for _, e := range x {
			b = be.AppendUint32(b, uint32(e))
		}
		return Int, len(x), b, nil
	case float32:
		return attrValues([]float32{x})
	case []float32:
		b := make([]byte, 0, 4*len(x))
		for _, e := range x {
			b = be.AppendUint32(b, math.Float32bits(e))
		}
		return Float, len(x), b, nil
	case float64:
		return attrValues([]float64{x})
	case []float64:
		b := make([]byte, 0, 8*len(x))
		for _, e := range x {
			b = be.AppendUint64(b, math.Float64bits(e))
		}
		return Double, len(x), b, nil
	}
	return 0, 0, nil, fmt.Errorf("value of type %T: want a string, or int8, int16, int32, float32, float64 or a slice of one", v)
}

// enc builds a header's bytes.
type enc struct{ b []byte }

func (e *enc) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *enc) padded(p []byte) {
	e.b = append(e.b, p...)
	for len(e.b)%4 != 0 {
		e.b = append(e.b, 0)
	}
}
func (e *enc) name(s string) { e.u32(uint32(len(s))); e.padded([]byte(s)) }

func (e *enc) attrs(as []Attr) {
	if len(as) == 0 {
		e.u32(0)
		e.u32(0)
		return
	}
	e.u32(tagAttribute)
	e.u32(uint32(len(as)))
	for _, a := range as {
		t, n, b, _ := attrValues(a.Value)
		e.name(a.Name)
		e.u32(uint32(t))
		e.u32(uint32(n))
		e.padded(b)
	}
}

// encode writes the header with the given layout (nil: zero offsets, for measuring).
func (h *Header) encode(l *layout) []byte {
	e := &enc{}
	e.b = append(e.b, 'C', 'D', 'F', 2)
	e.u32(uint32(h.NumRecs))
	if len(h.Dims) == 0 {
		e.u32(0)
		e.u32(0)
	} else {
		e.u32(tagDimension)
		e.u32(uint32(len(h.Dims)))
		for _, d := range h.Dims {
			e.name(d.Name)
			e.u32(uint32(d.Len))
		}
	}
	e.attrs(h.Attrs)
	if len(h.Vars) == 0 {
		e.u32(0)
		e.u32(0)
	} else {
		e.u32(tagVariable)
		e.u32(uint32(len(h.Vars)))
		dimIdx := map[string]int{}
		for i, d := range h.Dims {
			dimIdx[d.Name] = i
		}
		for i, v := range h.Vars {
			e.name(v.Name)
			e.u32(uint32(len(v.Dims)))
			for _, dn := range v.Dims {
				e.u32(uint32(dimIdx[dn]))
			}
			e.attrs(v.Attrs)
			e.u32(uint32(v.Type))
			var vsize, begin int64
			if l != nil {
				vsize, begin = l.vsize[i], l.begin[i]
			}
			// vsize is 32 bits; a larger fixed variable is legal (the last one) and
			// readers recompute it, so it saturates as netCDF-C writes it.
			e.u32(uint32(min(vsize, math.MaxUint32)))
			e.u64(uint64(begin))
		}
	}
	return e.b
}

func (h *Header) encodedLen() int64 { return int64(len(h.encode(nil))) }

// Writer writes one file: the header at NewWriter, then each fixed variable (Fixed, in
// header order), then NumRecs records (Record), then Close.
type Writer struct {
	w       *bufio.Writer
	h       *Header
	l       *layout
	next    int // the next fixed variable to write
	recs    int
	written int64
}

// NewWriter checks h, writes its header to w and returns the writer of the data.
func NewWriter(w io.Writer, h *Header) (*Writer, error) {
	l, err := h.layout()
	if err != nil {
		return nil, err
	}
	wr := &Writer{w: bufio.NewWriterSize(w, 64<<10), h: h, l: l}
	b := h.encode(l)
	if int64(len(b)) != l.headerLen {
		return nil, fmt.Errorf("netcdf: header is %d bytes, laid out for %d", len(b), l.headerLen)
	}
	if _, err := wr.w.Write(b); err != nil {
		return nil, err
	}
	wr.written = int64(len(b))
	wr.skipRec()
	return wr, nil
}

func (w *Writer) skipRec() {
	for w.next < len(w.h.Vars) && w.l.isRec[w.next] {
		w.next++
	}
}

// Fixed writes the data of the next fixed-size variable, which must be named name: a
// []int8 (Byte), string (Char, padded with NULs to the variable's size), []int16,
// []int32, []float32 or []float64 of exactly the variable's length.
func (w *Writer) Fixed(name string, data any) error {
	if w.next >= len(w.h.Vars) {
		return fmt.Errorf("netcdf: fixed variable %q: all were written", name)
	}
	i := w.next
	v := w.h.Vars[i]
	if v.Name != name {
		return fmt.Errorf("netcdf: fixed variable %q written where %q comes", name, v.Name)
	}
	want := w.l.vsize[i]
	var b []byte
	if s, ok := data.(string); ok && v.Type == Char {
		b = []byte(s)
		unpadded := int64(1)
		for _, dn := range v.Dims {
			unpadded *= int64(w.h.Dims[w.l.dimIdx[dn]].Len)
		}
		if int64(len(b)) > unpadded {
			return fmt.Errorf("netcdf: %q: %d characters for %d places", name, len(b), unpadded)
		}
		b = append(b, make([]byte, unpadded-int64(len(b)))...)
	} else {
		t, _, enc, err := attrValues(data)
		if err != nil || t != v.Type {
			return fmt.Errorf("netcdf: %q: data of type %T for a variable of type %d", name, data, v.Type)
		}
		b = enc
	}
	if pad4(int64(len(b))) != want {
		return fmt.Errorf("netcdf: %q: %d bytes of data for %d", name, len(b), want)
	}
	for int64(len(b)) < want {
		b = append(b, 0)
	}
	if _, err := w.w.Write(b); err != nil {
		return err
	}
	w.written += want
	w.next++
	w.skipRec()
	return nil
}

// NewRecord returns a record to fill and pass to Record, reusable from one to the next.
// Its values are zero until set.
func (w *Writer) NewRecord() *Record {
	r := &Record{b: make([]byte, w.l.recSize), off: w.l.recOff, types: make([]Type, len(w.l.recVars))}
	for j, i := range w.l.recVars {
		r.types[j] = w.h.Vars[i].Type
	}
	return r
}

// Record writes one record; every fixed variable must have been written.
func (w *Writer) Record(r *Record) error {
	if w.next < len(w.h.Vars) {
		return fmt.Errorf("netcdf: record written before fixed variable %q", w.h.Vars[w.next].Name)
	}
	if w.recs >= w.h.NumRecs {
		return fmt.Errorf("netcdf: more than the %d records the header announced", w.h.NumRecs)
	}
	if _, err := w.w.Write(r.b); err != nil {
		return err
	}
	w.recs++
	w.written += int64(len(r.b))
	return nil
}

// Close flushes the file, reporting an error when fewer data than the header announced
// were written (the file would be truncated).
func (w *Writer) Close() error {
	if err := w.w.Flush(); err != nil {
		return err
	}
	if w.next < len(w.h.Vars) {
		return fmt.Errorf("netcdf: fixed variable %q was not written", w.h.Vars[w.next].Name)
	}
	if w.recs != w.h.NumRecs {
		return fmt.Errorf("netcdf: %d records written, the header announced %d", w.recs, w.h.NumRecs)
	}
	if w.written != w.l.size {
		return fmt.Errorf("netcdf: %d bytes written, laid out %d", w.written, w.l.size)
	}
	return nil
}

// Record is one record's bytes: a scalar value per record variable (index j among the
// record variables, in header order).
type Record struct {
	b     []byte
	off   []int
	types []Type
}

// SetByte sets record variable j, of type Byte.
func (r *Record) SetByte(j int, v int8) { r.check(j, Byte); r.b[r.off[j]] = byte(v) }

// SetInt sets record variable j, of type Int.
func (r *Record) SetInt(j int, v int32) {
	r.check(j, Int)
	binary.BigEndian.PutUint32(r.b[r.off[j]:], uint32(v))
}

// SetFloat sets record variable j, of type Float.
func (r *Record) SetFloat(j int, v float32) {
	r.check(j, Float)
	binary.BigEndian.PutUint32(r.b[r.off[j]:], math.Float32bits(v))
}

// SetDouble sets record variable j, of type Double.
func (r *Record) SetDouble(j int, v float64) {
	r.check(j, Double)
	binary.BigEndian.PutUint64(r.b[r.off[j]:], math.Float64bits(v))
}

// check panics on a programming error: a value of the wrong type for its variable.
func (r *Record) check(j int, t Type) {
	if r.types[j] != t {
		panic(fmt.Sprintf("netcdf: record variable %d is of type %d, set as %d", j, r.types[j], t))
	}
}
