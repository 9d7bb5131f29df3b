package airnow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/aqi"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

// ErrNotAirNow is returned for a payload that is not an AirNow JSON array of records.
var ErrNotAirNow = errors.New("airnow: not an AirNow JSON record array")

// missing is AirNow's missing-value marker.
const missing = -999

// startRecords decodes an AirNow array payload for a range loop over its records, each
// decoded into T, and starts the parser that reads them.
func startRecords[T any](data []byte) (*parser, iter.Seq2[batch.Record, T], error) {
	recs, err := decodeArray(data)
	if err != nil {
		return nil, nil, err
	}
	p := newParser()
	return p, batch.Records[T](p.b, "", "record", recs), nil
}

func decodeArray(data []byte) ([]json.RawMessage, error) {
	t := bytes.TrimSpace(data)
	if len(t) > 0 && t[0] == '{' {
		// Errors come as an object: {"WebServiceError":[{"Message":"Invalid API key"}]}.
		var e struct {
			WebServiceError []struct {
				Message string `json:"Message"`
			} `json:"WebServiceError"`
		}
		if json.Unmarshal(t, &e) == nil && len(e.WebServiceError) > 0 {
			return nil, fmt.Errorf("airnow: API error: %s", batch.Truncate(e.WebServiceError[0].Message, 200))
		}
	}
	var recs []json.RawMessage
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotAirNow, err)
	}
	return recs, nil
}

type site struct {
	name, agency, area string
}

type group struct {
	id       string
	t        time.Time
	n        int
	lat, lon *float64
	ms       *batch.Measurements
	raws     [][]byte
	aqi      float64 // highest pollutant AQI, -1 when none
	pm25     *float64
}

type parser struct {
	b      *batch.Builder
	sites  map[string]site
	groups map[string]*group
	order  []*group
}

func newParser() *parser {
	b := batch.New(ProviderSlug)
	// AirNow publishes every value as preliminary: its agencies verify them later, in
	// EPA's AQS, which sensorgate does not read.
	b.MarkAll(canon.FlagNotEvaluated, canon.ProviderPreliminary)
	return &parser{b: b, sites: map[string]site{}, groups: map[string]*group{}}
}

func (p *parser) group(id string, t time.Time, n int) *group {
	k := id + "|" + t.Format(time.RFC3339)
	g, ok := p.groups[k]
	if !ok {
		g = &group{id: id, t: t, n: n, ms: p.b.Start(id, n), aqi: -1}
		p.groups[k] = g
		p.order = append(p.order, g)
	}
	return g
}

// record adds record n, of site id and hour t, to its group: its raw fragment, and its
// position while the group has none. A record that will not compact is a malformed_row
// rejection (nil group); a position out of range is a bad_coordinates one, and the record
// still lands.
func (p *parser) record(id string, t time.Time, n int, raw []byte, lat, lon *float64) *group {
	compact, err := batch.CompactRaw(raw)
	if err != nil {
		p.b.Reject(id, n, "", batch.ReasonMalformedRow, err.Error())
		return nil
	}
	g := p.group(id, t, n)
	g.raws = append(g.raws, compact)
	if g.lat == nil && lat != nil && lon != nil {
		la, lo, ok := batch.Coord(*lat, *lon)
		if !ok {
			p.b.Reject(id, n, "Latitude/Longitude", batch.ReasonBadCoordinates, fmt.Sprintf("position %v, %v is out of range", *lat, *lon))
		}
		g.lat, g.lon = la, lo
		p.b.Note(id, la, lo)
	}
	return g
}

// sentinel reports (and records) a missing or negative value.
func (p *parser) sentinel(id string, n int, field string, v float64) bool {
	switch {
	case v == missing:
		p.b.Reject(id, n, field, batch.ReasonMissingSentinel, fmt.Sprintf("%s = -999 is AirNow's missing-value marker", field))
		return true
	case v < 0 || math.IsNaN(v) || math.IsInf(v, 0):
		p.b.Reject(id, n, field, batch.ReasonNegative, fmt.Sprintf("%s = %v is not a possible value", field, v))
		return true
	}
	return false
}

func (p *parser) aqiValue(g *group, n int, field string, v *float64) {
	if v == nil || p.sentinel(g.id, n, field, *v) {
		return
	}
	if *v > g.aqi {
		g.aqi = *v
	}
}

// finish emits every group: its concentrations plus one aqi, the highest pollutant AQI
// (EPA's overall AQI), computed from PM2.5 when the source gave none.
func (p *parser) finish(rawFormat string) observation.Batch {
	for _, g := range p.order {
		idx := g.aqi
		if idx < 0 && g.pm25 != nil {
			if v, err := aqi.FromPM25(*g.pm25); err == nil {
				idx = float64(v)
			}
		}
		if idx >= 0 {
			g.ms.Add("AQI", canon.AQI, idx, canon.AQI)
		}
		if g.ms.Len() == 0 {
			continue // every value was missing or rejected, each counted
		}
		g.ms.Emit(g.t, g.lat, g.lon, batch.Results(g.raws), rawFormat)
	}
	return p.b.Finish(func(id string) contract.Station {
		s := p.sites[id]
		name := strings.TrimSpace(s.name)
		if name == "" {
			name = id
		}
		var desc []string
		if s.agency != "" {
			desc = append(desc, s.agency)
		}
		if s.area != "" {
			desc = append(desc, "reporting area "+s.area)
		}
		return contract.Station{
			ExternalID: id, Name: name, Description: strings.Join(desc, "; "), SensorType: SensorType, Status: "active",
			ProviderSlug: ProviderSlug, FeedSlug: FeedSlug, ReportingIntervalS: ReportingIntervalS,
		}
	})
}

