// Package formats holds the answer formats of docs/api-decisions.md "Wave 2" (json, csv,
// ndjson, geojson): the one negotiation rule (the format query parameter wins over Accept),
// their media types, and streaming encoders that write rows as they come, so that neither
// the gateway nor a service builds a whole answer in memory to change its format. CSV goes
// through encoding/csv (RFC 4180 quoting), NDJSON and GeoJSON through encoding/json.
package formats

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
)

// Format names, as the format query parameter spells them.
const (
	JSON    = "json"
	CSV     = "csv"
	NDJSON  = "ndjson"
	GeoJSON = "geojson"
	// Parquet and NetCDF are the science formats (docs/formats.md): binary files that
	// notebooks open directly, written by the gateway's export and readings answers.
	Parquet = "parquet"
	NetCDF  = "netcdf"
)

// Media types of the formats.
const (
	TypeJSON    = "application/json; charset=utf-8"
	TypeCSV     = "text/csv; charset=utf-8"
	TypeNDJSON  = "application/x-ndjson"
	TypeGeoJSON = "application/geo+json"
	TypeParquet = "application/vnd.apache.parquet"
	TypeNetCDF  = "application/x-netcdf"
)

// Param is the query parameter that names a format.
const Param = "format"

var mediaTypes = map[string]string{JSON: TypeJSON, CSV: TypeCSV, NDJSON: TypeNDJSON, GeoJSON: TypeGeoJSON,
	Parquet: TypeParquet, NetCDF: TypeNetCDF}

// attachments are the formats answered as a file to save, with its extension.
var attachments = map[string]string{CSV: ".csv", Parquet: ".parquet", NetCDF: ".nc"}

// acceptNames maps the media types a client may send in Accept to the format they ask for.
var acceptNames = map[string]string{
	"application/json":     JSON,
	"text/csv":             CSV,
	"application/x-ndjson": NDJSON,
	"application/ndjson":   NDJSON,
	"application/geo+json": GeoJSON,
	TypeParquet:            Parquet,
	TypeNetCDF:             NetCDF,
}

// ContentType is the Content-Type header value of format f.
func ContentType(f string) string { return mediaTypes[f] }

// Negotiate picks the answer format of a request among allowed (the first is the
// default): the format query parameter when given (an unknown or not allowed one is a
// 400 naming the allowed values), else the first Accept media type that names an allowed
// format (in the client's order of preference; q=0 excluded), else the default. An Accept
// that names no allowed format gets the default rather than a 406: the JSON answer is what
// every client of the API reads.
func Negotiate(q url.Values, accept string, allowed ...string) (string, error) {
	if len(allowed) == 0 {
		allowed = []string{JSON}
	}
	if _, ok := q[Param]; !ok && (accept == "" || accept == "*/*") {
		return allowed[0], nil // what the loop below finds for these, without its allocations
	}
	if v, ok := q[Param]; ok {
		f := strings.ToLower(strings.TrimSpace(firstOf(v)))
		for _, a := range allowed {
			if f == a {
				return f, nil
			}
		}
		return "", apierr.Invalid(Param, "want one of %s, got %q", strings.Join(allowed, ", "), firstOf(v))
	}
	best, bestQ := "", 0.0
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		f, ok := acceptNames[mt]
		if !ok || !isAllowed(f, allowed) {
			continue
		}
		qv := 1.0
		if s, ok := params["q"]; ok {
			if x, err := strconv.ParseFloat(s, 64); err == nil {
				qv = x
			}
		}
		if qv > bestQ {
			best, bestQ = f, qv
		}
	}
	if best != "" {
		return best, nil
	}
	return allowed[0], nil
}

// NegotiateRaw is Negotiate over a raw query string: the query is parsed only when it
// names a format parameter, so the common request (no format, no Accept or */*) is
// negotiated with no map and no allocation.
func NegotiateRaw(rawQuery, accept string, allowed ...string) (string, error) {
	if !hasParam(rawQuery, Param) {
		return Negotiate(nil, accept, allowed...)
	}
	q, _ := url.ParseQuery(rawQuery) // as url.URL.Query: a malformed pair is dropped
	return Negotiate(q, accept, allowed...)
}

