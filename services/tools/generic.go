package tools

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/pkg/pagecursor"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// ---- latest_observation ----

// LatestObservationInput is the input of <service>.latest_observation.
type LatestObservationInput struct {
	Target
	Parameters []string `json:"parameters,omitempty"`
	QC         string   `json:"qc,omitempty"`
}

// LatestObservation is the output of <service>.latest_observation.
type LatestObservation struct {
	Station   StationRef `json:"station"`
	ReadingID string     `json:"reading_id" jsonschema:"UUIDv5 of sensor id and timestamp"`
	Freshness
	Measurements []Measurement `json:"measurements"`
	Location     *Location     `json:"location,omitempty"`
	Provenance   Provenance    `json:"provenance"`
}

func addLatestObservation(srv *mcp.Server, ts *toolset) error {
	return add(srv, ts, ToolLatestObservation, "Latest observation",
		"Newest reading of one station: each measurement in its canonical unit (and as the source gave it), "+
			"observation time, age, staleness, provenance."+
			deprecatedNote("station_id", "sensor_id"),
		func(p map[string]*jsonschema.Schema) {
			describeTarget(p)
			parametersSchema(p["parameters"])
			describe(p["qc"], qcDescription)
		}, ts.latestObservation)
}

func (ts *toolset) latestObservation(ctx context.Context, req *mcp.CallToolRequest, in LatestObservationInput) (LatestObservation, string, error) {
	if err := checkParameters(in.Parameters); err != nil {
		return LatestObservation{}, "", err
	}
	qc, err := contract.ParseQC(url.Values{"qc": {in.QC}}, contract.QCAll)
	if err != nil {
		return LatestObservation{}, "", argumentError(err)
	}
	st, err := ts.station(ctx, req, in.Target)
	if err != nil {
		return LatestObservation{}, "", err
	}
	r, err := ts.latest(ctx, st)
	if err != nil {
		return LatestObservation{}, "", err
	}
	ms, err := decodeMeasurements(r.Measurements, in.Parameters, qc, true)
	if err != nil {
		return LatestObservation{}, "", err
	}
	out := LatestObservation{
		Station:      ts.ref(st),
		ReadingID:    r.ID.String(),
		Freshness:    ts.freshness(st, r.Time),
		Measurements: ms,
		Location:     location(r.Lat, r.Lon, st),
		Provenance:   ts.provenance(st, &r),
	}
	return out, renderLatest(out), nil
}

// latest returns a station's newest reading, with "no readings" as a user error.
func (ts *toolset) latest(ctx context.Context, st contract.Station) (store.Reading, error) {
	r, err := ts.store.LatestReading(ctx, st.ExternalID)
	switch {
	case errors.Is(err, store.ErrNoReadings):
		return store.Reading{}, codedErrorf(apierr.NoReadings, "station %q (%s) of service %q has no readings yet", st.ExternalID, st.Name, ts.service)
	case errors.Is(err, store.ErrStationNotFound):
		return store.Reading{}, codedErrorf(apierr.SensorNotFound, "station %q not found in service %q; use %s to find station ids", st.ExternalID, ts.service, ts.name(ToolListStations))
	case err != nil:
		return store.Reading{}, fmt.Errorf("latest reading of %q: %w", st.ExternalID, err)
	}
	return r, nil
}

func location(lat, lon *float64, st contract.Station) *Location {
	if lat != nil && lon != nil {
		return &Location{Latitude: *lat, Longitude: *lon}
	}
	if st.Latitude != nil && st.Longitude != nil {
		return &Location{Latitude: *st.Latitude, Longitude: *st.Longitude}
	}
	return nil
}

// parametersSchema describes the parameters argument. The canonical ids are not listed
// as an enum: it would repeat eleven ids in three tools of every scope's tools/list
// (20 KB budget, docs/mcp.md); describe_station names a station's parameters and an
// unknown id is refused with the list of known ones.
// qcDescription describes the qc argument of the tools that return measurements.
const qcDescription = "quality filter: all (default), good (QARTOD flags 1, 2) or flags, e.g. 3,4"

