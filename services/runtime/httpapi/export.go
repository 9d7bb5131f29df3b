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
		rq := contract.ReadingsQuery{Parameters: q.Parameters, Format: contract.FormatCleaned, Lineage: q.Lineage, QC: q.QC}
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
// its conversion in five more columns, formats.LineageHeader), through encoding/csv over a
// 64 KiB buffer. A reading in the store's own JSON shape has its numbers taken as stored
// when they are already the CSV's spelling (formats.AppendNumber): parsing every value to
// a float64 and formatting it again was most of the CSV export's CPU (docs/services.md
// "Export speed"). Lineage and any other JSON go through MeasDecoder and formats.Float.
type csvExport struct {
	c       *formats.CSVWriter
	lineage bool
	width   int
	dec     *store.MeasDecoder
	ms      []canon.Measurement
	raw     []store.RawMeasurement
	rec     []string
	num     []byte
	// names holds this export's parameter and unit strings, so a row does not allocate
	// them again (a lookup by string(bytes) does not allocate).
	names map[string]string
}

func newCSVExport(w http.ResponseWriter, header, lineage bool) *csvExport {
	cols := formats.ReadingHeader
	if lineage {
		cols = formats.LineageHeader
	}
	e := &csvExport{lineage: lineage, width: len(cols), dec: store.NewMeasDecoder(), rec: make([]string, len(cols)),
		names: map[string]string{}}
	// encoding/csv writes into this buffer rather than its own 4 KiB one (bufio.NewWriter
	// keeps a *bufio.Writer that is large enough).
	bw := bufio.NewWriterSize(w, exportBuffer)
	if header {
		e.c, _ = formats.NewCSV(bw, cols) // a header row of constants: the write is buffered
	} else {
		e.c = formats.NewCSVNoHeader(bw)
	}
	return e
}

func (e *csvExport) reading(sensorID string, st contract.Station, r store.Reading, q contract.ReadingsQuery) error {
	if !e.lineage {
		if ok, err := e.stored(sensorID, st, r, q); ok || err != nil {
			return err
		}
	}
	return e.decoded(sensorID, st, r, q)
}

// stored writes the rows of r from its stored JSON's bytes; false when that JSON is not
// the store's shape or a number not one ParseFloat reads (then decoded writes the rows).
// It checks the whole reading before it writes a row, so a fallback never repeats one.
func (e *csvExport) stored(sensorID string, st contract.Station, r store.Reading, q contract.ReadingsQuery) (bool, error) {
	raw, ok := store.DecodeRawMeasurements(e.raw, r.Measurements)
	if !ok {
		return false, nil
	}
	e.raw = raw
	for _, m := range raw {
		if _, ok := formats.AppendNumber(e.num[:0], m.Value); !ok {
			return false, nil
		}
		if _, ok := formats.AppendNumber(e.num[:0], m.ValueOriginal); !ok {
			return false, nil
		}
	}
	rec, ts := e.rec, contract.FormatTime(r.Time)
	for _, m := range raw {
		if len(q.Parameters) > 0 && !slices.ContainsFunc(q.Parameters, func(p string) bool { return p == string(m.Parameter) }) {
			continue
		}
		if !q.QC.Keep(m.Flag) {
			continue
		}
		rec[0], rec[1], rec[2], rec[3] = sensorID, st.ExternalID, ts, e.name(m.Parameter)
		rec[4], rec[5], rec[6], rec[7] = e.number(m.Value), e.name(m.Unit), e.number(m.ValueOriginal), e.name(m.UnitOriginal)
		rec[8] = formats.FlagText(m.Flag)
		if err := e.c.Row(rec); err != nil {
			return true, err
		}
	}
	return true, nil
}

// name is b as a string, allocated once per export.
func (e *csvExport) name(b []byte) string {
	if s, ok := e.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(e.names) < 1024 {
		e.names[s] = s
	}
	return s
}

// number is the CSV's spelling of the JSON number b (checked by stored).
func (e *csvExport) number(b []byte) string {
	e.num, _ = formats.AppendNumber(e.num[:0], b)
	return string(e.num)
}

// decoded writes the rows of r from its decoded measurements.
func (e *csvExport) decoded(sensorID string, st contract.Station, r store.Reading, q contract.ReadingsQuery) error {
	ms, err := e.dec.Decode(e.ms, r.Measurements)
	if err != nil {
		return fmt.Errorf("reading %s of %s: %w", r.Time, st.ExternalID, err)
	}
	e.ms = ms
	var conv []canon.Conversion
	if e.lineage {
		// Over the whole reading, so that a value computed from another names it.
		conv = canon.Lineage(ms, r.RawFormat)
	}
	if len(q.Parameters) > 0 || !q.QC.All() {
		// Each measurement once, as on readings pages and in NDJSON, however often
		// parameter= names it.
		keep, keepConv := ms[:0], conv[:0]
		for i, m := range ms {
			if (len(q.Parameters) == 0 || slices.Contains(q.Parameters, m.Parameter)) && q.QC.Keep(m.Quality().Flag) {
				keep = append(keep, m)
				if e.lineage {
					keepConv = append(keepConv, conv[i])
				}
			}
		}
		ms, conv = keep, keepConv
	}
	ts := contract.FormatTime(r.Time)
	if e.lineage {
		return e.c.ReadingLineageRows(sensorID, st.ExternalID, ts, ms, conv)
	}
	return e.c.ReadingRows(sensorID, st.ExternalID, ts, ms)
}

func (e *csvExport) flush() error { return e.c.Flush() }

// fail writes a row whose first field starts with "#" (the documented end of an
// incomplete CSV export), as wide as the others.
func (e *csvExport) fail(msg string) error {
	rec := make([]string, e.width)
	rec[0] = "# " + apierr.Internal + ": " + msg
	if err := e.c.Row(rec); err != nil {
		return err
	}
	return e.c.Flush()
}
