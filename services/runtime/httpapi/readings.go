package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// stationQuery validates the {id} path value, parses the query with parse and loads the
// station, in that order: a bad id or query is answered before the store is asked.
func stationQuery[Q any](s *Server, r *http.Request, parse func(url.Values, time.Time) (Q, error)) (string, contract.Station, Q, error) {
	var q Q
	id, err := s.stationID(r)
	if err != nil {
		return "", contract.Station{}, q, err
	}
	if q, err = parse(r.URL.Query(), s.d.Now()); err != nil {
		return "", contract.Station{}, q, err
	}
	st, err := s.d.Store.Station(r.Context(), id)
	return id, st, q, err
}

// noQuery is the parse of stationQuery for routes that take no query parameters.
func noQuery(url.Values, time.Time) (struct{}, error) { return struct{}{}, nil }

func (s *Server) latest() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, st, q, err := stationQuery(s, r, contract.ParseLatestQuery)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		rd, err := s.d.Store.LatestReading(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		b, err := latestEnvelope(s.d.Meta.ID, st, rd, q)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeBytes(w, http.StatusOK, b)
	}
}

func (s *Server) readings() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, st, q, err := stationQuery(s, r, contract.ParseReadingsQuery)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		// Lineage names source fields by the readings' source format, which the store
		// gives with every reading (without decoding the raw fragments).
		rs, total, err := s.d.Store.Readings(r.Context(), id, q)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		buf := pageBuffers.Get().(*bytes.Buffer)
		defer putPageBuffer(buf)
		buf.Reset()
		if err := appendReadingsEnvelope(buf, s.d.Meta.ID, st, rs, total, q); err != nil {
			s.fail(w, r, err)
			return
		}
		writeBytes(w, http.StatusOK, buf.Bytes())
	}
}

func provenance(serviceID string, st contract.Station, fetched *contract.Time) contract.Provenance {
	return contract.Provenance{SensorID: ids.Sensor(serviceID, st.ExternalID).String(), ServiceID: serviceID,
		SourceID: st.ExternalID, Provider: st.ProviderSlug, FetchedAt: fetched}
}

// latestEnvelope encodes the public answer of GET .../readings/latest (docs/spec.md 4.7,
// contract.LatestResponse) for station st of service serviceID.
func latestEnvelope(serviceID string, st contract.Station, r store.Reading, q contract.ReadingsQuery) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, 1024+len(r.Raw)+len(r.Measurements)))
	if err := envelopeHead(buf, serviceID, st); err != nil {
		return nil, err
	}
	buf.WriteString(`,"reading":`)
	if err := appendReading(buf, st, r, q); err != nil {
		return nil, err
	}
	if err := appendTail(buf, `,"provenance":`, provenance(serviceID, st, &contract.Time{Time: r.FetchedAt})); err != nil {
		return nil, err
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// envelopeHead writes the opening fields shared by both envelopes, in the order of the
// contract types. The envelope is assembled by hand: json.Marshal would re-validate and
// compact the pre-encoded readings, a quarter of the cost of a 500-row page.
func envelopeHead(buf *bytes.Buffer, serviceID string, st contract.Station) error {
	head, err := json.Marshal(struct {
		SensorID   string `json:"sensor_id"`
		ExternalID string `json:"external_id"`
		Name       string `json:"name"`
		ServiceID  string `json:"service_id"`
	}{ids.Sensor(serviceID, st.ExternalID).String(), st.ExternalID, st.Name, serviceID})
	if err != nil {
		return err
	}
	buf.Write(head[:len(head)-1])
	return nil
}

func appendTail(buf *bytes.Buffer, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf.WriteString(key)
	buf.Write(b)
	return nil
}

// pageBuffers recycles the envelopes of readings pages: a 500-row page is ~350 KB, and
// allocating (and clearing, and collecting) one per request was a fifth of the page's CPU
// in BenchmarkReadingsHandler.
var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledPage keeps an unusually large page (raw NWS documents) from staying pinned.
const maxPooledPage = 4 << 20

func putPageBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledPage {
		pageBuffers.Put(b)
	}
}

// appendReadingsEnvelope writes the public answer of GET .../readings (docs/spec.md 4.8,
// contract.ReadingsResponse): one page of rs out of total. Provenance fetched_at is the
// latest fetch among the page's readings.
func appendReadingsEnvelope(buf *bytes.Buffer, serviceID string, st contract.Station, rs []store.Reading, total int, q contract.ReadingsQuery) error {
	// Per reading: the id, timestamp and location around the stored bytes, ~240 bytes.
	size := 512
	for _, r := range rs {
		size += 240 + len(r.Measurements) + len(r.Raw)
	}
	buf.Grow(size)
	if err := envelopeHead(buf, serviceID, st); err != nil {
		return err
	}
	buf.WriteString(`,"readings":[`)
	var fetched *contract.Time
	for i, r := range rs {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := appendReading(buf, st, r, q); err != nil {
			return err
		}
		if fetched == nil || r.FetchedAt.After(fetched.Time) {
			fetched = &contract.Time{Time: r.FetchedAt}
		}
	}
	buf.WriteByte(']')
	if err := appendTail(buf, `,"provenance":`, provenance(serviceID, st, fetched)); err != nil {
		return err
	}
	if err := appendTail(buf, `,"pagination":`, contract.NewPagination(q.Page, q.Limit, total)); err != nil {
		return err
	}
	buf.WriteByte('}')
	return nil
}

