package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
	"github.com/sensorgate/sensorgate/pkg/ids"
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
			rows, err = newCSVExport(w, header, q.Lineage)
		} else {
			rows = &ndjsonExport{w: formats.NewNDJSON(w)}
		}
		if err != nil {
			s.d.Logger.Error("export", "err", err)
			return
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
				err = s.d.Store.Scan(r.Context(), st.ExternalID, q.Since, q.Until, func(rd store.Reading) error {
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

// ndjsonExport writes one line per reading: the reading as a readings page has it, with
// the sensor's ids first.
type ndjsonExport struct {
	w   *formats.NDJSONWriter
	buf bytes.Buffer
}

func (e *ndjsonExport) reading(sensorID string, st contract.Station, r store.Reading, q contract.ReadingsQuery) error {
	e.buf.Reset()
	e.buf.WriteString(`{"sensor_id":"`)
	e.buf.WriteString(sensorID)
	e.buf.WriteString(`","external_id":`)
	ext, _ := json.Marshal(st.ExternalID)
	e.buf.Write(ext)
	e.buf.WriteByte(',')
	start := e.buf.Len()
	if err := appendReading(&e.buf, st, r, q); err != nil {
		return err
	}
	b := e.buf.Bytes()
	// appendReading wrote a whole object; drop its opening brace after the ids.
	copy(b[start:], b[start+1:])
	return e.w.Raw(b[:len(b)-1])
}

func (e *ndjsonExport) flush() error { return e.w.Flush() }

func (e *ndjsonExport) fail(msg string) error {
	if err := e.w.Value(apierr.New(apierr.Internal, "%s", msg)); err != nil {
		return err
	}
	return e.w.Flush()
}

// csvExport writes the long form, one row per measurement (with lineage=true, each with
// its conversion in five more columns, formats.LineageHeader).
type csvExport struct {
	c       *formats.CSVWriter
	lineage bool
	width   int
	dec     *store.MeasDecoder
	ms      []canon.Measurement
}

func newCSVExport(w http.ResponseWriter, header, lineage bool) (*csvExport, error) {
	cols := formats.ReadingHeader
	if lineage {
		cols = formats.LineageHeader
	}
	e := &csvExport{lineage: lineage, width: len(cols), dec: store.NewMeasDecoder()}
	if header {
		c, err := formats.NewCSV(w, cols)
		e.c = c
		return e, err
	}
	e.c = formats.NewCSVNoHeader(w)
	return e, nil
}

func (e *csvExport) reading(sensorID string, st contract.Station, r store.Reading, q contract.ReadingsQuery) error {
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
	if len(q.Parameters) > 0 {
		keep, keepConv := ms[:0], conv[:0]
		for i, m := range ms {
			for _, p := range q.Parameters {
				if m.Parameter == p {
					keep = append(keep, m)
					if e.lineage {
						keepConv = append(keepConv, conv[i])
					}
				}
			}
		}
		ms, conv = keep, keepConv
	}
	if e.lineage {
		return e.c.ReadingLineageRows(sensorID, st.ExternalID, contract.FormatTime(r.Time), ms, conv)
	}
	return e.c.ReadingRows(sensorID, st.ExternalID, contract.FormatTime(r.Time), ms)
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
