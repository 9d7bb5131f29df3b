package store

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/runtime/qc"
)

// measEncoder writes a []canon.Measurement exactly as encoding/json does, without
// reflection: it was a fifth of the ingest CPU. Strings (a few parameter ids and unit
// spellings) are escaped once and remembered.
type measEncoder struct {
	strs map[string][]byte
}

func newMeasEncoder() *measEncoder { return &measEncoder{strs: map[string][]byte{}} }

func (e *measEncoder) str(dst []byte, s string) []byte {
	q, ok := e.strs[s]
	if !ok {
		q, _ = json.Marshal(s)
		e.strs[s] = q
	}
	return append(dst, q...)
}

// appendFloat formats like encoding/json's floatEncoder for float64.
func appendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst) - start
		if n >= 4 && dst[len(dst)-4] == 'e' && dst[len(dst)-3] == '-' && dst[len(dst)-2] == '0' {
			dst[len(dst)-2] = dst[len(dst)-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}

// encode appends ms as JSON to dst. vs are the QARTOD tests' verdicts of ms (a row's
// verdicts), written as the qualities canon.Measurement.Mark would have left on them
// (qc.Verdict.Apply); nil writes each measurement's own QC.
func (e *measEncoder) encode(dst []byte, ms []canon.Measurement, vs []qc.Verdict) ([]byte, error) {
	dst = append(dst, '[')
	for i := range ms {
		m := &ms[i]
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || math.IsNaN(m.ValueOriginal) || math.IsInf(m.ValueOriginal, 0) {
			return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(m.Value, 'g', -1, 64)}
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"parameter":`...)
		dst = e.str(dst, m.Parameter)
		dst = append(dst, `,"value":`...)
		dst = appendFloat(dst, m.Value)
		dst = append(dst, `,"unit":`...)
		dst = e.str(dst, m.Unit)
		dst = append(dst, `,"unit_original":`...)
		dst = e.str(dst, m.UnitOriginal)
		dst = append(dst, `,"value_original":`...)
		dst = appendFloat(dst, m.ValueOriginal)
		var d qc.Verdict
		if vs != nil {
			d = vs[i]
		} else if m.QC == nil {
			dst = append(dst, '}')
			continue // no quality: a reading stored with the tests off
		}
		dst = e.quality(dst, m, d)
		dst = append(dst, '}')
	}
	return append(dst, ']'), nil
}

// quality appends m's quality once the tests gave it d: the flag (package store's
// quality), then the names that set it, the provider's marks first and then the tests
// that flagged it, each once, as Mark appends them.
func (e *measEncoder) quality(dst []byte, m *canon.Measurement, d qc.Verdict) []byte {
	flag := quality(m, d)
	var provider []string
	if m.QC != nil {
		provider = m.QC.Failed
	}
	if flag == canon.FlagPass && len(provider) == 0 && d.Failed == 0 {
		return append(dst, qcPass...) // most values: one copy
	}
	dst = append(dst, `,"qc":{"flag":`...)
	dst = strconv.AppendInt(dst, int64(flag), 10)
	dst = append(dst, `,"failed":[`...)
	n := 0
	for _, name := range provider {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = e.str(dst, name)
		n++
	}
	for i, name := range qc.Tests {
		if d.Failed&(1<<i) == 0 || slices.Contains(provider, name) {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = e.str(dst, name)
		n++
	}
	return append(dst, "]}"...)
}

// qcPass is a passed value's quality as measEncoder writes it.
const qcPass = `,"qc":{"flag":1,"failed":[]}`

// qcKey is how a stored measurement's quality starts (measEncoder's shape).
var qcKey = []byte(`"qc":`)

// notEvaluated is the quality of a value stored before flags were.
const notEvaluated = `,"qc":{"flag":2,"failed":[]}`

// withQC gives every measurement of the stored JSON b a quality: readings stored before
// the QARTOD tests ran have none, and every answer carries one (flag 2, not evaluated).
// The check is one byte search; only such old readings are rewritten, at read time,
// rather than rewriting every stored row in a migration.
func withQC(b []byte) []byte {
	if len(b) <= 2 || bytes.Contains(b, qcKey) {
		return b
	}
	out := make([]byte, 0, len(b)+8*len(notEvaluated))
	depth, inStr := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr:
			if c == '\\' {
				out = append(out, c)
				i++
				if i < len(b) {
					out = append(out, b[i])
				}
				continue
			}
			if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if c == '}' && depth == 2 {
				out = append(out, notEvaluated...)
			}
			depth--
		}
		out = append(out, c)
	}
	return out
}

// MeasDecoder reads the measurements JSON the store wrote (measEncoder's exact shape)
// without reflection: the CSV export and the raw aggregates decode every reading, and
// encoding/json's reflection was most of their CPU (docs/services.md "Scale"). Anything
// else (another key order, an escaped string) goes through encoding/json, so the answer
// is the same for any valid input. Parameter and unit strings are interned: a decoder
// holds a few dozen. Not safe for concurrent use; one per request or scan.
type MeasDecoder struct {
	strs map[string]string
	// qcs interns qualities by their stored bytes: a store holds a few dozen distinct
	// ones, so decoding a measurement's quality allocates nothing. Decoded QC values are
	// shared between measurements: read-only.
	qcs map[string]*canon.QC
}

// NewMeasDecoder returns a decoder with an empty string table.
func NewMeasDecoder() *MeasDecoder {
	return &MeasDecoder{strs: map[string]string{}, qcs: map[string]*canon.QC{}}
}

// qc reads an optional `,"qc":{...}` (absent in readings stored before flags were: nil).
func (p *measParser) qc(out **canon.QC) bool {
	if !p.lit(`,"qc":`) {
		return true
	}
	start := p.i
	end := bytes.IndexByte(p.b[p.i:], '}')
	if end < 0 {
		return false
	}
	raw := p.b[start : start+end+1]
	if q, ok := p.d.qcs[string(raw)]; ok {
		*out = q
		p.i = start + end + 1
		return true
	}
	q := new(canon.QC)
	if !p.lit(`{"flag":`) {
		return false
	}
	var f float64
	if !p.num(&f) || !p.lit(`,"failed":[`) {
		return false
	}
	q.Flag = int(f)
	q.Failed = []string{}
	for !p.lit("]") {
		if len(q.Failed) > 0 && !p.lit(",") {
			return false
		}
		var name string
		if !p.str(&name) {
			return false
		}
		q.Failed = append(q.Failed, name)
	}
	if !p.lit("}") || p.i != start+end+1 {
		return false
	}
	p.d.qcs[string(raw)] = q
	*out = q
	return true
}

// Decode appends the measurements of b to dst[:0].
func (d *MeasDecoder) Decode(dst []canon.Measurement, b []byte) ([]canon.Measurement, error) {
	if ms, ok := d.fast(dst[:0], b); ok {
		return ms, nil
	}
	var out []canon.Measurement
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return append(dst[:0], out...), nil
}

// fast parses the encoder's shape; ok is false at the first byte it does not expect.
func (d *MeasDecoder) fast(dst []canon.Measurement, b []byte) ([]canon.Measurement, bool) {
	p := measParser{b: b, d: d}
	if !p.lit("[") {
		return nil, false
	}
	if p.lit("]") {
		return dst, p.end()
	}
	for {
		var m canon.Measurement
		ok := p.lit(`{"parameter":`) && p.str(&m.Parameter) &&
			p.lit(`,"value":`) && p.num(&m.Value) &&
			p.lit(`,"unit":`) && p.str(&m.Unit) &&
			p.lit(`,"unit_original":`) && p.str(&m.UnitOriginal) &&
			p.lit(`,"value_original":`) && p.num(&m.ValueOriginal) && p.qc(&m.QC) && p.lit("}")
		if !ok {
			return nil, false
		}
		dst = append(dst, m)
		if p.lit("]") {
			return dst, p.end()
		}
		if !p.lit(",") {
			return nil, false
		}
	}
}

type measParser struct {
	b []byte
	i int
	d *MeasDecoder
}

func (p *measParser) end() bool { return p.i == len(p.b) }

func (p *measParser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// str reads a string without escapes (an escape sends the reading to encoding/json).
func (p *measParser) str(out *string) bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			raw := p.b[start:j]
			s, ok := p.d.strs[string(raw)]
			if !ok {
				if !utf8.Valid(raw) {
					return false
				}
				s = string(raw)
				p.d.strs[s] = s
			}
			*out = s
			p.i = j + 1
			return true
		case c == '\\' || c < 0x20:
			return false
		}
	}
	return false
}

// num reads a JSON number.
func (p *measParser) num(out *float64) bool {
	j := numberEnd(p.b, p.i)
	if j == p.i {
		return false
	}
	v, err := strconv.ParseFloat(unsafeString(p.b[p.i:j]), 64)
	if err != nil {
		return false
	}
	*out = v
	p.i = j
	return true
}

// numberEnd is where the JSON number that starts at b[i] ends (the bytes a number may
// hold; ParseFloat checks their order).
func numberEnd(b []byte, i int) int {
	for i < len(b) {
		if c := b[i]; (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			i++
			continue
		}
		break
	}
	return i
}

// unsafeString views b as a string for strconv, which does not keep it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// RawMeasurement is one measurement of the stored JSON as its bytes: the strings without
// their quotes (no escapes in them, valid UTF-8) and the numbers as spelled, all slices
// of the decoded value (valid while the reading is).
type RawMeasurement struct {
	Parameter, Unit, UnitOriginal []byte
	Value, ValueOriginal          []byte
	// Flag is the QARTOD flag (2 for a value stored before flags were); Failed the
	// stored JSON array of the names that set it (nil when absent).
	Flag   int
	Failed []byte
}

// DecodeRawMeasurements appends the measurements of b to dst[:0] as their bytes, for the
// CSV export, which writes the stored numbers' text when it is already the CSV's
// (formats.AppendNumber) instead of parsing and formatting every value. ok is false when b
// is not the encoder's exact shape (an escape, another key order, invalid UTF-8): then
// MeasDecoder.Decode reads it. Safe for concurrent use.
func DecodeRawMeasurements(dst []RawMeasurement, b []byte) ([]RawMeasurement, bool) {
	dst = dst[:0]
	p := rawParser{b: b}
	if !p.lit("[") {
		return nil, false
	}
	if p.lit("]") {
		return dst, p.i == len(b)
	}
	for {
		var m RawMeasurement
		ok := p.lit(`{"parameter":`) && p.str(&m.Parameter) &&
			p.lit(`,"value":`) && p.num(&m.Value) &&
			p.lit(`,"unit":`) && p.str(&m.Unit) &&
			p.lit(`,"unit_original":`) && p.str(&m.UnitOriginal) &&
			p.lit(`,"value_original":`) && p.num(&m.ValueOriginal) && p.qc(&m) && p.lit("}")
		if !ok {
			return nil, false
		}
		dst = append(dst, m)
		if p.lit("]") {
			return dst, p.i == len(b)
		}
		if !p.lit(",") {
			return nil, false
		}
	}
}

// rawParser is measParser without the string table and the number parse.
type rawParser struct {
	b []byte
	i int
}

func (p *rawParser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

func (p *rawParser) str(out *[]byte) bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	start, ascii := p.i+1, true
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			raw := p.b[start:j]
			if !ascii && !utf8.Valid(raw) {
				return false
			}
			*out = raw
			p.i = j + 1
			return true
		case c == '\\' || c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return false
}

// qc reads an optional quality into m's Flag and Failed (absent: flag 2).
func (p *rawParser) qc(m *RawMeasurement) bool {
	m.Flag = canon.FlagNotEvaluated
	if !p.lit(`,"qc":{"flag":`) {
		return true
	}
	var f []byte
	if !p.num(&f) || len(f) != 1 || f[0] < '0' || f[0] > '9' || !p.lit(`,"failed":`) {
		return false
	}
	m.Flag = int(f[0] - '0')
	end := bytes.IndexByte(p.b[p.i:], ']')
	if end < 0 {
		return false
	}
	m.Failed = p.b[p.i : p.i+end+1]
	p.i += end + 1
	return p.lit("}")
}

// num takes the bytes measParser.num would parse (the caller parses or copies them).
func (p *rawParser) num(out *[]byte) bool {
	j := numberEnd(p.b, p.i)
	if j == p.i {
		return false
	}
	*out = p.b[p.i:j]
	p.i = j
	return true
}