// hasParam reports whether rawQuery has a parameter called name (percent-decoded).
func hasParam(rawQuery, name string) bool {
	for piece := range strings.SplitSeq(rawQuery, "&") {
		k, _, _ := strings.Cut(piece, "=")
		if k == name {
			return true
		}
		if strings.ContainsAny(k, "%+") {
			if uk, err := url.QueryUnescape(k); err == nil && uk == name {
				return true
			}
		}
	}
	return false
}

func firstOf(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func isAllowed(f string, allowed []string) bool {
	for _, a := range allowed {
		if a == f {
			return true
		}
	}
	return false
}

// SetHeaders sets the Content-Type of format f and, for CSV, Parquet and NetCDF, a
// Content-Disposition attachment named filename (base name; its extension is added).
// Every answer varies by Accept, since Accept can choose the format.
func SetHeaders(h http.Header, f, filename string) {
	h.Set("Content-Type", ContentType(f))
	h.Add("Vary", "Accept")
	if ext, ok := attachments[f]; ok {
		h.Set("Content-Disposition", `attachment; filename="`+SafeName(filename)+ext+`"`)
	}
}

// SafeName keeps the letters, digits, dots, dashes and underscores of name (others become
// "_"), so that a sensor id can name a download without quoting rules.
func SafeName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, name)
}

// SetPaging sets the paging headers of a paged CSV or NDJSON answer (which has no
// envelope to carry them): X-Total-Count, and Link rel="next" to next when there is a
// next page (next empty: none).
func SetPaging(h http.Header, total int, next string) {
	h.Set("X-Total-Count", strconv.Itoa(total))
	if next != "" {
		h.Set("Link", "<"+next+`>; rel="next"`)
	}
}

// NextPage is the URL of the page after page (1-based) of a request u, or "" when page
// is the last of total items at limit per page.
func NextPage(u *url.URL, page, limit, total int) string {
	if limit <= 0 || page*limit >= total {
		return ""
	}
	next := *u
	q := next.Query()
	q.Set("page", strconv.Itoa(page+1))
	next.RawQuery = q.Encode()
	return next.RequestURI()
}

// CSVWriter writes a CSV answer row by row through a buffered writer; Flush sends what is
// buffered (call it at the end, or to push a partial answer to the client).
type CSVWriter struct {
	w *csv.Writer
}

// NewCSV starts a CSV answer on w with its header row.
func NewCSV(w io.Writer, header []string) (*CSVWriter, error) {
	c := &CSVWriter{w: csv.NewWriter(w)}
	if err := c.w.Write(header); err != nil {
		return nil, fmt.Errorf("csv header: %w", err)
	}
	return c, nil
}

// Row writes one record.
func (c *CSVWriter) Row(rec []string) error {
	if err := c.w.Write(rec); err != nil {
		return fmt.Errorf("csv row: %w", err)
	}
	return nil
}

// Flush writes buffered rows to the underlying writer.
func (c *CSVWriter) Flush() error {
	c.w.Flush()
	return c.w.Error()
}

// NDJSONWriter writes one JSON value per line.
type NDJSONWriter struct {
	w *bufio.Writer
}

// NewNDJSON starts an NDJSON answer on w.
func NewNDJSON(w io.Writer) *NDJSONWriter { return NewNDJSONSize(w, 32<<10) }

// NewNDJSONSize starts an NDJSON answer on w buffering size bytes.
func NewNDJSONSize(w io.Writer, size int) *NDJSONWriter {
	return &NDJSONWriter{w: bufio.NewWriterSize(w, size)}
}

// Value writes v as one line.
func (n *NDJSONWriter) Value(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("ndjson: %w", err)
	}
	return n.Raw(b)
}

// Raw writes an already encoded, compact JSON value as one line.
func (n *NDJSONWriter) Raw(b []byte) error {
	if _, err := n.w.Write(b); err != nil {
		return err
	}
	return n.w.WriteByte('\n')
}

// Raw2 writes the concatenation of a and b, an already encoded, compact JSON value, as
// one line (a value written in two parts, without copying them together).
func (n *NDJSONWriter) Raw2(a, b []byte) error {
	if _, err := n.w.Write(a); err != nil {
		return err
	}
	return n.Raw(b)
}

// Flush writes buffered lines to the underlying writer.
func (n *NDJSONWriter) Flush() error { return n.w.Flush() }