type dataRecord struct {
	Latitude         *float64 `json:"Latitude"`
	Longitude        *float64 `json:"Longitude"`
	UTC              string   `json:"UTC"`
	Parameter        string   `json:"Parameter"`
	Unit             string   `json:"Unit"`
	Value            *float64 `json:"Value"`
	RawConcentration *float64 `json:"RawConcentration"`
	AQI              *float64 `json:"AQI"`
	SiteName         string   `json:"SiteName"`
	AgencyName       string   `json:"AgencyName"`
	FullAQSCode      string   `json:"FullAQSCode"`
	IntlAQSCode      string   `json:"IntlAQSCode"`
}

// ParseData reads a monitoring-site data response (/aq/data/). Records of one site and hour
// become one observation: RawConcentration (the hour's measured concentration) of PM2.5,
// PM10 and ozone, and the highest pollutant AQI. Value (the NowCast) stays in the raw
// fragment only; -999 is missing and counted; other pollutants (CO, NO2, SO2) are
// unsupported_parameter. The site is IntlAQSCode, byte for byte (FullAQSCode only when a
// record has no international code).
func ParseData(data []byte) (observation.Batch, error) {
	p, records, err := startRecords[dataRecord](data)
	if err != nil {
		return observation.Batch{}, err
	}
	for rec, r := range records {
		n, raw := rec.N, rec.Raw
		code := r.IntlAQSCode
		if strings.TrimSpace(code) == "" {
			code = r.FullAQSCode
		}
		id := SiteID(code)
		if err := contract.ValidExternalID(id); err != nil {
			p.b.Reject("", n, "IntlAQSCode", batch.ReasonMissingStation, fmt.Sprintf("record %d: site code %q: %v", n, batch.Truncate(code, 40), err))
			continue
		}
		t, err := time.Parse("2006-01-02T15:04", strings.TrimSpace(r.UTC))
		if err != nil {
			p.b.Reject(id, n, "UTC", batch.ReasonBadTimestamp, fmt.Sprintf("UTC %q is not YYYY-MM-DDThh:mm", batch.Truncate(r.UTC, 40)))
			continue
		}
		g := p.record(id, t, n, raw, r.Latitude, r.Longitude)
		if g == nil {
			continue
		}
		if _, ok := p.sites[id]; !ok {
			p.sites[id] = site{name: r.SiteName, agency: r.AgencyName}
			p.b.Note(id, g.lat, g.lon)
		}
		pol, ok := pollutants[strings.ToUpper(strings.TrimSpace(r.Parameter))]
		if !ok {
			p.b.Reject(id, n, r.Parameter, batch.ReasonUnsupportedParam, fmt.Sprintf("parameter %q has no canonical id", batch.Truncate(r.Parameter, 40)))
			p.aqiValue(g, n, "AQI", r.AQI)
			continue
		}
		// RawConcentration is the hour's measured concentration; Value is AirNow's
		// NowCast (a weighted average of up to 12 hours), which is not a measurement of
		// this hour and stays in the raw fragment. A missing raw concentration (-999)
		// leaves the record's AQI only.
		if r.RawConcentration != nil && !p.sentinel(id, n, "RawConcentration", *r.RawConcentration) {
			unit := r.Unit
			if strings.TrimSpace(unit) == "" {
				unit = pol.unit
			}
			before := g.ms.Len()
			g.ms.Add("RawConcentration", pol.param, *r.RawConcentration, unit)
			if pol.param == canon.PM25 && g.ms.Len() > before {
				v := *r.RawConcentration
				g.pm25 = &v
			}
		}
		p.aqiValue(g, n, "AQI", r.AQI)
	}
	return p.finish(RawData), nil
}

type obsRecord struct {
	DateObserved      string          `json:"DateObserved"`
	HourObserved      json.RawMessage `json:"HourObserved"`
	LocalTimeZone     string          `json:"LocalTimeZone"`
	ReportingAreaName string          `json:"ReportingAreaName"`
	ReportingArea     string          `json:"ReportingArea"`
	StateCode         string          `json:"StateCode"`
	SiteID            string          `json:"SiteID"`
	SiteName          string          `json:"SiteName"`
	ParameterName     string          `json:"ParameterName"`
	NowcastAQI        *float64        `json:"NowcastAQI"`
	AQI               *float64        `json:"AQI"`
	AQICategoryName   string          `json:"AQICategoryName"`
	Latitude          *float64        `json:"Latitude"`
	Longitude         *float64        `json:"Longitude"`
	ReportingAgency   string          `json:"ReportingAgency"`
}

