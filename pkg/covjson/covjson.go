// Package covjson writes CoverageJSON (https://covjson.org/spec/): the point time series of
// sensors, one Coverage of domain type PointSeries per sensor, several in a
// CoverageCollection. It is the encoding OGC API - EDR answers in; the values are whatever
// the caller passes (the gateway passes the canonical values of the readings).
package covjson

import (
	"slices"
	"time"
)

// MediaType is CoverageJSON's registered media type.
const MediaType = "application/prs.coverage+json"

// TimeLayout is how the t axis spells a time: ISO 8601 UTC with milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Coverage is a CoverageJSON Coverage object. Domain is always inline.
type Coverage struct {
	Type       string               `json:"type"` // "Coverage"
	ID         string               `json:"id,omitempty"`
	Domain     Domain               `json:"domain"`
	Parameters map[string]Parameter `json:"parameters,omitempty"`
	Ranges     map[string]NdArray   `json:"ranges"`
}

// Collection is a CoverageJSON CoverageCollection of coverages of one domain type; the
// parameters are described once, at the collection.
type Collection struct {
	Type        string               `json:"type"` // "CoverageCollection"
	DomainType  string               `json:"domainType"`
	Parameters  map[string]Parameter `json:"parameters"`
	Referencing []Referencing        `json:"referencing"`
	Coverages   []Coverage           `json:"coverages"`
}

// Domain is a domain with its axes and, inline, its referencing.
type Domain struct {
	Type        string          `json:"type"` // "Domain"
	DomainType  string          `json:"domainType"`
	Axes        map[string]Axis `json:"axes"`
	Referencing []Referencing   `json:"referencing,omitempty"`
}

// Axis is an axis given by its values (numbers for x and y, ISO strings for t).
type Axis struct {
	Values []any `json:"values"`
}

// Referencing ties axes to a reference system.
type Referencing struct {
	Coordinates []string `json:"coordinates"`
	System      System   `json:"system"`
}

// System is a reference system: a geographic CRS by id, or the Gregorian calendar.
type System struct {
	Type     string `json:"type"`
	ID       string `json:"id,omitempty"`
	Calendar string `json:"calendar,omitempty"`
}

// Parameter describes what a range holds.
type Parameter struct {
	Type             string            `json:"type"` // "Parameter"
	Description      map[string]string `json:"description,omitempty"`
	Unit             Unit              `json:"unit"`
	ObservedProperty ObservedProperty  `json:"observedProperty"`
}

// Unit is a unit by its symbol (and label).
type Unit struct {
	Label  map[string]string `json:"label,omitempty"`
	Symbol string            `json:"symbol"`
}

// ObservedProperty names the phenomenon.
type ObservedProperty struct {
	ID    string            `json:"id,omitempty"`
	Label map[string]string `json:"label"`
}

// NdArray is a range of float values over the t axis; nil is a time without a value.
type NdArray struct {
	Type      string     `json:"type"` // "NdArray"
	DataType  string     `json:"dataType"`
	AxisNames []string   `json:"axisNames"`
	Shape     []int      `json:"shape"`
	Values    []*float64 `json:"values"`
}

// CRS84 is longitude, latitude on WGS 84, the CRS of every x, y here.
const CRS84 = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"

// referencing is the x, y and t referencing of a point series.
func referencing() []Referencing {
	return []Referencing{
		{Coordinates: []string{"x", "y"}, System: System{Type: "GeographicCRS", ID: CRS84}},
		{Coordinates: []string{"t"}, System: System{Type: "TemporalRS", Calendar: "Gregorian"}},
	}
}

// Sample is one value of one parameter at one time.
type Sample struct {
	Time      time.Time
	Parameter string
	Value     float64
}

// Series is the samples of one sensor at one place.
type Series struct {
	// ID names the coverage (the sensor's id).
	ID       string
	Lon, Lat float64
	Samples  []Sample
}

// PointSeries returns the PointSeries coverage of s: its distinct times in order on the t
// axis, and one range per parameter named in params (in that order; a parameter without
// a sample in s still gets its range, all null), null where a time has no value of it.
// When two samples share a time and parameter, the later one in s wins. s must have at
// least one sample: CoverageJSON has no empty axis.
func PointSeries(s Series, params []string, inline bool) Coverage {
	times := make([]int64, 0, len(s.Samples))
	for _, x := range s.Samples {
		times = append(times, x.Time.UnixMilli())
	}
	slices.Sort(times)
	times = slices.Compact(times)
	tv := make([]any, len(times))
	for i, ms := range times {
		tv[i] = time.UnixMilli(ms).UTC().Format(TimeLayout)
	}
	// Parameter k's values are [k*n, (k+1)*n) of one array, pointed into (nil is null).
	n := len(times)
	row := make(map[string]int, len(params))
	for k, p := range params {
		row[p] = k
	}
	values, ptrs := make([]float64, len(params)*n), make([]*float64, len(params)*n)
	for _, x := range s.Samples {
		k, ok := row[x.Parameter]
		if !ok {
			continue
		}
		i, _ := slices.BinarySearch(times, x.Time.UnixMilli())
		values[k*n+i] = x.Value
		ptrs[k*n+i] = &values[k*n+i]
	}
	ranges := make(map[string]NdArray, len(params))
	for k, p := range params {
		ranges[p] = NdArray{Type: "NdArray", DataType: "float", AxisNames: []string{"t"}, Shape: []int{n},
			Values: ptrs[k*n : (k+1)*n : (k+1)*n]}
	}
	d := Domain{Type: "Domain", DomainType: "PointSeries", Axes: map[string]Axis{
		"x": {Values: []any{s.Lon}},
		"y": {Values: []any{s.Lat}},
		"t": {Values: tv},
	}}
	if inline {
		d.Referencing = referencing()
	}
	return Coverage{Type: "Coverage", ID: s.ID, Domain: d, Ranges: ranges}
}

// NewCoverage is one sensor's series as a standalone Coverage, with its parameters.
func NewCoverage(s Series, params []string, describe map[string]Parameter) Coverage {
	c := PointSeries(s, params, true)
	c.Parameters = pick(describe, params)
	return c
}

// NewCollection is several sensors' series as a CoverageCollection of PointSeries, the
// parameters described once; a series without samples is left out.
func NewCollection(series []Series, params []string, describe map[string]Parameter) Collection {
	out := Collection{Type: "CoverageCollection", DomainType: "PointSeries", Parameters: pick(describe, params),
		Referencing: referencing(), Coverages: []Coverage{}}
	for _, s := range series {
		if len(s.Samples) == 0 {
			continue
		}
		out.Coverages = append(out.Coverages, PointSeries(s, params, false))
	}
	return out
}

func pick(describe map[string]Parameter, params []string) map[string]Parameter {
	out := make(map[string]Parameter, len(params))
	for _, p := range params {
		if d, ok := describe[p]; ok {
			out[p] = d
		}
	}
	return out
}
