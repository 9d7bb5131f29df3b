package ogc

import (
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkt"

	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// Paging bounds of the feature lists: the REST list's.
const (
	DefaultLimit = 10
	MaxLimit     = sensorquery.MaxListLimit
	// MaxSensors is the most sensors one EDR query reads (the export's bound).
	MaxSensors = contract.MaxExportSensors
	// MaxDays is the longest datetime range (the export's bound).
	MaxDays = contract.MaxExportDays
	// DefaultWindow is the range of an EDR query without datetime: the last day.
	DefaultWindow = 24 * time.Hour
	// PositionKM is how near a sensor must be to a position query's point.
	PositionKM = 1.0
	kmPerMile  = 1.609344
)

// checkParams refuses a query parameter the route does not take (OGC API - Features
// /req/core/query-param-unknown), naming it. f (the format switch most OGC clients send)
// is always taken; its value is checked by the handler.
func checkParams(v url.Values, known ...string) error {
	for name := range v {
		if name == "f" || slices.Contains(known, name) {
			continue
		}
		return apierr.Invalid(sensorquery.Clip(name), "unknown parameter; this route takes %s", strings.Join(append(known, "f"), ", "))
	}
	return nil
}

// format checks f=: json (and its spellings) for metadata, plus the answer types a
// route has.
func format(v url.Values, allowed ...string) error {
	f := v.Get("f")
	if f == "" || slices.Contains(allowed, strings.ToLower(f)) {
		return nil
	}
	return apierr.Invalid("f", "want one of %s, got %q", strings.Join(allowed, ", "), sensorquery.Clip(f))
}

// bbox parses bbox=minlon,minlat,maxlon,maxlat (CRS84) into the REST list's four
// parameters.
func bbox(s string, to url.Values) error {
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return apierr.Invalid("bbox", "want four numbers min lon, min lat, max lon, max lat (CRS84), got %d values", len(parts))
	}
	var n [4]float64
	for i, p := range parts {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return apierr.Invalid("bbox", "value %d is not a number: %q", i+1, sensorquery.Clip(p))
		}
		n[i] = x
	}
	if n[0] < -180 || n[2] > 180 || n[1] < -90 || n[3] > 90 || n[0] > 180 || n[2] < -180 || n[1] > 90 || n[3] < -90 {
		return apierr.Invalid("bbox", "out of range: longitudes within -180..180, latitudes within -90..90")
	}
	if n[1] > n[3] {
		return apierr.Invalid("bbox", "min lat %g is greater than max lat %g", n[1], n[3])
	}
	to.Set("min_lon", fmtF(n[0]))
	to.Set("min_lat", fmtF(n[1]))
	to.Set("max_lon", fmtF(n[2]))
	to.Set("max_lat", fmtF(n[3]))
	return nil
}

func fmtF(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// paging reads limit (default DefaultLimit, at most MaxLimit: a larger one is served as
// MaxLimit, as OGC API - Features allows) and offset.
func paging(v url.Values) (limit, offset int, err error) {
	limit = DefaultLimit
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, 0, apierr.Invalid("limit", "want a positive integer (at most %d), got %q", MaxLimit, sensorquery.Clip(s))
		}
		limit = min(n, MaxLimit)
	}
	if s := v.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > sensorquery.MaxPage {
			return 0, 0, apierr.Invalid("offset", "want a non-negative integer, got %q", sensorquery.Clip(s))
		}
		offset = n
	}
	return limit, offset, nil
}

// datetime parses EDR's datetime: an instant, or start/end with ".." for an open end (an
// open start is MaxDays before the end, an open end is now). Absent: the last
// DefaultWindow. An instant selects the readings at that time. At most MaxDays.
func datetime(s string, now time.Time) (since, until time.Time, err error) {
	now = now.UTC()
	if s == "" {
		return now.Add(-DefaultWindow), now, nil
	}
	parse := func(p string) (time.Time, error) {
		t, err := time.Parse(time.RFC3339Nano, p)
		if err != nil {
			return t, apierr.Invalid("datetime", "want an RFC 3339 time, an interval start/end, or .. for an open end; got %q", sensorquery.Clip(p))
		}
		return t.UTC(), nil
	}
	start, end, isRange := strings.Cut(s, "/")
	if !isRange {
		t, err := parse(s)
		if err != nil {
			return t, t, err
		}
		return t, t.Add(time.Millisecond), nil
	}
	if start == ".." && end == ".." {
		return since, until, apierr.Invalid("datetime", "an interval needs at least one end")
	}
	until = now
	if end != ".." && end != "" {
		if until, err = parse(end); err != nil {
			return
		}
	}
	since = until.Add(-MaxDays * 24 * time.Hour)
	if start != ".." && start != "" {
		if since, err = parse(start); err != nil {
			return
		}
	}
	if !until.After(since) {
		return since, until, apierr.Invalid("datetime", "the end must be after the start")
	}
	if until.Sub(since) > MaxDays*24*time.Hour {
		return since, until, apierr.Invalid("datetime", "the interval is longer than %d days; ask for it in parts", MaxDays)
	}
	return since, until, nil
}