// Feature is a GeoJSON Point Feature. Lon and Lat nil give a null geometry (a sensor
// without a location is still listed).
type Feature struct {
	ID         string
	Lon, Lat   *float64
	Properties any
}

// GeoJSONWriter writes a FeatureCollection feature by feature.
type GeoJSONWriter struct {
	w *bufio.Writer
	n int
}

// NewGeoJSON starts a FeatureCollection on w.
func NewGeoJSON(w io.Writer) (*GeoJSONWriter, error) {
	g := &GeoJSONWriter{w: bufio.NewWriterSize(w, 32<<10)}
	_, err := g.w.WriteString(`{"type":"FeatureCollection","features":[`)
	return g, err
}

type featureJSON struct {
	Type       string    `json:"type"`
	ID         string    `json:"id,omitempty"`
	Geometry   *geometry `json:"geometry"`
	Properties any       `json:"properties"`
}

type geometry struct {
	Type        string     `json:"type"`
	Coordinates [2]float64 `json:"coordinates"`
}

// Feature writes one feature; coordinates are [lon, lat] as GeoJSON (RFC 7946) has them.
func (g *GeoJSONWriter) Feature(f Feature) error {
	fj := featureJSON{Type: "Feature", ID: f.ID, Properties: f.Properties}
	if f.Lon != nil && f.Lat != nil {
		fj.Geometry = &geometry{Type: "Point", Coordinates: [2]float64{*f.Lon, *f.Lat}}
	}
	if fj.Properties == nil {
		fj.Properties = map[string]any{}
	}
	b, err := json.Marshal(fj)
	if err != nil {
		return fmt.Errorf("geojson feature: %w", err)
	}
	if g.n > 0 {
		if err := g.w.WriteByte(','); err != nil {
			return err
		}
	}
	g.n++
	_, err = g.w.Write(b)
	return err
}

// Close ends the FeatureCollection and flushes it; extra members (such as pagination)
// are written beside "features" when given.
func (g *GeoJSONWriter) Close(extra map[string]any) error {
	if _, err := g.w.WriteString("]"); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(extra[k])
		if err != nil {
			return fmt.Errorf("geojson %s: %w", k, err)
		}
		g.w.WriteByte(',')
		g.w.Write(kb)
		g.w.WriteByte(':')
		g.w.Write(vb)
	}
	if _, err := g.w.WriteString("}"); err != nil {
		return err
	}
	return g.w.Flush()
}

