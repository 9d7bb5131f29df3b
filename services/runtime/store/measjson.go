package store

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/sensorgate/sensorgate/pkg/canon"
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

func (e *measEncoder) encode(dst []byte, ms []canon.Measurement) ([]byte, error) {
	dst = append(dst, '[')
	for i, m := range ms {
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
		dst = append(dst, '}')
	}
	return append(dst, ']'), nil
}
