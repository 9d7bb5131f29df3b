// Package render answers the gateway's readings pages, aggregates and sensor lists in the
// formats of docs/api-decisions.md "Wave 2" (json, csv, ndjson, geojson; Parquet of
// "Science formats" through package science; package
// pkg/formats holds the encoders and the negotiation rule). The backing services answer
// JSON, which the gateway caches once per query whatever the format; a CSV, NDJSON or
// GeoJSON answer is written from that JSON item by item, straight to the client.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/etag"
	"github.com/sensorgate/sensorgate/gateway/readings"
	"github.com/sensorgate/sensorgate/gateway/science"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
)

// Formats each answer offers; the first is the default.
var (
	ReadingsFormats  = []string{formats.JSON, formats.CSV, formats.NDJSON, formats.GeoJSON, formats.Parquet}
	AggregateFormats = []string{formats.JSON, formats.CSV, formats.NDJSON}
	ListFormats      = []string{formats.JSON, formats.CSV, formats.NDJSON, formats.GeoJSON}
)

// Readings answers GET /sensors/:id/readings in the negotiated format.
func Readings(h *readings.Handlers, fail readings.ErrorFunc) gin.HandlerFunc {
	return answer(h, fail, contract.RouteReadings, ReadingsFormats, readingsPage)
}

// Aggregate answers GET /sensors/:id/readings/aggregate in the negotiated format.
func Aggregate(h *readings.Handlers, fail readings.ErrorFunc) gin.HandlerFunc {
	return answer(h, fail, contract.RouteAggregate, AggregateFormats, aggregatePage)
}

// converter writes the JSON answer body in format f to w, setting its headers on hd first.
type converter func(w io.Writer, hd http.Header, req *http.Request, body []byte, f string) error

func answer(h *readings.Handlers, fail readings.ErrorFunc, route contract.Route, allowed []string, conv converter) gin.HandlerFunc {
	return func(c *gin.Context) {
		f, err := formats.NegotiateRaw(c.Request.URL.RawQuery, headerValue(c.Request.Header, "Accept"), allowed...)
		if err != nil {
			fail(c, err)
			return
		}
		if f != formats.JSON && route == contract.RouteReadings && c.Query("data_format") == contract.FormatRaw && f != formats.NDJSON {
			fail(c, apierr.Invalid(formats.Param, "%s needs data_format=cleaned (raw readings have no measurements to put in rows); use json or ndjson", f))
			return
		}
		resp, err := h.Answer(c.Request.Context(), route, c.Param("id"), c.Request.URL.RawQuery)
		if err != nil {
			fail(c, err)
			return
		}
		hd := c.Writer.Header()
		addVaryAccept(hd)
		if f == formats.JSON || resp.Status != http.StatusOK {
			status, body := h.Reply(headerOf(hd), resp, headerValue(c.Request.Header, "If-None-Match"))
			c.Writer.WriteHeader(status)
			if body != nil {
				_, _ = c.Writer.Write(body)
			}
			return
		}
		// The cache headers of the JSON answer, a validator of its own for this format.
		h.Reply(bodyless{hd}, resp, "")
		tag := strings.TrimSuffix(resp.ETag, `"`) + "-" + f + `"`
		hd.Set("ETag", tag)
		if etag.Match(c.GetHeader("If-None-Match"), tag) {
			c.Writer.WriteHeader(http.StatusNotModified)
			return
		}
		if err := conv(c.Writer, hd, c.Request, resp.Body, f); err != nil {
			// Headers may be out: the answer ends short, and the log says why.
			_ = c.Error(fmt.Errorf("render %s: %w", f, err))
		}
	}
}