func parametersSchema(s *jsonschema.Schema) {
	s.Description = parametersDescription
}

func checkParameters(ps []string) error {
	for _, p := range ps {
		if !canon.IsParameter(p) {
			known := []string{}
			for _, c := range canon.Parameters() {
				known = append(known, c.ID)
			}
			return userErrorf("parameters: unknown parameter id %q (known: %s)", apierr.Clip(p, 80), strings.Join(known, ", "))
		}
	}
	return nil
}

// ---- observations ----

// ObservationsInput is the input of <service>.observations.
type ObservationsInput struct {
	Target
	Since      string   `json:"since,omitempty"`
	Until      string   `json:"until,omitempty"`
	Days       *float64 `json:"days,omitempty"`
	Parameters []string `json:"parameters,omitempty"`
	Limit      *int     `json:"limit,omitempty"`
	Cursor     string   `json:"cursor,omitempty"`
	Page       *int     `json:"page,omitempty"`
	Sort       string   `json:"sort,omitempty"`
	QC         string   `json:"qc,omitempty"`
}

// ObservationReading is one reading of an observations result.
type ObservationReading struct {
	ID           string        `json:"id"`
	Timestamp    string        `json:"timestamp" jsonschema:"ISO 8601 UTC with milliseconds"`
	AgeSeconds   int64         `json:"age_seconds"`
	Measurements []Measurement `json:"measurements"`
	Location     *Location     `json:"location,omitempty"`
}

// TimeRange is the time range a query covered: since inclusive, until exclusive.
type TimeRange struct {
	Since string `json:"since,omitempty"`
	Until string `json:"until,omitempty"`
}

// Observations is the output of <service>.observations.
type Observations struct {
	Station    StationRef           `json:"station"`
	Range      TimeRange            `json:"range"`
	Sort       string               `json:"sort" jsonschema:"desc (newest first) or asc"`
	Units      map[string]string    `json:"units" jsonschema:"canonical unit of every parameter present"`
	Readings   []ObservationReading `json:"readings"`
	Newest     *Freshness           `json:"newest,omitempty" jsonschema:"freshness of the newest reading of this page"`
	Pagination contract.Pagination  `json:"pagination"`
	NextCursor string               `json:"nextCursor,omitempty" jsonschema:"cursor of the next page; absent on the last page"`
	Provenance Provenance           `json:"provenance"`
}

func addObservations(srv *mcp.Server, ts *toolset) error {
	return add(srv, ts, ToolObservations, "Observations",
		"One station's readings over since/until or days, optionally only some parameters, newest first unless sort=asc; "+
			"pages of limit (default 100, max 500); pass nextCursor back as cursor."+deprecatedNote("station_id", "sensor_id", "page", "cursor"),
		func(p map[string]*jsonschema.Schema) {
			describeTarget(p)
			describe(p["since"], "inclusive, RFC 3339 or YYYY-MM-DD (UTC)")
			describe(p["until"], "exclusive, RFC 3339 or YYYY-MM-DD (UTC)")
			describe(p["days"], "last N days (fractions allowed); not with since/until")
			p["days"].ExclusiveMinimum, p["days"].Maximum = ptr(0.0), ptr(float64(contract.MaxDays))
			parametersSchema(p["parameters"])
			describe(p["limit"], fmt.Sprintf("default %d, max %d (larger is clamped)", contract.DefaultReadingsLimit, contract.MaxReadingsLimit))
			p["limit"].Minimum, p["limit"].Default = ptr(1.0), []byte(strconv.Itoa(contract.DefaultReadingsLimit))
			describe(p["cursor"], "nextCursor of the previous page")
			describe(p["page"], "deprecated: 1-based page number; use cursor")
			p["page"].Minimum, p["page"].Deprecated = ptr(1.0), true
			describe(p["sort"], "desc (newest first, default) or asc")
			p["sort"].Enum = []any{"desc", "asc"}
			describe(p["qc"], qcDescription)
		}, ts.observations)
}

