package openaq

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/aqi"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

// ErrNotOpenAQ is returned for a payload that is not an OpenAQ results document (v1 or v3).
var ErrNotOpenAQ = errors.New("openaq: not an OpenAQ results document")

// Raw formats recorded on observations.
const (
	RawLatest       = "openaq.v1.latest"
	RawMeasurements = "openaq.v1.measurements"
)

type coordinates struct {
	Latitude  *float64 `json:"latitude"`
	Longitude *float64 `json:"longitude"`
}

type envelope struct {
	Meta    json.RawMessage   `json:"meta"`
	Results []json.RawMessage `json:"results"`
	// v1 error bodies: {"statusCode":400,"error":"Bad Request","message":"..."}
	StatusCode int    `json:"statusCode"`
	Error      string `json:"error"`
	Message    string `json:"message"`
	// v3 error bodies: {"detail": "..."} or {"message": "Unauthorized. ..."}
	Detail json.RawMessage `json:"detail"`
}

func decodeEnvelope(data []byte) (envelope, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return envelope{}, fmt.Errorf("%w: %w", ErrNotOpenAQ, err)
	}
	if env.Error != "" || env.StatusCode >= 400 {
		return envelope{}, fmt.Errorf("openaq: API error %d %s: %s", env.StatusCode, batch.Truncate(env.Error, 60), batch.Truncate(env.Message, 200))
	}
	if env.Results == nil {
		if env.Message != "" || len(env.Detail) > 0 {
			return envelope{}, fmt.Errorf("openaq: API error: %s%s", batch.Truncate(env.Message, 200), batch.Truncate(string(env.Detail), 200))
		}
		return envelope{}, fmt.Errorf("%w: no results array", ErrNotOpenAQ)
	}
	return env, nil
}

// site is what one payload says about a location, kept for its station record.
type site struct {
	name, city, country, source string
}

type parser struct {
	b     *batch.Builder
	sites map[string]site
}

func newParser() *parser {
	return &parser{b: batch.New(ProviderSlug), sites: map[string]site{}}
}

// value is one parameter's value of one record.
type value struct {
	field string
	param string
	v     float64
	unit  string
}

// add normalizes one OpenAQ value into ms, or records why not.
func (p *parser) add(ms *batch.Measurements, id string, n int, v value) {
	param, ok := parameters[strings.ToLower(v.param)]
	if !ok {
		p.b.Reject(id, n, v.field, batch.ReasonUnsupportedParam, fmt.Sprintf("parameter %q has no canonical id", batch.Truncate(v.param, 40)))
		return
	}
	switch {
	case v.v == -99 || v.v == -999 || v.v == -9999:
		p.b.Reject(id, n, v.field, batch.ReasonMissingSentinel, fmt.Sprintf("%s = %v is OpenAQ's missing-value marker", v.param, v.v))
		return
	case v.v < 0:
		p.b.Reject(id, n, v.field, batch.ReasonNegative, fmt.Sprintf("%s = %v %s is negative", v.param, v.v, v.unit))
		return
	}
	ms.Add(v.field, param, v.v, v.unit)
}

// emit stores ms with a computed AQI when it has PM2.5.
func (p *parser) emit(ms *batch.Measurements, t time.Time, lat, lon *float64, raw json.RawMessage, format string) {
	if ms.Len() == 0 {
		return // every value was rejected or skipped, each with its reason
	}
	for _, m := range ms.List() {
		if m.Parameter != canon.PM25 {
			continue
		}
		if idx, err := aqi.FromPM25(m.Value); err == nil {
			if a, err := canon.Normalize(canon.AQI, float64(idx), canon.AQI); err == nil {
				ms.AddMeasurement(a)
			}
		}
		break
	}
	ms.Emit(t, lat, lon, raw, format)
}

func (p *parser) position(id string, n int, c *coordinates) (*float64, *float64) {
	if c == nil || c.Latitude == nil || c.Longitude == nil {
		return nil, nil
	}
	lat, lon, ok := batch.Coord(*c.Latitude, *c.Longitude)
	if !ok {
		p.b.Reject(id, n, "coordinates", batch.ReasonBadCoordinates, fmt.Sprintf("coordinates %v, %v are not a valid position", *c.Latitude, *c.Longitude))
	}
	return lat, lon
}

