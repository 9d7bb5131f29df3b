package httpapi

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/pkg/jsonbytes"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// flushEvery is how many readings an export writes between flushes to the client, and
// exportWriteWindow how long the client has to take what was flushed.
const (
	flushEvery        = 1000
	exportWriteWindow = time.Minute
)

// export answers GET /v1/readings/export: every reading of the stations named (in that
// order, each by time) in the range, as CSV (long form) or NDJSON, written as the store
// reads them a chunk at a time, so the service's memory stays flat whatever the size. A
// client that goes away cancels the request's context, which stops the store's scan at
// its next chunk. A station the service does not know is skipped (the gateway's catalog
// may be a sync behind). The gateway charges the key's budget as it passes rows on.
func (s *Server) export() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query()
		q, err := contract.ParseExportQuery(v, s.d.Now())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		stations := v["station"]
		if len(stations) == 0 || len(stations) > contract.MaxExportSensors {
			s.fail(w, r, apierr.Invalid("station", "want 1 to %d station parameters, got %d", contract.MaxExportSensors, len(stations)))
			return
		}
		f, err := formats.Negotiate(v, r.Header.Get("Accept"), formats.NDJSON, formats.CSV)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		header := v.Get("header") != "false"
		formats.SetHeaders(w.Header(), f, "export")
		w.WriteHeader(http.StatusOK)
		// The server's write deadline is for answers of one page; an export moves it
		// forward at every flush instead, so only a client that stops reading is cut off.
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Now().Add(exportWriteWindow))
		flush := func() {
			_ = rc.Flush()
			_ = rc.SetWriteDeadline(time.Now().Add(exportWriteWindow))
		}
		var rows exportWriter
		if f == formats.CSV {
			rows = newCSVExport(w, header, q.Lineage)
		} else {
			rows = &ndjsonExport{w: formats.NewNDJSONSize(w, exportBuffer)}
		}
		rq := contract.ReadingsQuery{Parameters: q.Parameters, Format: contract.FormatCleaned, Lineage: q.Lineage}
		n := 0
		for _, id := range stations {
			st, err := s.d.Store.Station(r.Context(), id)
			if errors.Is(err, store.ErrStationNotFound) {
				continue
			}
			if err == nil {
				sensorID := ids.Sensor(s.d.Meta.ID, st.ExternalID).String()
				// CSV rows do not show the reading id: it is not derived for them.
				sq := store.ScanQuery{Since: q.Since, Until: q.Until, SkipIDs: f == formats.CSV}
				err = s.d.Store.Scan(r.Context(), st.ExternalID, sq, func(rd store.Reading) error {
					if err := rows.reading(sensorID, st, rd, rq); err != nil {
						return err
					}
					if n++; n%flushEvery == 0 {
						if err := rows.flush(); err != nil {
							return err
						}
						flush()
					}
					return nil
				})
			}
			if err != nil {
				// The status is out: the answer ends short. The gateway sees no final
				// newline-terminated end and says so to its client.
				if r.Context().Err() == nil {
					s.d.Logger.Error("export", "station", id, "err", err)
					_ = rows.fail(fmt.Sprintf("export incomplete after %d readings: reading station %s failed", n, id))
					flush()
				}
				return
			}
		}
		if err := rows.flush(); err == nil {
			flush()
		}
	}
}

// exportWriter writes an export's rows.
type exportWriter interface {
	reading(sensorID string, st contract.Station, r store.Reading, q contract.ReadingsQuery) error
	// fail ends the answer with a line saying it is incomplete (the status is out).
	fail(msg string) error
	flush() error
}

// exportBuffer is the size of an export's write buffer: a flush writes at most this much
// to the connection at once (64 KiB against the 4 KiB of encoding/csv's own buffer: a
// sixteenth of the write calls).
const exportBuffer = 64 << 10

// ndjsonExport writes one line per reading: the reading as a readings page has it, with
// the sensor's ids first.
type ndjsonExport struct {
	w   *formats.NDJSONWriter
	buf bytes.Buffer
	// ids is `{"sensor_id":"…","external_id":…,` of sensor (made once per station).
	ids    []byte
	sensor string
}

func (e *ndjsonExport) reading(sensorID string, st contract.Station, r store.Reading, q contract.ReadingsQuery) error {
	if sensorID != e.sensor || e.ids == nil {
		e.sensor = sensorID
		e.ids = append(e.ids[:0], `{"sensor_id":`...)
		e.ids = jsonbytes.AppendString(e.ids, sensorID)
		e.ids = append(e.ids, `,"external_id":`...)
		e.ids = jsonbytes.AppendString(e.ids, st.ExternalID)
		e.ids = append(e.ids, ',')
	}
	e.buf.Reset()
	if err := appendReading(&e.buf, st, r, q); err != nil {
		return err
	}
	// appendReading wrote a whole object; its opening brace is the ids'.
	return e.w.Raw2(e.ids, e.buf.Bytes()[1:])
}

func (e *ndjsonExport) flush() error { return e.w.Flush() }

func (e *ndjsonExport) fail(msg string) error {
	if err := e.w.Value(apierr.New(apierr.Internal, "%s", msg)); err != nil {
		return err
	}
	return e.w.Flush()
}

