package contract

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sensorgate/sensorgate/pkg/jsonbytes"
)

// The batched latest answer is the bulk of an area-latest request on both sides: a
// service writes up to 5,000 items of measurements and the gateway reads them back. With
// encoding/json both sides spent most of their CPU there (the service compacting and
// re-validating every json.RawMessage, the gateway validating the whole body and then
// decoding it by reflection; docs/live.md, "Area latest"). AppendLatestBatch and
// DecodeLatestBatch do the same work directly, with the same bytes and the same results.

// AppendLatestBatch appends r as JSON, byte for byte what json.Marshal(r) gives, and
// fails where json.Marshal fails (a measurements value that is not JSON).
func AppendLatestBatch(b []byte, r *LatestBatchResponse) ([]byte, error) {
	b = append(b, `{"service_id":`...)
	b = jsonbytes.AppendString(b, r.ServiceID)
	b = append(b, `,"server_time":`...)
	b = appendTime(b, r.ServerTime)
	b = append(b, `,"items":`...)
	if r.Items == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Items {
			it := &r.Items[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"external_id":`...)
			b = jsonbytes.AppendString(b, it.ExternalID)
			b = append(b, `,"reporting_interval_s":`...)
			b = strconv.AppendInt(b, int64(it.ReportingIntervalS), 10)
			b = append(b, `,"timestamp":`...)
			b = appendOptTime(b, it.Timestamp)
			b = append(b, `,"fetched_at":`...)
			b = appendOptTime(b, it.FetchedAt)
			b = append(b, `,"measurements":`...)
			if it.Measurements == nil {
				b = append(b, "null"...)
			} else {
				if !jsonbytes.Valid(it.Measurements) {
					_, err := json.Marshal(r) // its error names the value
					if err == nil {
						err = errInvalidRaw
					}
					return nil, err
				}
				b = jsonbytes.AppendCompact(b, it.Measurements)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

var errInvalidRaw = errors.New("invalid JSON in measurements")

// appendTime appends t quoted, as Time's MarshalJSON writes it.
func appendTime(b []byte, t Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeLayout)
	return append(b, '"')
}

func appendOptTime(b []byte, t *Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendTime(b, *t)
}

// DecodeLatestBatch sets *r from data as json.Unmarshal(data, r) does into a zero
// LatestBatchResponse. The form AppendLatestBatch writes is read directly, each
// measurements value checked as JSON and kept as a slice of data (not copied: data must
// not change afterwards); any other form goes through encoding/json.
func DecodeLatestBatch(data []byte, r *LatestBatchResponse) error {
	if out, ok := decodeLatestBatch(data); ok {
		*r = out
		return nil
	}
	*r = LatestBatchResponse{}
	return json.Unmarshal(data, r)
}

// decodeJSON lets Client.do read a batched latest answer with DecodeLatestBatch.
func (r *LatestBatchResponse) decodeJSON(data []byte) error { return DecodeLatestBatch(data, r) }

// latestReader reads AppendLatestBatch's exact form; any surprise gives up (ok false).
type latestReader struct {
	b  []byte
	i  int
	ok bool
}

func decodeLatestBatch(data []byte) (LatestBatchResponse, bool) {
	var out LatestBatchResponse
	d := latestReader{b: data, ok: true}
	d.lit(`{"service_id":`)
	out.ServiceID = d.str()
	d.lit(`,"server_time":`)
	if t := d.optTime(); t != nil {
		out.ServerTime = *t
	} else {
		d.ok = false
	}
	d.lit(`,"items":[`)
	if !d.ok {
		return out, false
	}
	// A first guess at the item count keeps the slice from growing many times.
	out.Items = make([]LatestItem, 0, min(MaxLatestBatch, len(data)/256+1))
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
	} else {
		for d.ok {
			var it LatestItem
			d.lit(`{"external_id":`)
			it.ExternalID = d.str()
			d.lit(`,"reporting_interval_s":`)
			it.ReportingIntervalS = d.int()
			d.lit(`,"timestamp":`)
			it.Timestamp = d.optTime()
			d.lit(`,"fetched_at":`)
			it.FetchedAt = d.optTime()
			d.lit(`,"measurements":`)
			it.Measurements = d.raw()
			d.lit(`}`)
			out.Items = append(out.Items, it)
			if d.ok && d.i < len(d.b) && d.b[d.i] == ',' {
				d.i++
				continue
			}
			d.lit(`]`)
			break
		}
	}
	d.lit(`}`)
	return out, d.ok && d.i == len(d.b)
}

func (d *latestReader) lit(s string) {
	if !d.ok || len(d.b)-d.i < len(s) || string(d.b[d.i:d.i+len(s)]) != s {
		d.ok = false
		return
	}
	d.i += len(s)
}

// str reads a string without escapes (the form of every id; names such as "BR:São
// Paulo ..." are UTF-8, which encoding/json keeps as it is when it is valid).
func (d *latestReader) str() string {
	if !d.ok || d.i >= len(d.b) || d.b[d.i] != '"' {
		d.ok = false
		return ""
	}
	ascii := true
	for j := d.i + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			v := d.b[d.i+1 : j]
			if !ascii && !utf8.Valid(v) {
				d.ok = false // encoding/json writes U+FFFD for the bad bytes
				return ""
			}
			d.i = j + 1
			return string(v)
		case c < 0x20 || c == '\\':
			d.ok = false
			return ""
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	d.ok = false
	return ""
}

// int reads an integer that fits an int, as encoding/json does into an int field.
func (d *latestReader) int() int {
	if !d.ok {
		return 0
	}
	j := d.i
	if j < len(d.b) && d.b[j] == '-' {
		j++
	}
	for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
		j++
	}
	end, ok := jsonbytes.SkipValue(d.b, d.i)
	if !ok || end != j {
		d.ok = false // not a plain integer (a fraction, an exponent, not a number)
		return 0
	}
	n, err := strconv.Atoi(string(d.b[d.i:j]))
	if err != nil {
		d.ok = false
		return 0
	}
	d.i = j
	return n
}

// optTime reads null (nil) or a time string as Time.UnmarshalJSON does.
func (d *latestReader) optTime() *Time {
	if !d.ok {
		return nil
	}
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return nil
	}
	s := d.str()
	if !d.ok {
		return nil
	}
	if s == "" || s == "null" {
		return &Time{}
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		d.ok = false // encoding/json gives the error
		return nil
	}
	return &Time{Time: v.UTC()}
}

// raw reads any JSON value, checked, as a slice of the input.
func (d *latestReader) raw() json.RawMessage {
	if !d.ok {
		return nil
	}
	end, ok := jsonbytes.SkipValue(d.b, d.i)
	if !ok {
		d.ok = false
		return nil
	}
	v := d.b[d.i:end:end]
	d.i = end
	return v
}