func (p *parser) finish() observation.Batch {
	return p.b.Finish(func(id string) contract.Station {
		s := p.sites[id]
		var desc []string
		for _, x := range []string{s.city, s.country} {
			if x = strings.TrimSpace(x); x != "" {
				desc = append(desc, x)
			}
		}
		d := "OpenAQ location"
		if len(desc) > 0 {
			d += " in " + strings.Join(desc, ", ")
		}
		if s.source != "" {
			d += "; source " + s.source
		}
		name := strings.TrimSpace(s.name)
		if name == "" {
			name = id
		}
		return contract.Station{
			ExternalID: id, Name: name, Description: d, SensorType: SensorType, Status: "active",
			ProviderSlug: ProviderSlug, FeedSlug: FeedSlug, ReportingIntervalS: ReportingIntervalS,
		}
	})
}

// fragment is record n's raw fragment without insignificant whitespace; a record that will
// not compact is a malformed_row rejection (ok false).
func (p *parser) fragment(id string, n int, raw []byte) ([]byte, bool) {
	cr, err := batch.CompactRaw(raw)
	if err != nil {
		p.b.Reject(id, n, "", batch.ReasonMalformedRow, err.Error())
		return nil, false
	}
	return cr, true
}

// utc reads value, an RFC 3339 time of record n; a time that does not parse is a
// bad_timestamp rejection of field that names value as label (ok false).
func (p *parser) utc(id string, n int, field, label, value string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		p.b.Reject(id, n, field, batch.ReasonBadTimestamp, fmt.Sprintf("%s %q is not RFC 3339", label, batch.Truncate(value, 40)))
		return time.Time{}, false
	}
	return t.UTC(), true
}

// timed reads what every dated record needs before its values: its time, RFC 3339 in
// field (see utc), and its raw fragment; ok false when either is rejected.
func (p *parser) timed(id string, n int, field, value string, raw []byte) (time.Time, []byte, bool) {
	t, ok := p.utc(id, n, field, field, value)
	if !ok {
		return time.Time{}, nil, false
	}
	cr, ok := p.fragment(id, n, raw)
	return t, cr, ok
}

// rejecter is a batch.Builder, or an observation.Batch of station records.
type rejecter interface {
	Reject(station string, line int, field, reason, detail string)
}

// v1Location is the station id of result n of a v1 page, named by its country and location
// name; a result with no usable name is a missing_station rejection (ok false).
func v1Location(b rejecter, n int, country, location string) (string, bool) {
	id := StationID(country, location)
	if strings.TrimSpace(location) == "" || contract.ValidExternalID(id) != nil {
		b.Reject("", n, "location", batch.ReasonMissingStation, fmt.Sprintf("result %d has no usable location name", n))
		return "", false
	}
	return id, true
}

// locationStation is the station record of one location of a locations document (v1 or v3),
// with the canonical data types of its parameters, plus aqi with PM2.5, which this adapter
// computes. A bad position is a rejection in out.
func locationStation(out *observation.Batch, id string, n int, s site, c *coordinates, params []string) contract.Station {
	p := newParser()
	p.sites[id] = s
	lat, lon := p.position(id, n, c)
	p.b.Note(id, lat, lon)
	fin := p.finish()
	out.Rejections = append(out.Rejections, fin.Rejections...)
	st := fin.Stations[0]
	var types []string
	for _, name := range params {
		if c, ok := parameters[strings.ToLower(name)]; ok {
			types = append(types, c)
			if c == canon.PM25 {
				types = append(types, canon.AQI)
			}
		}
	}
	st.DataTypes = batch.MergeTypes(types, nil)
	return st
}

type latestResult struct {
	Location     string       `json:"location"`
	City         string       `json:"city"`
	Country      string       `json:"country"`
	Coordinates  *coordinates `json:"coordinates"`
	Measurements []struct {
		Parameter   string  `json:"parameter"`
		Value       float64 `json:"value"`
		LastUpdated string  `json:"lastUpdated"`
		Unit        string  `json:"unit"`
		SourceName  string  `json:"sourceName"`
	} `json:"measurements"`
}