// zoneOffsets are the US time zone abbreviations AirNow writes in LocalTimeZone.
var zoneOffsets = map[string]int{
	"UTC": 0, "GMT": 0, "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6,
	"PST": -8, "PDT": -7, "AKST": -9, "AKDT": -8, "HST": -10, "AST": -4, "ADT": -3, "SST": -11, "CHST": 10,
}

// ParseObservations reads current (or historical) observations by zip code or lat/long
// (/aq/observation/...). They carry AQI only: each site (or reporting area, when no site is
// named) and hour becomes one observation with one aqi, the highest of its pollutants; the
// category stays in the raw fragment and aqi.CategoryOf names it. Local date, hour and
// zone abbreviation are converted to UTC.
func ParseObservations(data []byte) (observation.Batch, error) {
	p, records, err := startRecords[obsRecord](data)
	if err != nil {
		return observation.Batch{}, err
	}
	for rec, r := range records {
		n, raw := rec.N, rec.Raw
		area := strings.TrimSpace(r.ReportingAreaName)
		if area == "" {
			area = strings.TrimSpace(r.ReportingArea)
		}
		id := SiteID(r.SiteID)
		if strings.TrimSpace(r.SiteID) == "" && area != "" {
			id = areaID(r.StateCode, area)
		}
		if err := contract.ValidExternalID(id); err != nil {
			p.b.Reject("", n, "SiteID", batch.ReasonMissingStation, fmt.Sprintf("record %d names no usable site or reporting area: %v", n, err))
			continue
		}
		t, err := localTime(r.DateObserved, r.HourObserved, r.LocalTimeZone)
		if err != nil {
			p.b.Reject(id, n, "DateObserved", batch.ReasonBadTimestamp, err.Error())
			continue
		}
		g := p.record(id, t, n, raw, r.Latitude, r.Longitude)
		if g == nil {
			continue
		}
		if _, ok := p.sites[id]; !ok {
			name := r.SiteName
			if strings.TrimSpace(name) == "" {
				name = area
			}
			p.sites[id] = site{name: name, agency: r.ReportingAgency, area: area}
		}
		p.b.Note(id, g.lat, g.lon)
		if _, ok := pollutants[strings.ToUpper(strings.TrimSpace(r.ParameterName))]; !ok {
			// CO/NO2/SO2 AQIs still count towards the overall AQI, which is what lands.
			p.b.Reject(id, n, r.ParameterName, batch.ReasonUnsupportedParam, fmt.Sprintf("parameter %q has no canonical id; only its AQI is used", batch.Truncate(r.ParameterName, 40)))
		}
		v := r.NowcastAQI
		if v == nil {
			v = r.AQI
		}
		p.aqiValue(g, n, "AQI", v)
	}
	return p.finish(RawObservation), nil
}

func areaID(state, area string) string {
	var b strings.Builder
	b.WriteString("AREA:")
	if s := strings.ToUpper(strings.TrimSpace(state)); s != "" {
		b.WriteString(s + ":")
	}
	for _, r := range area {
		if strings.ContainsRune(`/\?#%`, r) || r < 0x20 || r == 0x7f {
			r = '-'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// localTime reads "2026-09-12" (or "2026-09-12 ") plus an hour given as 14 or "14:00" in a
// zone abbreviation such as PDT.
func localTime(date string, hourRaw json.RawMessage, zone string) (time.Time, error) {
	d, err := time.Parse("2006-01-02", strings.TrimSpace(date))
	if err != nil {
		return time.Time{}, fmt.Errorf("DateObserved %q is not YYYY-MM-DD", batch.Truncate(date, 40))
	}
	var hour int
	var hs string
	var hn float64
	switch {
	case json.Unmarshal(hourRaw, &hn) == nil:
		hour = int(hn)
		if float64(hour) != hn {
			return time.Time{}, fmt.Errorf("HourObserved %v is not a whole hour", hn)
		}
	case json.Unmarshal(hourRaw, &hs) == nil:
		h := strings.TrimSpace(hs)
		if i := strings.IndexByte(h, ':'); i >= 0 {
			h = h[:i]
		}
		if hour, err = strconv.Atoi(h); err != nil {
			return time.Time{}, fmt.Errorf("HourObserved %q is not an hour", batch.Truncate(hs, 20))
		}
	default:
		return time.Time{}, fmt.Errorf("HourObserved %s is missing or not an hour", batch.Truncate(string(hourRaw), 20))
	}
	if hour < 0 || hour > 23 {
		return time.Time{}, fmt.Errorf("HourObserved %d is out of 0..23", hour)
	}
	off, ok := zoneOffsets[strings.ToUpper(strings.TrimSpace(zone))]
	if !ok {
		return time.Time{}, fmt.Errorf("LocalTimeZone %q is not a known zone abbreviation", batch.Truncate(zone, 20))
	}
	return d.Add(time.Duration(hour-off) * time.Hour).UTC(), nil
}