// coords parses coords= WKT (orb's reader). want is "POINT" or "POLYGON"; a WKT of
// another type, a malformed one or a coordinate outside CRS84's range is a 400 naming
// coords.
func coords(v url.Values, want string) (orb.Geometry, error) {
	s := strings.TrimSpace(v.Get("coords"))
	if s == "" {
		return nil, apierr.Invalid("coords", "required: a WKT %s in CRS84 (longitude latitude)", want)
	}
	g, err := wkt.Unmarshal(s)
	if err != nil {
		return nil, apierr.Invalid("coords", "not a WKT %s: %v (got %q)", want, err, sensorquery.Clip(s))
	}
	if !strings.EqualFold(g.GeoJSONType(), want) {
		return nil, apierr.Invalid("coords", "want a WKT %s, got a %s", want, strings.ToUpper(g.GeoJSONType()))
	}
	bad := false
	forPoints(g, func(p orb.Point) {
		if math.IsNaN(p[0]) || math.IsNaN(p[1]) || p[0] < -180 || p[0] > 180 || p[1] < -90 || p[1] > 90 {
			bad = true
		}
	})
	if bad {
		return nil, apierr.Invalid("coords", "a coordinate is out of range: longitude within -180..180, latitude within -90..90, in that order")
	}
	if pg, ok := g.(orb.Polygon); ok {
		if len(pg) == 0 || len(pg[0]) < 4 || !pg[0].Closed() {
			return nil, apierr.Invalid("coords", "a polygon's outer ring needs at least four points, the last equal to the first")
		}
	}
	return g, nil
}

func forPoints(g orb.Geometry, f func(orb.Point)) {
	switch x := g.(type) {
	case orb.Point:
		f(x)
	case orb.Polygon:
		for _, r := range x {
			for _, p := range r {
				f(p)
			}
		}
	}
}

// within reads radius's within and within-units (km or mi) as kilometres, at most
// sensorquery.MaxRadiusKM.
func within(v url.Values) (float64, error) {
	s := v.Get("within")
	if s == "" {
		return 0, apierr.Invalid("within", "required: the radius, a positive number in within-units")
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || !(x > 0) || math.IsInf(x, 0) {
		return 0, apierr.Invalid("within", "want a positive number, got %q", sensorquery.Clip(s))
	}
	switch u := strings.ToLower(v.Get("within-units")); u {
	case "km":
	case "mi":
		x *= kmPerMile
	case "":
		return 0, apierr.Invalid("within-units", "required: km or mi")
	default:
		return 0, apierr.Invalid("within-units", "want km or mi, got %q", sensorquery.Clip(u))
	}
	if x > sensorquery.MaxRadiusKM {
		return 0, apierr.Invalid("within", "at most %d km", sensorquery.MaxRadiusKM)
	}
	return x, nil
}

// parameterNames reads parameter-name (a comma list): each must be one of the
// collection's; absent, all of them.
func parameterNames(v url.Values, s Service) ([]string, error) {
	raw := v.Get("parameter-name")
	if strings.TrimSpace(raw) == "" {
		return slices.Clone(s.Parameters), nil
	}
	names, more := sensorquery.List(raw, 64)
	if more {
		return nil, apierr.Invalid("parameter-name", "at most 64 parameters")
	}
	for _, n := range names {
		if !slices.Contains(s.Parameters, n) {
			return nil, apierr.Invalid("parameter-name", "unknown parameter %q in collection %q; it has %s", sensorquery.Clip(n), s.ID, strings.Join(s.Parameters, ", "))
		}
	}
	return names, nil
}
