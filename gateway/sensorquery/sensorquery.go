// Package sensorquery is the public query of sensor lists (search, type, status, provider,
// data types, bounding box or radius, paging, fields) and the sensor selections built on
// it: the sensor list, area latest, the streams and the export all read it the same way.
package sensorquery

import (
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
)

// List sizes and bounds of the sensor and project lists (docs/spec.md 8, docs/api-decisions.md "Lists").
const (
	DefaultListLimit = 20
	MaxListLimit     = 1000
	DefaultRadiusKM  = 50
	// MaxRadiusKM is half the earth's circumference: every point is within it.
	MaxRadiusKM = 20038
	// MaxPage keeps page*limit far from overflowing any offset type.
	MaxPage = 10_000_000
	// MaxTextParam bounds free-text and slug parameters.
	MaxTextParam = 200
	// maxListItems bounds the items of data_types and fields.
	maxListItems = 64
)

// Query is a parsed sensor-list query: the filter for the store and how to shape
// each item.
type Query struct {
	Filter  catalog.SensorFilter
	Minimal bool
	// Fields are the requested field names, trimmed and deduplicated, in request order;
	// the view keeps the names it knows and ignores the others (docs/spec.md 4.2).
	Fields []string
}

// Parse parses the query of GET /sensors and /sensors/registry (docs/spec.md 4.2).
// It is pure: every input gives a query or an *apierr.Error naming the parameter and the
// form it takes. An empty value counts as absent; a repeated parameter, a control character
// or invalid UTF-8 is refused (CheckValues), never passed to the store or ignored.
func Parse(v url.Values) (Query, error) {
	q := Query{Filter: catalog.SensorFilter{Page: 1, Limit: DefaultListLimit}}
	f := &q.Filter
	if err := CheckValues(v); err != nil {
		return q, err
	}
	var err error
	if f.Search, err = TextParam(v, "search"); err != nil {
		return q, err
	}
	if f.SensorType, err = TextParam(v, "sensor_type"); err != nil {
		return q, err
	}
	if f.Status, err = TextParam(v, "status"); err != nil {
		return q, err
	}
	if f.Provider, err = TextParam(v, "provider"); err != nil {
		return q, err
	}
	if f.DataTypes, err = dataTypesParam(v); err != nil {
		return q, err
	}
	if f.Page, f.Limit, err = PageParams(v); err != nil {
		return q, err
	}
	if f.BBox, err = bboxParams(v); err != nil {
		return q, err
	}
	if f.Near, err = nearParams(v); err != nil {
		return q, err
	}
	if f.BBox != nil && f.Near != nil {
		return q, apierr.Invalid("radius_km", "a map filter is either a bounding box (min_lat, min_lon, max_lat, max_lon) or a center with radius (lat, lon, radius_km), not both")
	}
	switch s := v.Get("sort"); s {
	case "", "name":
	case "distance":
		if f.Near == nil {
			return q, apierr.Invalid("sort", "sort=distance needs a radius filter (lat and lon)")
		}
		f.SortByDistance = true
	default:
		return q, apierr.Invalid("sort", "want name or distance, got %q", Clip(s))
	}
	if s := v.Get("minimal"); s != "" {
		switch strings.ToLower(s) {
		case "true", "1":
			q.Minimal = true
		case "false", "0":
		default:
			return q, apierr.Invalid("minimal", "want true, false, 1 or 0, got %q", Clip(s))
		}
	}
	q.Fields = listParam(v.Get("fields"))
	return q, nil
}

// Clip shortens a bad value for an error message, so that a huge parameter is not echoed
// back whole.
func Clip(s string) string { return apierr.Clip(s, 64) }

func TextParam(v url.Values, name string) (string, error) {
	s := strings.TrimSpace(v.Get(name))
	if len(s) > MaxTextParam {
		return "", apierr.Invalid(name, "want at most %d bytes, got %d", MaxTextParam, len(s))
	}
	return s, nil
}

// listParam splits a comma-separated list, trimming and dropping empty and repeated
// items, and keeps the first maxListItems.
func listParam(s string) []string {
	items, _ := List(s, maxListItems)
	return items
}