// Float renders a number for CSV: the shortest form that reads back to the same float64.
func Float(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// OptFloat renders a nullable number for CSV: empty when nil.
func OptFloat(v *float64) string {
	if v == nil {
		return ""
	}
	return Float(*v)
}

// ReadingHeader is the header of the long-form readings CSV: one row per measurement,
// qc_flag its QARTOD flag (docs/quality.md).
var ReadingHeader = []string{"sensor_id", "external_id", "timestamp", "parameter", "value", "unit", "value_original", "unit_original", "qc_flag"}

// QCFlag is the qc_flag column of a measurement.
func QCFlag(m canon.Measurement) string { return FlagText(m.Quality().Flag) }

// FlagText spells a QARTOD flag code without allocating.
func FlagText(flag int) string {
	if flag >= 0 && flag <= 9 {
		return "0123456789"[flag : flag+1]
	}
	return strconv.Itoa(flag)
}

// ReadingRowKey is a long-form CSV row's sensor_id,external_id,timestamp (up to the third
// comma outside quotes): the rows of one reading are consecutive and share it, so a reader
// counting readings rather than rows (the export benchmarks) counts its changes.
func ReadingRowKey(row []byte) []byte {
	commas, quoted := 0, false
	for i, c := range row {
		switch {
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			if commas++; commas == 3 {
				return row[:i]
			}
		}
	}
	return row
}

// LineageHeader is ReadingHeader with the conversion of each measurement (lineage=true):
// the rule of canon's conversion table, its formula in x, and the source field, value
// and unit it was computed from.
var LineageHeader = append(slices.Clip(ReadingHeader), "conversion_rule", "conversion_formula", "source_field", "source_value", "source_unit")

// ReadingLineageRows writes the long-form CSV rows of one reading with each measurement's
// conversion (conv[i] is ms[i]'s), as LineageHeader names them.
func (c *CSVWriter) ReadingLineageRows(sensorID, externalID, timestamp string, ms []canon.Measurement, conv []canon.Conversion) error {
	rec := make([]string, len(LineageHeader))
	for i, m := range ms {
		rec[0], rec[1], rec[2], rec[3] = sensorID, externalID, timestamp, m.Parameter
		rec[4], rec[5], rec[6], rec[7], rec[8] = Float(m.Value), m.Unit, Float(m.ValueOriginal), m.UnitOriginal, QCFlag(m)
		cv := conv[i]
		rec[9], rec[10], rec[11], rec[12], rec[13] = cv.Rule, cv.Formula, cv.SourceField, Float(cv.SourceValue), cv.SourceUnit
		if err := c.Row(rec); err != nil {
			return err
		}
	}
	return nil
}

// ReadingRows writes the long-form CSV rows of one reading (timestamp already in the
// API's form), one per measurement.
func (c *CSVWriter) ReadingRows(sensorID, externalID, timestamp string, ms []canon.Measurement) error {
	rec := make([]string, len(ReadingHeader))
	for _, m := range ms {
		rec[0], rec[1], rec[2], rec[3] = sensorID, externalID, timestamp, m.Parameter
		rec[4], rec[5], rec[6], rec[7], rec[8] = Float(m.Value), m.Unit, Float(m.ValueOriginal), m.UnitOriginal, QCFlag(m)
		if err := c.Row(rec); err != nil {
			return err
		}
	}
	return nil
}

// ReadingProperties are the GeoJSON properties of a reading Feature: its timestamp and
// one property per parameter (the canonical value), qc the quality of each parameter
// ({parameter: {flag, failed}}), plus the extra fields given.
func ReadingProperties(timestamp string, ms []canon.Measurement, extra map[string]any) map[string]any {
	p := make(map[string]any, len(ms)+len(extra)+2)
	maps.Copy(p, extra)
	p["timestamp"] = timestamp
	qc := make(map[string]canon.QC, len(ms))
	for _, m := range ms {
		p[m.Parameter] = m.Value
		qc[m.Parameter] = m.Quality()
	}
	p["qc"] = qc
	return p
}

// NewCSVNoHeader continues a CSV answer whose header another writer sent (a part of a
// stream assembled from several sources).
func NewCSVNoHeader(w io.Writer) *CSVWriter { return &CSVWriter{w: csv.NewWriter(w)} }

// AppendNumber appends the JSON number num as Float writes its value, or reports false
// when num is not a number ParseFloat reads. A number already in that form (no exponent,
// sign only '-', no leading zero before other digits, no trailing zero after a '.', at
// most 15 significant digits and 24 bytes) is copied: a decimal of at most 15 significant
// digits is the only one of that many or fewer digits that reads back to its float64
// (IEEE 754 doubles hold 15 decimal digits), so it is the shortest that FormatFloat
// finds, and the parse and format, most of the CSV export's CPU, are skipped. Anything
// else is parsed and formatted.
func AppendNumber(b, num []byte) ([]byte, bool) {
	if plainShortest(num) {
		return append(b, num...), true
	}
	v, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		return b, false
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64), true
}

// plainShortest reports whether num is a decimal in the form FormatFloat(v, 'f', -1, 64)
// writes for its value (see AppendNumber).
func plainShortest(num []byte) bool {
	if len(num) == 0 || len(num) > 24 {
		return false
	}
	i := 0
	if num[0] == '-' {
		i++
	}
	intStart := i
	for i < len(num) && num[i] >= '0' && num[i] <= '9' {
		i++
	}
	intDigits := i - intStart
	if intDigits == 0 || (intDigits > 1 && num[intStart] == '0') {
		return false
	}
	sig := intDigits // trailing zeros of the integer part counted too (conservative)
	if num[intStart] == '0' {
		sig = 0
	}
	if i == len(num) {
		return sig <= 15
	}
	if num[i] != '.' {
		return false
	}
	i++
	fracStart := i
	for i < len(num) && num[i] >= '0' && num[i] <= '9' {
		if sig > 0 || num[i] != '0' {
			sig++
		}
		i++
	}
	return i == len(num) && i > fracStart && num[i-1] != '0' && sig <= 15
}