// headerValue is the first value of a header given its canonical name, without the
// canonicalization (and, for a name not already canonical, the allocation) of Get.
func headerValue(h http.Header, canonical string) string {
	if v := h[canonical]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Ready-made Vary values, shared by every answer (len == cap: an append copies).
var (
	varyAccept               = []string{"Accept"}
	varyAcceptEncodingAccept = []string{"Accept-Encoding", "Accept"}
)

// addVaryAccept adds Accept to Vary (the format may follow Accept). The compression
// middleware has set Vary: Accept-Encoding already; the pair is then one shared value
// instead of an append per request.
func addVaryAccept(hd http.Header) {
	switch v := hd["Vary"]; {
	case len(v) == 0:
		hd["Vary"] = varyAccept
	case len(v) == 1 && v[0] == "Accept-Encoding":
		hd["Vary"] = varyAcceptEncodingAccept
	default:
		hd["Vary"] = append(v, "Accept")
	}
}

type headerOf http.Header

func (h headerOf) SetHeader(name string, value []string) { h[name] = value }

// bodyless sets the headers of an answer that do not describe its body (caching, age): a
// format converted from the JSON answer has a type, validator and length of its own.
type bodyless struct{ h http.Header }

func (s bodyless) SetHeader(name string, value []string) {
	switch name {
	case "Content-Type", "Etag", "Content-Length":
	default:
		s.h[name] = value
	}
}

// page is the part of a readings page the formats need; each reading is kept as the
// service wrote it (NDJSON lines are those bytes).
type page struct {
	SensorID   string              `json:"sensor_id"`
	ExternalID string              `json:"external_id"`
	Readings   []json.RawMessage   `json:"readings"`
	Pagination contract.Pagination `json:"pagination"`
}

func readingsPage(w io.Writer, hd http.Header, req *http.Request, body []byte, f string) error {
	var p page
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Errorf("readings page: %w", err)
	}
	formats.SetHeaders(hd, f, "readings-"+p.ExternalID)
	pg := p.Pagination
	formats.SetPaging(hd, pg.Total, formats.NextPage(req.URL, pg.Page, pg.Limit, pg.Total))
	switch f {
	case formats.NDJSON:
		return ndjsonLines(w, p.Readings)
	case formats.CSV:
		c, err := formats.NewCSV(w, formats.ReadingHeader)
		if err != nil {
			return err
		}
		err = eachReading(p.Readings, func(r readingRow) error {
			return c.ReadingRows(p.SensorID, p.ExternalID, contract.FormatTime(r.Timestamp.Time), r.Measurements)
		})
		if err != nil {
			return err
		}
		return c.Flush()
	case formats.Parquet:
		// The CSV's rows, typed (package science); the page's paging is in the headers.
		pw, err := science.NewParquet(w, false, science.ParquetOptions{})
		if err != nil {
			return err
		}
		err = eachReading(p.Readings, func(r readingRow) error {
			return pw.Reading(p.SensorID, p.ExternalID, r.Timestamp.Time, r.Measurements, nil)
		})
		if err != nil {
			return err
		}
		return pw.Close()
	case formats.GeoJSON:
		g, err := formats.NewGeoJSON(w)
		if err != nil {
			return err
		}
		err = eachReading(p.Readings, func(r readingRow) error {
			ft := formats.Feature{ID: r.ID, Properties: formats.ReadingProperties(contract.FormatTime(r.Timestamp.Time), r.Measurements,
				map[string]any{"sensor_id": p.SensorID, "external_id": p.ExternalID})}
			if r.Location != nil {
				lon, lat := r.Location.Coordinates[0], r.Location.Coordinates[1]
				ft.Lon, ft.Lat = &lon, &lat
			}
			return g.Feature(ft)
		})
		if err != nil {
			return err
		}
		return g.Close(map[string]any{"pagination": pg})
	}
	return fmt.Errorf("format %s", f)
}

// eachReading decodes each reading of a page and hands it to row.
func eachReading(raws []json.RawMessage, row func(readingRow) error) error {
	for _, raw := range raws {
		var r readingRow
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("reading: %w", err)
		}
		if err := row(r); err != nil {
			return err
		}
	}
	return nil
}

// ndjsonLines writes each row, as the service wrote it, as one NDJSON line.
func ndjsonLines(w io.Writer, rows []json.RawMessage) error {
	n := formats.NewNDJSON(w)
	for _, r := range rows {
		if err := n.Raw(r); err != nil {
			return err
		}
	}
	return n.Flush()
}

// aggregateAnswer is the part of an aggregate answer the formats need.
type aggregateAnswer struct {
	SensorID   string   `json:"sensor_id"`
	ExternalID string   `json:"external_id"`
	Interval   string   `json:"interval"`
	Stats      []string `json:"stats"`
	Parameters []string `json:"parameters"`
	Buckets    []struct {
		Start      string                                `json:"start"`
		End        string                                `json:"end"`
		StartLocal string                                `json:"start_local"`
		Values     map[string]map[string]json.RawMessage `json:"values"`
	} `json:"buckets"`
}

// AggregateHeader is the CSV header of an aggregate answer before its statistics: one row
// per bucket and parameter, then one column per statistic asked for, then coverage.
var AggregateHeader = []string{"sensor_id", "external_id", "start", "end", "start_local", "parameter"}

func aggregatePage(w io.Writer, hd http.Header, _ *http.Request, body []byte, f string) error {
	formats.SetHeaders(hd, f, "aggregate-"+externalIDOf(body))
	switch f {
	case formats.NDJSON:
		var raw struct {
			Buckets []json.RawMessage `json:"buckets"`
		}
		if err := json.Unmarshal(body, &raw); err != nil {
			return fmt.Errorf("aggregate: %w", err)
		}
		return ndjsonLines(w, raw.Buckets)
	case formats.CSV:
		var a aggregateAnswer
		if err := json.Unmarshal(body, &a); err != nil {
			return fmt.Errorf("aggregate: %w", err)
		}
		cols := append(append(append([]string(nil), AggregateHeader...), a.Stats...), "coverage")
		c, err := formats.NewCSV(w, cols)
		if err != nil {
			return err
		}
		rec := make([]string, len(cols))
		for _, b := range a.Buckets {
			for _, p := range a.Parameters {
				v := b.Values[p]
				rec[0], rec[1], rec[2], rec[3], rec[4], rec[5] = a.SensorID, a.ExternalID, b.Start, b.End, b.StartLocal, p
				for i, st := range append(a.Stats, "coverage") {
					rec[len(AggregateHeader)+i] = cell(v[st])
				}
				if err := c.Row(rec); err != nil {
					return err
				}
			}
		}
		return c.Flush()
	}
	return fmt.Errorf("format %s", f)
}