// List splits a comma-separated list, trimming and dropping empty and repeated items. It
// stops at max items and reports whether a further distinct item followed.
func List(s string, max int) (items []string, more bool) {
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" || seen[item] {
			continue
		}
		if len(items) == max {
			return items, true
		}
		seen[item] = true
		items = append(items, item)
	}
	return items, false
}

func dataTypesParam(v url.Values) ([]string, error) {
	items := listParam(v.Get("data_types"))
	for _, p := range items {
		if !canon.IsParameter(p) {
			return nil, apierr.Invalid("data_types", "%q is not a canonical parameter id; want a comma-separated list of %s", Clip(p), parameterIDs())
		}
	}
	return items, nil
}

func parameterIDs() string {
	ps := canon.Parameters()
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	return strings.Join(ids, ", ")
}

// PageParams parses page and limit. A limit above MaxListLimit is clamped (docs/api-decisions.md), and
// the response's pagination.limit shows the applied value.
func PageParams(v url.Values) (page, limit int, err error) {
	page, limit = 1, DefaultListLimit
	if s := v.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxPage {
			return 0, 0, apierr.Invalid("page", "want an integer from 1 to %d, got %q", MaxPage, Clip(s))
		}
		page = n
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil && isDigits(s) {
			n, err = MaxListLimit, nil // a positive integer too large for int: clamped like any other
		}
		if err != nil || n < 1 {
			return 0, 0, apierr.Invalid("limit", "want a positive integer (values above %d are clamped to %d), got %q", MaxListLimit, MaxListLimit, Clip(s))
		}
		limit = min(n, MaxListLimit)
	}
	return page, limit, nil
}

func isDigits(s string) bool {
	s = strings.TrimPrefix(s, "+")
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// coord parses a coordinate parameter within [-lim, lim].
func coord(v url.Values, name string, lim float64) (float64, bool, error) {
	s := v.Get(name)
	if s == "" {
		return 0, false, nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < -lim || x > lim {
		return 0, false, apierr.Invalid(name, "want a number from %g to %g (degrees), got %q", -lim, lim, Clip(s))
	}
	return x, true, nil
}

func bboxParams(v url.Values) (*catalog.BBox, error) {
	names := []string{"min_lat", "min_lon", "max_lat", "max_lon"}
	lims := []float64{90, 180, 90, 180}
	var vals [4]float64
	var missing []string
	for i, n := range names {
		x, ok, err := coord(v, n, lims[i])
		if err != nil {
			return nil, err
		}
		if !ok {
			missing = append(missing, n)
		}
		vals[i] = x
	}
	switch len(missing) {
	case 4:
		return nil, nil
	case 0:
	default:
		return nil, apierr.Invalid(missing[0], "a bounding box needs all four of min_lat, min_lon, max_lat and max_lon; missing %s", strings.Join(missing, ", "))
	}
	b := &catalog.BBox{MinLat: vals[0], MinLon: vals[1], MaxLat: vals[2], MaxLon: vals[3]}
	if b.MinLat > b.MaxLat {
		return nil, apierr.Invalid("min_lat", "must not be greater than max_lat (%g > %g)", b.MinLat, b.MaxLat)
	}
	return b, nil
}

func nearParams(v url.Values) (*catalog.Near, error) {
	lat, hasLat, err := coord(v, "lat", 90)
	if err != nil {
		return nil, err
	}
	lon, hasLon, err := coord(v, "lon", 180)
	if err != nil {
		return nil, err
	}
	rs := v.Get("radius_km")
	switch {
	case hasLat != hasLon:
		missing := "lon"
		if !hasLat {
			missing = "lat"
		}
		return nil, apierr.Invalid(missing, "lat and lon go together (the center of a radius filter); %s is missing", missing)
	case !hasLat && rs != "":
		return nil, apierr.Invalid("radius_km", "a radius needs a center: give lat and lon too")
	case !hasLat:
		return nil, nil
	}
	r := float64(DefaultRadiusKM)
	if rs != "" {
		r, err = strconv.ParseFloat(rs, 64)
		if err != nil || math.IsNaN(r) || r <= 0 || r > MaxRadiusKM {
			return nil, apierr.Invalid("radius_km", "want a number of kilometres greater than 0 and at most %d, got %q", MaxRadiusKM, Clip(rs))
		}
	}
	return &catalog.Near{Lat: lat, Lon: lon, RadiusKM: r}, nil
}