func (ts *toolset) observations(ctx context.Context, req *mcp.CallToolRequest, in ObservationsInput) (Observations, string, error) {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("since", in.Since)
	set("until", in.Until)
	if in.Days != nil {
		set("days", strconv.FormatFloat(*in.Days, 'f', -1, 64))
	}
	set("parameter", strings.Join(in.Parameters, ","))
	if in.Limit != nil {
		set("limit", strconv.Itoa(*in.Limit))
	}
	if in.Page != nil {
		if in.Cursor != "" {
			return Observations{}, "", userErrorf("page: cannot be combined with cursor; give one of them")
		}
		set("page", strconv.Itoa(*in.Page))
	}
	set("sort", in.Sort)
	set("qc", in.QC)
	if err := checkParameters(in.Parameters); err != nil {
		return Observations{}, "", err
	}
	now := ts.now()
	q, err := contract.ParseReadingsQuery(v, now)
	if err != nil {
		return Observations{}, "", argumentError(err)
	}
	st, err := ts.station(ctx, req, in.Target)
	if err != nil {
		return Observations{}, "", err
	}
	hashed := in
	hashed.Target, hashed.Cursor, hashed.Limit, hashed.Page = Target{SensorID: st.ExternalID}, "", nil, nil
	qh := pagecursor.QueryHash(hashed)
	if in.Cursor != "" {
		c, err := decodeCursor(in.Cursor, qh)
		if err != nil {
			return Observations{}, "", err
		}
		q.Page, q.Limit = c.Page, min(c.Limit, contract.MaxReadingsLimit)
		// The range of the first page, so a days window does not slide between pages.
		if q.Since, err = cursorTime(c.Since); err != nil {
			return Observations{}, "", err
		}
		if q.Until, err = cursorTime(c.Until); err != nil {
			return Observations{}, "", err
		}
	}
	rs, total, err := ts.store.Readings(ctx, st.ExternalID, q)
	if err != nil {
		if errors.Is(err, store.ErrStationNotFound) {
			return Observations{}, "", codedErrorf(apierr.SensorNotFound, "station %q not found in service %q", st.ExternalID, ts.service)
		}
		return Observations{}, "", fmt.Errorf("readings of %q: %w", st.ExternalID, err)
	}
	out := Observations{
		Station:    ts.ref(st),
		Sort:       "desc",
		Units:      map[string]string{},
		Readings:   make([]ObservationReading, 0, len(rs)),
		Pagination: contract.NewPagination(q.Page, q.Limit, total),
		Provenance: ts.provenance(st, nil),
	}
	if q.Ascending {
		out.Sort = "asc"
	}
	if !q.Since.IsZero() {
		out.Range.Since = contract.FormatTime(q.Since)
	}
	if !q.Until.IsZero() {
		out.Range.Until = contract.FormatTime(q.Until)
	}
	var newest time.Time
	for i := range rs {
		r := &rs[i]
		ms, err := decodeMeasurements(r.Measurements, q.Parameters, q.QC, false)
		if err != nil {
			return Observations{}, "", err
		}
		for _, m := range ms {
			out.Units[m.Parameter] = m.Unit
		}
		out.Readings = append(out.Readings, ObservationReading{
			ID: r.ID.String(), Timestamp: contract.FormatTime(r.Time), AgeSeconds: age(now, r.Time),
			Measurements: ms, Location: location(r.Lat, r.Lon, contract.Station{}),
		})
		if r.Provider != "" {
			out.Provenance.Provider = r.Provider
		}
		if r.Time.After(newest) {
			newest = r.Time
		}
	}
	if !newest.IsZero() {
		f := ts.freshness(st, newest)
		out.Newest = &f
	}
	if q.Page*q.Limit < total && len(rs) > 0 {
		out.NextCursor = pagecursor.Encode(pagecursor.Cursor{Page: q.Page + 1, Limit: q.Limit, Query: qh, Since: out.Range.Since, Until: out.Range.Until})
	}
	return out, renderObservations(out), nil
}

func cursorTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return t, userErrorf("cursor: not a cursor this tool returned")
	}
	return t, nil
}

// argumentError rewords a query parse error of pkg/contract for a tool caller.
func argumentError(err error) error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return userErrorf("%s", strings.Replace(ae.Message, "invalid parameter", "invalid argument", 1))
	}
	return userErrorf("invalid arguments: %v", err)
}

// ---- list_stations ----

// Station list limits.
const (
	DefaultStationsLimit = 20
	MaxStationsLimit     = 1000
	DefaultRadiusKM      = 50.0
	// EarthRadiusKM is the mean earth radius (IUGG) used for great-circle distances.
	EarthRadiusKM = 6371.0088
)

// ListStationsInput is the input of <service>.list_stations.
type ListStationsInput struct {
	Search     string   `json:"search,omitempty"`
	Provider   string   `json:"provider,omitempty"`
	Feed       string   `json:"feed,omitempty"`
	SensorType string   `json:"sensor_type,omitempty"`
	Status     string   `json:"status,omitempty"`
	DataType   string   `json:"data_type,omitempty"`
	Latitude   *float64 `json:"latitude,omitempty"`
	Longitude  *float64 `json:"longitude,omitempty"`
	RadiusKM   *float64 `json:"radius_km,omitempty"`
	Limit      *int     `json:"limit,omitempty"`
	Cursor     string   `json:"cursor,omitempty"`
	Page       *int     `json:"page,omitempty"`
}

// StationSummary is one station of a list.
type StationSummary struct {
	SensorID           string   `json:"sensor_id"`
	ExternalID         string   `json:"external_id"`
	Name               string   `json:"name"`
	SensorType         string   `json:"sensor_type"`
	Status             string   `json:"status"`
	DataTypes          []string `json:"data_types"`
	Latitude           *float64 `json:"latitude,omitempty"`
	Longitude          *float64 `json:"longitude,omitempty"`
	Provider           string   `json:"provider"`
	Feed               string   `json:"feed"`
	ReportingIntervalS int      `json:"reporting_interval_s"`
	LastReadingAt      string   `json:"last_reading_at,omitempty" jsonschema:"ISO 8601 UTC with milliseconds"`
	AgeSeconds         *int64   `json:"age_seconds,omitempty" jsonschema:"age of the last reading, seconds"`
	Stale              *bool    `json:"stale,omitempty"`
	DistanceKM         *float64 `json:"distance_km,omitempty" jsonschema:"great-circle distance from latitude/longitude"`
}

// StationFilters echoes the filters a list applied, including the feed taken from
// params._meta.feed_slug.
type StationFilters struct {
	Search     string   `json:"search,omitempty"`
	Provider   string   `json:"provider,omitempty"`
	Feed       string   `json:"feed,omitempty"`
	FeedFrom   string   `json:"feed_from,omitempty" jsonschema:"argument or params._meta.feed_slug"`
	SensorType string   `json:"sensor_type,omitempty"`
	Status     string   `json:"status,omitempty"`
	DataType   string   `json:"data_type,omitempty"`
	Near       *Near    `json:"near,omitempty"`
	OrderedBy  string   `json:"ordered_by" jsonschema:"name (then external id), or distance when near a point"`
	Unused     []string `json:"unused,omitempty"`
}

// Near is a radius filter.
type Near struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
	RadiusKM  float64 `json:"radius_km"`
}

// StationList is the output of <service>.list_stations.
type StationList struct {
	ServiceID  string              `json:"service_id"`
	Stations   []StationSummary    `json:"stations"`
	Filters    StationFilters      `json:"filters"`
	Pagination contract.Pagination `json:"pagination"`
	NextCursor string              `json:"nextCursor,omitempty" jsonschema:"cursor of the next page; absent on the last page"`
}