// csvExport writes the long form, one row per measurement (with lineage=true, each with
// its conversion in five more columns, formats.LineageHeader), appending each reading's
// rows to one buffer (bytes exactly as encoding/csv writes them, formats.AppendCSVField).
// A reading in the store's own JSON shape has its numbers copied as stored when they are
// already the CSV's spelling (formats.AppendNumber): parsing every value to a float64
// and formatting it again was most of the CSV export's CPU (docs/services.md "Formats and
// export"). Lineage and any other JSON go through MeasDecoder and formats.Float.
type csvExport struct {
	w       *bufio.Writer
	lineage bool
	width   int
	dec     *store.MeasDecoder
	ms      []canon.Measurement
	raw     []store.RawMeasurement
	rec     []string
	line    []byte // the rows of the current reading
	// prefix is "sensor_id,external_id," of sensor (made once per station).
	prefix []byte
	sensor string
}

func newCSVExport(w http.ResponseWriter, header, lineage bool) *csvExport {
	cols := formats.ReadingHeader
	if lineage {
		cols = formats.LineageHeader
	}
	e := &csvExport{w: bufio.NewWriterSize(w, exportBuffer), lineage: lineage, width: len(cols), dec: store.NewMeasDecoder(),
		rec: make([]string, len(cols))}
	if header {
		_, _ = e.w.Write(formats.AppendCSVRecord(nil, cols))
	}
	return e
}

func (e *csvExport) reading(sensorID string, st contract.Station, r store.Reading, q contract.ReadingsQuery) error {
	if sensorID != e.sensor || e.prefix == nil {
		e.sensor = sensorID
		e.prefix = formats.AppendCSVField(e.prefix[:0], sensorID)
		e.prefix = append(e.prefix, ',')
		e.prefix = formats.AppendCSVField(e.prefix, st.ExternalID)
		e.prefix = append(e.prefix, ',')
	}
	var ok bool
	if !e.lineage {
		e.line, ok = e.stored(e.line[:0], r, q)
	}
	if !ok {
		var err error
		if e.line, err = e.decoded(e.line[:0], sensorID, st, r, q); err != nil {
			return err
		}
	}
	_, err := e.w.Write(e.line)
	return err
}

// stored appends the rows of r from its stored JSON's bytes; false when that JSON is not
// the store's shape or a number not one ParseFloat reads (then decoded writes the rows).
func (e *csvExport) stored(b []byte, r store.Reading, q contract.ReadingsQuery) ([]byte, bool) {
	raw, ok := store.DecodeRawMeasurements(e.raw, r.Measurements)
	if !ok {
		return b, false
	}
	e.raw = raw
	var scratch [32]byte
	ts := r.Time.UTC().AppendFormat(scratch[:0], contract.TimeLayout)
	for _, m := range raw {
		if len(q.Parameters) > 0 && !slices.ContainsFunc(q.Parameters, func(p string) bool { return p == string(m.Parameter) }) {
			continue
		}
		b = append(b, e.prefix...)
		b = formats.AppendCSVField(b, ts)
		b = append(b, ',')
		b = formats.AppendCSVField(b, m.Parameter)
		b = append(b, ',')
		if b, ok = formats.AppendNumber(b, m.Value); !ok {
			return b, false
		}
		b = append(b, ',')
		b = formats.AppendCSVField(b, m.Unit)
		b = append(b, ',')
		if b, ok = formats.AppendNumber(b, m.ValueOriginal); !ok {
			return b, false
		}
		b = append(b, ',')
		b = formats.AppendCSVField(b, m.UnitOriginal)
		b = append(b, '\n')
	}
	return b, true
}

// decoded appends the rows of r from its decoded measurements.
func (e *csvExport) decoded(b []byte, sensorID string, st contract.Station, r store.Reading, q contract.ReadingsQuery) ([]byte, error) {
	ms, err := e.dec.Decode(e.ms, r.Measurements)
	if err != nil {
		return b, fmt.Errorf("reading %s of %s: %w", r.Time, st.ExternalID, err)
	}
	e.ms = ms
	var conv []canon.Conversion
	if e.lineage {
		// Over the whole reading, so that a value computed from another names it.
		conv = canon.Lineage(ms, r.RawFormat)
	}
	if len(q.Parameters) > 0 {
		// Each measurement once, as on readings pages and in NDJSON, however often
		// parameter= names it (before, a parameter named twice gave its rows twice, over
		// measurements not yet read).
		keep, keepConv := ms[:0], conv[:0]
		for i, m := range ms {
			if slices.Contains(q.Parameters, m.Parameter) {
				keep = append(keep, m)
				if e.lineage {
					keepConv = append(keepConv, conv[i])
				}
			}
		}
		ms, conv = keep, keepConv
	}
	rec, ts := e.rec, contract.FormatTime(r.Time)
	for i, m := range ms {
		rec[0], rec[1], rec[2], rec[3] = sensorID, st.ExternalID, ts, m.Parameter
		rec[4], rec[5], rec[6], rec[7] = formats.Float(m.Value), m.Unit, formats.Float(m.ValueOriginal), m.UnitOriginal
		if e.lineage {
			cv := conv[i]
			rec[8], rec[9], rec[10], rec[11], rec[12] = cv.Rule, cv.Formula, cv.SourceField, formats.Float(cv.SourceValue), cv.SourceUnit
		}
		b = formats.AppendCSVRecord(b, rec)
	}
	return b, nil
}

func (e *csvExport) flush() error { return e.w.Flush() }

// fail writes a row whose first field starts with "#" (the documented end of an
// incomplete CSV export), as wide as the others.
func (e *csvExport) fail(msg string) error {
	rec := make([]string, e.width)
	rec[0] = "# " + apierr.Internal + ": " + msg
	if _, err := e.w.Write(formats.AppendCSVRecord(nil, rec)); err != nil {
		return err
	}
	return e.w.Flush()
}