// ParseLatest reads a /v1/latest page: per location, its measurements grouped by their
// lastUpdated time into one observation each. The raw fragment of each observation is the
// location's result object.
func ParseLatest(data []byte) (observation.Batch, error) {
	env, err := decodeEnvelope(data)
	if err != nil {
		return observation.Batch{}, err
	}
	p := newParser()
	for rec, r := range batch.Records[latestResult](p.b, "", "result", env.Results) {
		n, raw := rec.N, rec.Raw
		id, ok := v1Location(p.b, n, r.Country, r.Location)
		if !ok {
			continue
		}
		lat, lon := p.position(id, n, r.Coordinates)
		cr, ok := p.fragment(id, n, raw)
		if !ok {
			continue
		}
		src := ""
		groups := map[time.Time]*batch.Measurements{}
		var order []time.Time
		for _, m := range r.Measurements {
			if src == "" {
				src = m.SourceName
			}
			t, ok := p.utc(id, n, m.Parameter, "lastUpdated", m.LastUpdated)
			if !ok {
				continue
			}
			ms, ok := groups[t]
			if !ok {
				ms = p.b.Start(id, n)
				groups[t] = ms
				order = append(order, t)
			}
			p.add(ms, id, n, value{field: m.Parameter, param: m.Parameter, v: m.Value, unit: m.Unit})
		}
		p.sites[id] = site{name: r.Location, city: r.City, country: r.Country, source: src}
		p.b.Note(id, lat, lon)
		for _, t := range order {
			p.emit(groups[t], t, lat, lon, cr, RawLatest)
		}
	}
	return p.finish(), nil
}

type measurementRecord struct {
	Location  string `json:"location"`
	Parameter string `json:"parameter"`
	Date      struct {
		UTC   string `json:"utc"`
		Local string `json:"local"`
	} `json:"date"`
	Value       float64      `json:"value"`
	Unit        string       `json:"unit"`
	Coordinates *coordinates `json:"coordinates"`
	Country     string       `json:"country"`
	City        string       `json:"city"`
	SourceName  string       `json:"sourceName"`
}

// ParseMeasurements reads a /v1/measurements page, one record per parameter and time,
// grouping the records of one location and time into one observation whose raw fragment is
// {"results": [those records]}.
func ParseMeasurements(data []byte) (observation.Batch, error) {
	env, err := decodeEnvelope(data)
	if err != nil {
		return observation.Batch{}, err
	}
	p := newParser()
	type group struct {
		id       string
		t        time.Time
		n        int
		lat, lon *float64
		ms       *batch.Measurements
		raws     [][]byte
	}
	type key struct {
		id string
		t  time.Time
	}
	groups := map[key]*group{}
	var order []*group
	for rec, r := range batch.Records[measurementRecord](p.b, "", "result", env.Results) {
		n, raw := rec.N, rec.Raw
		id, ok := v1Location(p.b, n, r.Country, r.Location)
		if !ok {
			continue
		}
		t, cr, ok := p.timed(id, n, "date.utc", r.Date.UTC, raw)
		if !ok {
			continue
		}
		g, ok := groups[key{id, t}]
		if !ok {
			lat, lon := p.position(id, n, r.Coordinates)
			g = &group{id: id, t: t, n: n, lat: lat, lon: lon, ms: p.b.Start(id, n)}
			groups[key{id, t}] = g
			order = append(order, g)
			if _, seen := p.sites[id]; !seen {
				p.sites[id] = site{name: r.Location, city: r.City, country: r.Country, source: r.SourceName}
			}
			p.b.Note(id, lat, lon)
		}
		if ok && g.lat == nil {
			// The group's first record had no usable position; a later one may.
			g.lat, g.lon = p.position(id, n, r.Coordinates)
			p.b.Note(id, g.lat, g.lon)
		}
		g.raws = append(g.raws, cr)
		p.add(g.ms, id, n, value{field: r.Parameter, param: r.Parameter, v: r.Value, unit: r.Unit})
	}
	for _, g := range order {
		p.emit(g.ms, g.t, g.lat, g.lon, batch.Results(g.raws), RawMeasurements)
	}
	return p.finish(), nil
}

type locationResult struct {
	Location    string       `json:"location"`
	City        string       `json:"city"`
	Country     string       `json:"country"`
	SourceName  string       `json:"sourceName"`
	Coordinates *coordinates `json:"coordinates"`
	Parameters  []string     `json:"parameters"`
}

// ParseLocations reads a /v1/locations page into station records (no observations): one
// per location, with the canonical data types of its parameters (plus aqi when it has
// PM2.5, which this adapter computes).
func ParseLocations(data []byte) (observation.Batch, error) {
	env, err := decodeEnvelope(data)
	if err != nil {
		return observation.Batch{}, err
	}
	out := observation.Batch{Provider: ProviderSlug}
	for n, r := range batch.StationRecords[locationResult](&out, "result", env.Results) {
		id, ok := v1Location(&out, n, r.Country, r.Location)
		if !ok {
			continue
		}
		s := site{name: r.Location, city: r.City, country: r.Country, source: r.SourceName}
		out.Stations = append(out.Stations, locationStation(&out, id, n, s, r.Coordinates, r.Parameters))
	}
	return out, nil
}