func addListStations(srv *mcp.Server, ts *toolset) error {
	return add(srv, ts, ToolListStations, "List stations",
		"The service's stations by text, provider, feed, type, status, parameter or radius (then nearest first), "+
			"each with its newest reading's age and staleness; "+
			fmt.Sprintf("pages of limit (default %d, max %d); pass nextCursor back as cursor.", DefaultStationsLimit, MaxStationsLimit)+
			deprecatedNote("page", "cursor"),
		func(p map[string]*jsonschema.Schema) {
			describe(p["search"], "substring of name, description or external id")
			describe(p["provider"], "provider slug")
			describe(p["feed"], "feed slug (default: params._meta.feed_slug)")
			describe(p["sensor_type"], "e.g. buoy, fixed_station, weather_station, air_quality_monitor")
			describe(p["status"], "e.g. active, inactive")
			describe(p["data_type"], "keep stations that report this canonical parameter id (e.g. wave_height_m)")
			describe(p["latitude"], "radius centre, degrees")
			num(-90, 90)(p["latitude"])
			describe(p["longitude"], "radius centre, degrees")
			num(-180, 180)(p["longitude"])
			describe(p["radius_km"], "km, default 50")
			p["radius_km"].ExclusiveMinimum, p["radius_km"].Maximum = ptr(0.0), ptr(20038.0)
			describe(p["limit"], fmt.Sprintf("default %d, max %d (larger is clamped)", DefaultStationsLimit, MaxStationsLimit))
			p["limit"].Minimum = ptr(1.0)
			describe(p["cursor"], "nextCursor of the previous page")
			describe(p["page"], "deprecated: 1-based page number; use cursor")
			p["page"].Minimum, p["page"].Deprecated = ptr(1.0), true
		}, ts.listStations)
}