// cell is a JSON number (or null) as a CSV field: the number as written, empty for null.
func cell(v json.RawMessage) string {
	s := string(v)
	if s == "" || s == "null" {
		return ""
	}
	return s
}

func externalIDOf(body []byte) string {
	var v struct {
		ExternalID string `json:"external_id"`
	}
	_ = json.Unmarshal(body, &v)
	return v.ExternalID
}

// List writes a sensor list (items as the JSON answer has them) in format f: CSV with one
// column per field of the first item (lists joined with ";", objects as JSON), NDJSON of
// the items, or a GeoJSON FeatureCollection of Points from latitude and longitude. Paging
// goes into Link and X-Total-Count.
func List(w io.Writer, hd http.Header, req *http.Request, f string, items any, pg contract.Pagination) error {
	b, err := json.Marshal(items)
	if err != nil {
		return fmt.Errorf("sensor list: %w", err)
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(b, &rows); err != nil {
		return fmt.Errorf("sensor list: %w", err)
	}
	formats.SetHeaders(hd, f, "sensors")
	formats.SetPaging(hd, pg.Total, formats.NextPage(req.URL, pg.Page, pg.Limit, pg.Total))
	switch f {
	case formats.NDJSON:
		return ndjsonLines(w, rows)
	case formats.CSV:
		var c *formats.CSVWriter
		var cols []string
		for _, r := range rows {
			keys, vals, err := orderedFields(r)
			if err != nil {
				return err
			}
			if c == nil {
				cols = keys
				if c, err = formats.NewCSV(w, cols); err != nil {
					return err
				}
			}
			byKey := make(map[string]json.RawMessage, len(keys))
			for i, k := range keys {
				byKey[k] = vals[i]
			}
			rec := make([]string, len(cols))
			for i, k := range cols {
				rec[i] = field(byKey[k])
			}
			if err := c.Row(rec); err != nil {
				return err
			}
		}
		if c == nil { // an empty page still has its header (the full view's fields)
			if c, err = formats.NewCSV(w, []string{"id", "external_id", "name", "latitude", "longitude"}); err != nil {
				return err
			}
		}
		return c.Flush()
	case formats.GeoJSON:
		g, err := formats.NewGeoJSON(w)
		if err != nil {
			return err
		}
		for _, r := range rows {
			var props map[string]any
			if err := json.Unmarshal(r, &props); err != nil {
				return err
			}
			ft := formats.Feature{Properties: props}
			if id, ok := props["id"].(string); ok {
				ft.ID = id
			}
			lat, okLat := props["latitude"].(float64)
			lon, okLon := props["longitude"].(float64)
			if okLat && okLon {
				ft.Lat, ft.Lon = &lat, &lon
			}
			if err := g.Feature(ft); err != nil {
				return err
			}
		}
		return g.Close(map[string]any{"pagination": pg})
	}
	return fmt.Errorf("format %s", f)
}

// orderedFields splits a JSON object into its keys and values in their written order.
func orderedFields(obj json.RawMessage) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(strings.NewReader(string(obj)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("sensor list item is not an object")
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys, vals = append(keys, k), append(vals, v)
	}
	return keys, vals, nil
}

// field is a JSON value as a CSV field: strings unquoted, null empty, lists of scalars
// joined with ";", other values as JSON.
func field(v json.RawMessage) string {
	s := strings.TrimSpace(string(v))
	switch {
	case s == "" || s == "null":
		return ""
	case s[0] == '"':
		var str string
		if json.Unmarshal(v, &str) == nil {
			return str
		}
	case s[0] == '[':
		var list []any
		if json.Unmarshal(v, &list) == nil {
			parts := make([]string, 0, len(list))
			for _, x := range list {
				switch x := x.(type) {
				case string:
					parts = append(parts, x)
				case float64:
					parts = append(parts, strconv.FormatFloat(x, 'f', -1, 64))
				default:
					b, _ := json.Marshal(x)
					parts = append(parts, string(b))
				}
			}
			return strings.Join(parts, ";")
		}
	}
	return s
}

// readingRow is what the CSV and GeoJSON forms take from a reading. The raw form's payload
// is left undecoded: it is the provider's own JSON, kept as sent, and may hold numbers
// that no float64 holds (found by FuzzParseV3 in services/adapters/openaq).
type readingRow struct {
	ID           string              `json:"id"`
	Timestamp    contract.Time       `json:"timestamp"`
	Measurements []canon.Measurement `json:"measurements"`
	Location     *contract.Location  `json:"location"`
}