// appendReading writes one contract.Reading: the stored measurements JSON as it is (or
// reduced to q.Parameters), or the raw fragment and its format for data_format=raw.
func appendReading(buf *bytes.Buffer, st contract.Station, r store.Reading, q contract.ReadingsQuery) error {
	var scratch [40]byte
	buf.WriteString(`{"id":"`)
	buf.Write(appendUUID(scratch[:0], r.ID))
	buf.WriteString(`","timestamp":"`)
	buf.Write(r.Time.UTC().AppendFormat(scratch[:0], contract.TimeLayout))
	buf.WriteString(`",`)
	if q.Format == contract.FormatRaw {
		buf.WriteString(`"location":`)
		appendLocation(buf, st, r)
		buf.WriteString(`,"raw":`)
		if len(r.Raw) == 0 {
			buf.WriteString("null")
		} else {
			buf.Write(r.Raw)
		}
		buf.WriteString(`,"source_format":`)
		f, _ := json.Marshal(r.RawFormat)
		buf.Write(f)
		buf.WriteByte('}')
		return nil
	}
	buf.WriteString(`"measurements":`)
	if len(q.Parameters) == 0 && !q.Lineage && q.QC.All() {
		buf.Write(r.Measurements)
	} else {
		var ms []canon.Measurement
		if err := json.Unmarshal(r.Measurements, &ms); err != nil {
			return fmt.Errorf("reading %s of %s: stored measurements: %w", r.ID, st.ExternalID, err)
		}
		ms = keepQuality(ms, q.QC)
		var b []byte
		var err error
		if q.Lineage {
			b, err = json.Marshal(withLineage(ms, r.RawFormat, q.Parameters))
		} else {
			b, err = json.Marshal(keepParameters(ms, q.Parameters))
		}
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	buf.WriteString(`,"location":`)
	appendLocation(buf, st, r)
	if q.Revisions {
		if err := appendTail(buf, `,"revisions":`, revisionsJSON(r.Revisions)); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// revisionJSON is one earlier value of a reading as revisions=true shows it.
type revisionJSON struct {
	Measurements json.RawMessage `json:"measurements"`
	SourceFormat string          `json:"source_format"`
	Source       *string         `json:"source"`
	FetchedAt    contract.Time   `json:"fetched_at"`
	SupersededAt contract.Time   `json:"superseded_at"`
	SupersededBy struct {
		SourceFormat string  `json:"source_format"`
		Source       *string `json:"source"`
	} `json:"superseded_by"`
}

func revisionsJSON(rs []store.Revision) []revisionJSON {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	out := make([]revisionJSON, len(rs))
	for i, r := range rs {
		out[i] = revisionJSON{Measurements: r.Measurements, SourceFormat: r.SourceFormat, Source: opt(r.Source),
			FetchedAt: contract.Time{Time: r.FetchedAt}, SupersededAt: contract.Time{Time: r.RevisedAt}}
		out[i].SupersededBy.SourceFormat, out[i].SupersededBy.Source = r.NewFormat, opt(r.NewSource)
	}
	return out
}

// appendLocation writes the reading's GeoJSON point, falling back to the station's.
func appendLocation(buf *bytes.Buffer, st contract.Station, r store.Reading) {
	lat, lon := r.Lat, r.Lon
	if lat == nil || lon == nil {
		lat, lon = st.Latitude, st.Longitude
	}
	if lat == nil || lon == nil {
		buf.WriteString("null")
		return
	}
	buf.WriteString(`{"type":"Point","coordinates":[`)
	buf.WriteString(strconv.FormatFloat(*lon, 'f', -1, 64))
	buf.WriteByte(',')
	buf.WriteString(strconv.FormatFloat(*lat, 'f', -1, 64))
	buf.WriteString(`]}`)
}

// appendUUID writes u in its canonical dashed form without allocating.
func appendUUID(dst []byte, u uuid.UUID) []byte {
	const hexdig = "0123456789abcdef"
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexdig[b>>4], hexdig[b&0xf])
	}
	return dst
}

// keepQuality keeps the measurements whose flag qc= holds (the reading stays, with the
// others: pagination counts readings, not measurements).
func keepQuality(ms []canon.Measurement, f contract.QCFilter) []canon.Measurement {
	if f.All() {
		return ms
	}
	keep := ms[:0]
	for _, m := range ms {
		if f.Keep(m.Quality().Flag) {
			keep = append(keep, m)
		}
	}
	return keep
}

func keepParameters(ms []canon.Measurement, params []string) []canon.Measurement {
	if len(params) == 0 {
		return ms
	}
	keep := ms[:0]
	for _, m := range ms {
		if slices.Contains(params, m.Parameter) {
			keep = append(keep, m)
		}
	}
	return keep
}

// lineageMeasurement is a served measurement with its conversion (lineage=true).
type lineageMeasurement struct {
	canon.Measurement
	Conversion canon.Conversion `json:"conversion"`
}

// withLineage adds to each measurement its conversion from canon's one rule table (the
// table the adapters converted with), computed over the whole reading so that a value
// computed from another (OpenAQ's AQI from PM2.5) names it, then keeps params.
func withLineage(ms []canon.Measurement, rawFormat string, params []string) []lineageMeasurement {
	conv := canon.Lineage(ms, rawFormat)
	out := make([]lineageMeasurement, 0, len(ms))
	for i, m := range ms {
		if len(params) == 0 || slices.Contains(params, m.Parameter) {
			out = append(out, lineageMeasurement{Measurement: m, Conversion: conv[i]})
		}
	}
	return out
}

// ingestReport answers GET /internal/v1/ingest/report: the latest ingest of every document
// (recorded file, fetched URL, simulated payload) with its counts (docs/adapters.md
// "Ingest report").
func (s *Server) ingestReport() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.d.IngestReport())
	}
}