func (ts *toolset) listStations(ctx context.Context, req *mcp.CallToolRequest, in ListStationsInput) (StationList, string, error) {
	f := StationFilters{Search: in.Search, Provider: in.Provider, Feed: in.Feed, SensorType: in.SensorType, Status: in.Status, DataType: in.DataType, OrderedBy: "name"}
	if f.Feed != "" {
		f.FeedFrom = "feed"
	} else if s := metaString(req, MetaFeedSlug); s != "" {
		f.Feed, f.FeedFrom = s, "params._meta."+MetaFeedSlug
	}
	if f.DataType != "" && !canon.IsParameter(f.DataType) {
		return StationList{}, "", userErrorf("data_type: unknown parameter id %q", apierr.Clip(f.DataType, 80))
	}
	limit, page := DefaultStationsLimit, 1
	if in.Limit != nil {
		if *in.Limit < 1 {
			return StationList{}, "", userErrorf("limit: want a positive integer (at most %d), got %d", MaxStationsLimit, *in.Limit)
		}
		limit = min(*in.Limit, MaxStationsLimit)
	}
	if in.Page != nil {
		if in.Cursor != "" {
			return StationList{}, "", userErrorf("page: cannot be combined with cursor; give one of them")
		}
		if *in.Page < 1 {
			return StationList{}, "", userErrorf("page: want a positive integer, got %d", *in.Page)
		}
		page = *in.Page
	}
	hashed := in
	hashed.Cursor, hashed.Limit, hashed.Page, hashed.Feed = "", nil, nil, f.Feed
	qh := pagecursor.QueryHash(hashed)
	if in.Cursor != "" {
		c, err := decodeCursor(in.Cursor, qh)
		if err != nil {
			return StationList{}, "", err
		}
		page, limit = c.Page, min(c.Limit, MaxStationsLimit)
	}
	switch {
	case in.Latitude != nil && in.Longitude != nil:
		n := Near{Latitude: *in.Latitude, Longitude: *in.Longitude, RadiusKM: DefaultRadiusKM}
		if in.RadiusKM != nil {
			n.RadiusKM = *in.RadiusKM
		}
		if math.Abs(n.Latitude) > 90 || math.IsNaN(n.Latitude) {
			return StationList{}, "", userErrorf("latitude: want -90..90, got %v", n.Latitude)
		}
		if math.Abs(n.Longitude) > 180 || math.IsNaN(n.Longitude) {
			return StationList{}, "", userErrorf("longitude: want -180..180, got %v", n.Longitude)
		}
		if !(n.RadiusKM > 0) {
			return StationList{}, "", userErrorf("radius_km: want a positive number of km, got %v", n.RadiusKM)
		}
		f.Near, f.OrderedBy = &n, "distance"
	case in.Latitude != nil:
		return StationList{}, "", userErrorf("latitude given without longitude: a radius filter needs both")
	case in.Longitude != nil:
		return StationList{}, "", userErrorf("longitude given without latitude: a radius filter needs both")
	case in.RadiusKM != nil:
		return StationList{}, "", userErrorf("radius_km given without latitude and longitude")
	}

	all, _, err := ts.store.Stations(ctx, store.StationFilter{Provider: f.Provider, Feed: f.Feed})
	if err != nil {
		return StationList{}, "", fmt.Errorf("list stations: %w", err)
	}
	needle := strings.ToLower(f.Search)
	var hits []StationSummary
	for _, st := range all {
		if needle != "" && !strings.Contains(strings.ToLower(st.Name+"\x00"+st.Description+"\x00"+st.ExternalID), needle) {
			continue
		}
		if f.SensorType != "" && !strings.EqualFold(st.SensorType, f.SensorType) {
			continue
		}
		if f.Status != "" && !strings.EqualFold(st.Status, f.Status) {
			continue
		}
		if f.DataType != "" && !contains(st.DataTypes, f.DataType) {
			continue
		}
		s := ts.summary(st)
		if f.Near != nil {
			if st.Latitude == nil || st.Longitude == nil {
				continue
			}
			d := Haversine(f.Near.Latitude, f.Near.Longitude, *st.Latitude, *st.Longitude)
			if d > f.Near.RadiusKM {
				continue
			}
			d = math.Round(d*1000) / 1000
			s.DistanceKM = &d
		}
		hits = append(hits, s)
	}
	sort.SliceStable(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if f.Near != nil && *a.DistanceKM != *b.DistanceKM {
			return *a.DistanceKM < *b.DistanceKM
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.ExternalID < b.ExternalID
	})
	out := StationList{ServiceID: ts.service, Filters: f, Pagination: contract.NewPagination(page, limit, len(hits)), Stations: []StationSummary{}}
	if lo := (page - 1) * limit; lo < len(hits) {
		out.Stations = hits[lo:min(lo+limit, len(hits))]
	}
	if page*limit < len(hits) {
		out.NextCursor = pagecursor.Encode(pagecursor.Cursor{Page: page + 1, Limit: limit, Query: qh})
	}
	return out, renderStationList(out), nil
}

func (ts *toolset) summary(st contract.Station) StationSummary {
	s := StationSummary{
		SensorID: ids.Sensor(ts.service, st.ExternalID).String(), ExternalID: st.ExternalID, Name: st.Name,
		SensorType: st.SensorType, Status: st.Status, DataTypes: st.DataTypes, Latitude: st.Latitude, Longitude: st.Longitude,
		Provider: st.ProviderSlug, Feed: st.FeedSlug, ReportingIntervalS: int(interval(st).Seconds()),
	}
	if s.DataTypes == nil {
		s.DataTypes = []string{}
	}
	if st.LastReadingAt != nil && !st.LastReadingAt.IsZero() {
		f := ts.freshness(st, st.LastReadingAt.Time)
		s.LastReadingAt, s.AgeSeconds, s.Stale = f.Timestamp, &f.AgeSeconds, &f.Stale
	}
	return s
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Haversine is the great-circle distance in km between two points in decimal degrees.
func Haversine(lat1, lon1, lat2, lon2 float64) float64 {
	rad := math.Pi / 180
	dLat := (lat2 - lat1) * rad
	dLon := (lon2 - lon1) * rad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * EarthRadiusKM * math.Asin(math.Min(1, math.Sqrt(a)))
}

// ---- describe_station ----

// DescribeStationInput is the input of <service>.describe_station.
type DescribeStationInput struct {
	Target
}

// ParameterInfo is a canonical parameter a station reports.
type ParameterInfo struct {
	Parameter string `json:"parameter"`
	Unit      string `json:"unit"`
	Meaning   string `json:"meaning"`
}

// StationDetail is everything the service knows about a station.
type StationDetail struct {
	StationSummary
	Description        string  `json:"description"`
	DeploymentDate     string  `json:"deployment_date,omitempty" jsonschema:"YYYY-MM-DD"`
	DecommissionedDate *string `json:"decommissioned_date,omitempty" jsonschema:"YYYY-MM-DD"`
	UpdatedAt          string  `json:"updated_at,omitempty" jsonschema:"when the station's metadata last changed, ISO 8601 UTC with milliseconds"`
}

// StationDescription is the output of <service>.describe_station.
type StationDescription struct {
	Station    StationDetail   `json:"station"`
	Parameters []ParameterInfo `json:"parameters"`
	Latest     *Freshness      `json:"latest,omitempty" jsonschema:"freshness of the newest reading; absent when the station has none"`
	Tools      []string        `json:"tools" jsonschema:"tools of this service that answer for this station"`
	Provenance Provenance      `json:"provenance"`
}

func addDescribeStation(srv *mcp.Server, ts *toolset) error {
	return add(srv, ts, ToolDescribeStation, "Describe station",
		"One station's metadata, reporting interval, parameters with units, and its newest reading's age."+deprecatedNote("station_id", "sensor_id"),
		func(p map[string]*jsonschema.Schema) {
			describeTarget(p)
		}, ts.describeStation)
}

func (ts *toolset) describeStation(ctx context.Context, req *mcp.CallToolRequest, in DescribeStationInput) (StationDescription, string, error) {
	st, err := ts.station(ctx, req, in.Target)
	if err != nil {
		return StationDescription{}, "", err
	}
	out := StationDescription{
		Station: StationDetail{
			StationSummary: ts.summary(st), Description: st.Description, DeploymentDate: st.DeploymentDate,
			DecommissionedDate: st.DecommissionedDate,
		},
		Parameters: []ParameterInfo{},
		Tools:      []string{},
		Provenance: ts.provenance(st, nil),
	}
	if !st.UpdatedAt.IsZero() {
		out.Station.UpdatedAt = contract.FormatTime(st.UpdatedAt.Time)
	}
	for _, p := range st.DataTypes {
		info := ParameterInfo{Parameter: p}
		if c, ok := canon.Lookup(p); ok {
			info.Unit, info.Meaning = c.Unit, c.Meaning
		}
		out.Parameters = append(out.Parameters, info)
	}
	r, err := ts.store.LatestReading(ctx, st.ExternalID)
	switch {
	case err == nil:
		f := ts.freshness(st, r.Time)
		out.Latest = &f
		out.Station.LastReadingAt, out.Station.AgeSeconds, out.Station.Stale = f.Timestamp, &f.AgeSeconds, &f.Stale
		out.Provenance = ts.provenance(st, &r)
	case errors.Is(err, store.ErrNoReadings):
	default:
		return StationDescription{}, "", fmt.Errorf("latest reading of %q: %w", st.ExternalID, err)
	}
	for _, name := range []string{ToolLatestObservation, ToolObservations, ToolDescribeStation} {
		out.Tools = append(out.Tools, ts.name(name))
	}
	for _, d := range ts.domain {
		out.Tools = append(out.Tools, ts.name(d))
	}
	return out, renderDescription(out), nil
}
