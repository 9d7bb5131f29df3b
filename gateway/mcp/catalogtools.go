package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// Page sizes of the catalog tools.
const (
	searchDefaultLimit = 20
	searchMaxLimit     = 100
)

func parameterIDs() []string {
	var ids []string
	for _, p := range canon.Parameters() {
		ids = append(ids, p.ID)
	}
	return ids
}

func (h *Handler) newCatalogTools() (*toolSet, error) {
	params := parameterIDs()
	return newToolSet(
		newTool("describe_catalog", "Describe the catalog",
			"What the catalog holds: the backing services, the providers, the canonical parameters with their units, and sensor counts by type and status. Call it first to learn the vocabulary of search_sensors.",
			input(schema{}),
			object(schema{
				"services": array(object(schema{
					"id":               str("Service id; sensors' service_id"),
					"name":             str("Name"),
					"description":      str("Description"),
					"domain":           str("For example ocean, weather, air_quality"),
					"temporal_pattern": str("For example periodic"),
					"status":           str("active, degraded or down at the last probe"),
					"sensor_count":     integer("Sensors in the catalog backed by the service", 0, 0),
					"providers":        array(str("Provider slug"), "Providers the service ingests"),
					"tools":            array(str("Tool name"), "MCP tools of the service, callable at /api/v1/services/{id}/mcp"),
					"last_ingest_at":   nullable(strFormat("Last successful ingest", "date-time")),
				}, "id", "name", "domain", "status", "sensor_count"), "Backing services"),
				"providers": array(object(schema{
					"slug":         str("Provider slug; the provider filter of search_sensors"),
					"name":         str("Provider name"),
					"sensor_count": integer("Sensors of the provider", 0, 0),
				}, "slug", "name", "sensor_count"), "Providers"),
				"parameters": array(object(schema{
					"id":           str("Canonical parameter id"),
					"unit":         str("Canonical unit every value of the parameter is given in"),
					"meaning":      str("What the parameter measures"),
					"sensor_count": integer("Sensors that collect the parameter", 0, 0),
				}, "id", "unit", "meaning", "sensor_count"), "Canonical parameters"),
				"sensor_types": array(object(schema{
					"sensor_type": str("Sensor type"),
					"count":       integer("Sensors of the type", 0, 0),
				}, "sensor_type", "count"), "Sensor types"),
				"statuses": array(object(schema{
					"status": str("Status"),
					"count":  integer("Sensors with the status", 0, 0),
				}, "status", "count"), "Sensor statuses"),
				"total_sensors": integer("Sensors in the catalog", 0, 0),
				"generated_at":  strFormat("When this description was computed", "date-time"),
			}, "services", "providers", "parameters", "sensor_types", "statuses", "total_sensors", "generated_at"),
			runDescribeCatalog),
		newTool("search_sensors", "Search sensors",
			"Find sensors by text, type, status, provider, service, feed, measured parameters, bounding box or distance. Results are pages of at most `limit` sensors; pass nextCursor back as cursor (with the same other arguments) for the next page. Each sensor states how fresh its newest reading is.",
			input(schema{
				"query":       str("Substring of the name, description, external id or provider name"),
				"sensor_type": str("Exact sensor type (describe_catalog lists them)"),
				"status":      str("Exact status: active, inactive or maintenance"),
				"provider":    str("Provider slug"),
				"service_id":  str("Backing service id"),
				"feed":        str("Feed (project) slug or UUID"),
				"data_types":  array(enum("Canonical parameter id", params...), "Sensors that collect any of these parameters"),
				"bbox": input(schema{
					"min_lat": number("South edge, degrees"), "min_lon": number("West edge, degrees"),
					"max_lat": number("North edge, degrees"), "max_lon": number("East edge, degrees; smaller than min_lon crosses the antimeridian"),
				}, "min_lat", "min_lon", "max_lat", "max_lon"),
				"near": input(schema{
					"lat": number("Centre latitude, degrees"), "lon": number("Centre longitude, degrees"),
					"radius_km": number("Radius in km (default 50, at most 20000)"),
				}, "lat", "lon"),
				"sort":   enum("name (default) or distance (only with near)", "name", "distance"),
				"limit":  integer(fmt.Sprintf("Sensors per page (default %d)", searchDefaultLimit), 1, searchMaxLimit),
				"cursor": str("nextCursor of the previous page"),
			}),
			object(schema{
				"sensors":    array(sensorSummarySchema(), "This page of sensors, ordered by name then id (or by distance)"),
				"units":      unitsSchema(),
				"total":      integer("Sensors matching the filters", 0, 0),
				"limit":      integer("Page size applied", 1, 0),
				"nextCursor": str("Cursor of the next page; absent on the last page"),
			}, "sensors", "units", "total", "limit"),
			runSearchSensors),
		newTool("describe_sensor", "Describe a sensor",
			"Everything about one sensor: its record, backing service, the parameters it measures with their units, how fresh its data is, and its latest reading with provenance.",
			input(schema{
				"sensor_id": str("Sensor UUID or the provider's external id (for example 41001)"),
			}, "sensor_id"),
			object(schema{
				"sensor":       sensorRecordSchema(),
				"service":      nullable(object(schema{"id": str("Service id"), "name": str("Name"), "status": str("Status at the last probe"), "mcp_endpoint": str("Path of the service-scope MCP endpoint")}, "id", "name", "status")),
				"parameters":   array(object(schema{"id": str("Canonical parameter id"), "unit": str("Canonical unit"), "meaning": str("What it measures")}, "id", "unit", "meaning"), "Parameters the sensor collects"),
				"freshness":    freshnessSchema(),
				"latest":       nullable(readingSchema()),
				"latest_error": str("Why there is no latest reading, when latest is null"),
				"provenance":   nullable(provenanceSchema()),
				"endpoints": object(schema{
					"readings": str("REST path of the sensor's readings"),
					"mcp":      str("Path of the sensor-scope MCP endpoint"),
				}, "readings", "mcp"),
			}, "sensor", "parameters", "freshness", "latest", "provenance", "endpoints"),
			runDescribeSensor),
		newTool("get_readings", "Get readings",
			"Canonical readings of one sensor, newest first unless order=asc, optionally within a time range and reduced to some parameters. Every value carries its unit, every reading its age, and the result its provenance and freshness. Pages of at most `limit`; pass nextCursor back as cursor for the next page.",
			input(schema{
				"sensor_id":   str("Sensor UUID or the provider's external id"),
				"since":       str("Inclusive lower bound: RFC 3339 time or date YYYY-MM-DD (UTC)"),
				"until":       str("Exclusive upper bound: RFC 3339 time or date YYYY-MM-DD (UTC)"),
				"days":        number("Last N days up to now; not with since or until"),
				"parameters":  array(enum("Canonical parameter id", params...), "Keep only these parameters in each reading"),
				"order":       enum("desc (newest first, default) or asc", "desc", "asc"),
				"data_format": enum("cleaned (default): canonical measurements; raw: the source payload of each reading", "cleaned", "raw"),
				"limit":       integer(fmt.Sprintf("Readings per page (default %d)", contract.DefaultReadingsLimit), 1, contract.MaxReadingsLimit),
				"cursor":      str("nextCursor of the previous page"),
			}, "sensor_id"),
			object(schema{
				"sensor": object(schema{
					"id": strFormat("Sensor UUID", "uuid"), "external_id": str("Provider's id"), "name": str("Name"),
					"service_id": str("Backing service"), "provider_slug": str("Provider"),
				}, "id", "external_id", "name", "service_id"),
				"time_range": object(schema{
					"since": nullable(strFormat("Inclusive lower bound applied", "date-time")),
					"until": nullable(strFormat("Exclusive upper bound applied", "date-time")),
					"order": enum("Order of readings", "desc", "asc"),
				}, "since", "until", "order"),
				"units":      unitsSchema(),
				"readings":   array(readingSchema(), "This page of readings"),
				"count":      integer("Readings in this page", 0, 0),
				"total":      integer("Readings in the range", 0, 0),
				"freshness":  freshnessSchema(),
				"provenance": provenanceSchema(),
				"nextCursor": str("Cursor of the next page; absent on the last page"),
			}, "sensor", "time_range", "units", "readings", "count", "total", "freshness", "provenance"),
			runGetReadings),
	)
}

type serviceSummary struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	Description     string   `json:"description"`
	Domain          string   `json:"domain"`
	TemporalPattern string   `json:"temporal_pattern"`
	Status          string   `json:"status"`
	SensorCount     int      `json:"sensor_count"`
	Providers       []string `json:"providers"`
	Tools           []string `json:"tools"`
	LastIngestAt    *string  `json:"last_ingest_at"`
}

type providerCount struct {
	Slug        string `json:"slug"`
	Name        string `json:"name"`
	SensorCount int    `json:"sensor_count"`
}

type parameterCount struct {
	ID          string `json:"id"`
	Unit        string `json:"unit"`
	Meaning     string `json:"meaning"`
	SensorCount int    `json:"sensor_count"`
}

type typeCount struct {
	SensorType string `json:"sensor_type"`
	Count      int    `json:"count"`
}

type statusCount struct {
	Status string `json:"status"`
	Count  int    `json:"count"`
}

type catalogDescription struct {
	Services     []serviceSummary `json:"services"`
	Providers    []providerCount  `json:"providers"`
	Parameters   []parameterCount `json:"parameters"`
	SensorTypes  []typeCount      `json:"sensor_types"`
	Statuses     []statusCount    `json:"statuses"`
	TotalSensors int              `json:"total_sensors"`
	GeneratedAt  string           `json:"generated_at"`
}

func runDescribeCatalog(ctx context.Context, cc *callCtx, args json.RawMessage) (string, any, error) {
	if err := decodeArgs("describe_catalog", args, &struct{}{}); err != nil {
		return "", nil, err
	}
	st := cc.h.store
	count := func(f catalog.SensorFilter) (int, catalog.Sensor, error) {
		f.Page, f.Limit = 1, 1
		p, err := st.ListSensors(ctx, f)
		if err != nil {
			return 0, catalog.Sensor{}, fmt.Errorf("count sensors: %w", err)
		}
		var first catalog.Sensor
		if len(p.Sensors) > 0 {
			first = p.Sensors[0]
		}
		return p.Total, first, nil
	}
	out := catalogDescription{GeneratedAt: contract.FormatTime(cc.now)}
	var err error
	if out.TotalSensors, _, err = count(catalog.SensorFilter{}); err != nil {
		return "", nil, err
	}
	services, err := st.Services(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("services: %w", err)
	}
	providerSlugs := []string{}
	for _, s := range services {
		n, _, err := count(catalog.SensorFilter{ServiceID: s.ID})
		if err != nil {
			return "", nil, err
		}
		out.Services = append(out.Services, serviceSummary{
			ID: s.ID, Name: s.Name, Description: s.Description, Domain: s.Domain,
			TemporalPattern: s.TemporalPattern, Status: s.Status, SensorCount: n,
			Providers: nonNil(s.Providers), Tools: nonNil(s.Tools), LastIngestAt: timeString(s.LastIngestAt),
		})
		for _, p := range s.Providers {
			if !slices.Contains(providerSlugs, p) {
				providerSlugs = append(providerSlugs, p)
			}
		}
	}
	slices.Sort(providerSlugs)
	for _, slug := range providerSlugs {
		n, first, err := count(catalog.SensorFilter{Provider: slug})
		if err != nil {
			return "", nil, err
		}
		name := first.ProviderName
		if name == "" {
			name = slug
		}
		out.Providers = append(out.Providers, providerCount{Slug: slug, Name: name, SensorCount: n})
	}
	for _, p := range canon.Parameters() {
		n, _, err := count(catalog.SensorFilter{DataTypes: []string{p.ID}})
		if err != nil {
			return "", nil, err
		}
		out.Parameters = append(out.Parameters, parameterCount{ID: p.ID, Unit: p.Unit, Meaning: p.Meaning, SensorCount: n})
	}
	types, err := st.SensorTypes(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("sensor types: %w", err)
	}
	for _, t := range types {
		n, _, err := count(catalog.SensorFilter{SensorType: t})
		if err != nil {
			return "", nil, err
		}
		out.SensorTypes = append(out.SensorTypes, typeCount{SensorType: t, Count: n})
	}
	statuses, err := st.SensorStatuses(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("sensor statuses: %w", err)
	}
	for _, s := range statuses {
		n, _, err := count(catalog.SensorFilter{Status: s})
		if err != nil {
			return "", nil, err
		}
		out.Statuses = append(out.Statuses, statusCount{Status: s, Count: n})
	}
	if out.Services == nil {
		out.Services = []serviceSummary{}
	}
	if out.Providers == nil {
		out.Providers = []providerCount{}
	}
	if out.SensorTypes == nil {
		out.SensorTypes = []typeCount{}
	}
	if out.Statuses == nil {
		out.Statuses = []statusCount{}
	}
	summary := fmt.Sprintf("The catalog holds %d sensors from %d providers, served by %d services; %d canonical parameters, each with one unit.",
		out.TotalSensors, len(out.Providers), len(out.Services), len(out.Parameters))
	return summary, out, nil
}

type searchArgs struct {
	Query      string   `json:"query,omitempty"`
	SensorType string   `json:"sensor_type,omitempty"`
	Status     string   `json:"status,omitempty"`
	Provider   string   `json:"provider,omitempty"`
	ServiceID  string   `json:"service_id,omitempty"`
	Feed       string   `json:"feed,omitempty"`
	DataTypes  []string `json:"data_types,omitempty"`
	BBox       *struct {
		MinLat *float64 `json:"min_lat"`
		MinLon *float64 `json:"min_lon"`
		MaxLat *float64 `json:"max_lat"`
		MaxLon *float64 `json:"max_lon"`
	} `json:"bbox,omitempty"`
	Near *struct {
		Lat      *float64 `json:"lat"`
		Lon      *float64 `json:"lon"`
		RadiusKM *float64 `json:"radius_km"`
	} `json:"near,omitempty"`
	Sort   string `json:"sort,omitempty"`
	Limit  *int   `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

type searchResult struct {
	Sensors    []sensorSummary   `json:"sensors"`
	Units      map[string]string `json:"units"`
	Total      int               `json:"total"`
	Limit      int               `json:"limit"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

func runSearchSensors(ctx context.Context, cc *callCtx, raw json.RawMessage) (string, any, error) {
	const tool = "search_sensors"
	var a searchArgs
	if err := decodeArgs(tool, raw, &a); err != nil {
		return "", nil, err
	}
	f := catalog.SensorFilter{
		Search: a.Query, SensorType: a.SensorType, Status: a.Status, Provider: a.Provider, ServiceID: a.ServiceID,
	}
	for _, d := range a.DataTypes {
		if !canon.IsParameter(d) {
			return "", nil, badArg(tool, "data_types", "names %q, which is not a canonical parameter id (describe_catalog lists them)", clip(d, 40))
		}
	}
	f.DataTypes = a.DataTypes
	if a.Feed != "" {
		p, err := cc.h.project(ctx, a.Feed)
		if err != nil {
			return "", nil, notFound(err, apierr.NotFound, "%s: feed %q not found", tool, clip(a.Feed, 64))
		}
		if !cc.h.mayView(cc, p) {
			return "", nil, apierr.New(apierr.NotFound, "%s: feed %q not found", tool, clip(a.Feed, 64))
		}
		f.FeedID = &p.ID
	}
	if a.BBox != nil {
		b := a.BBox
		if b.MinLat == nil || b.MinLon == nil || b.MaxLat == nil || b.MaxLon == nil {
			return "", nil, badArg(tool, "bbox", "needs min_lat, min_lon, max_lat and max_lon")
		}
		if err := checkLat(tool, "bbox.min_lat", *b.MinLat); err != nil {
			return "", nil, err
		}
		if err := checkLat(tool, "bbox.max_lat", *b.MaxLat); err != nil {
			return "", nil, err
		}
		if err := checkLon(tool, "bbox.min_lon", *b.MinLon); err != nil {
			return "", nil, err
		}
		if err := checkLon(tool, "bbox.max_lon", *b.MaxLon); err != nil {
			return "", nil, err
		}
		if *b.MinLat > *b.MaxLat {
			return "", nil, badArg(tool, "bbox.min_lat", "must not exceed max_lat")
		}
		f.BBox = &catalog.BBox{MinLat: *b.MinLat, MinLon: *b.MinLon, MaxLat: *b.MaxLat, MaxLon: *b.MaxLon}
	}
	if a.Near != nil {
		n := a.Near
		if n.Lat == nil || n.Lon == nil {
			return "", nil, badArg(tool, "near", "needs lat and lon")
		}
		if err := checkLat(tool, "near.lat", *n.Lat); err != nil {
			return "", nil, err
		}
		if err := checkLon(tool, "near.lon", *n.Lon); err != nil {
			return "", nil, err
		}
		r := 50.0
		if n.RadiusKM != nil {
			r = *n.RadiusKM
			if math.IsNaN(r) || r <= 0 || r > 20000 {
				return "", nil, badArg(tool, "near.radius_km", "must be greater than 0 and at most 20000, got %g", r)
			}
		}
		f.Near = &catalog.Near{Lat: *n.Lat, Lon: *n.Lon, RadiusKM: r}
	}
	switch a.Sort {
	case "", "name":
	case "distance":
		if f.Near == nil {
			return "", nil, badArg(tool, "sort", "distance needs near")
		}
		f.SortByDistance = true
	default:
		return "", nil, badArg(tool, "sort", "must be name or distance, got %q", clip(a.Sort, 32))
	}
	limit := searchDefaultLimit
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > searchMaxLimit {
			return "", nil, badArg(tool, "limit", "must be between 1 and %d, got %d", searchMaxLimit, *a.Limit)
		}
		limit = *a.Limit
	}
	cursorless := a
	cursorless.Cursor, cursorless.Limit = "", nil
	qh := queryHash(cursorless)
	page := 1
	if a.Cursor != "" {
		c, err := decodeCursor(tool, a.Cursor, qh)
		if err != nil {
			return "", nil, err
		}
		page, limit = c.Page, c.Limit
	}
	f.Page, f.Limit = page, limit
	res, err := cc.h.store.ListSensors(ctx, f)
	if err != nil {
		return "", nil, asAPIError(fmt.Errorf("list sensors: %w", err))
	}
	out := searchResult{Sensors: []sensorSummary{}, Total: res.Total, Limit: limit}
	for _, s := range res.Sensors {
		out.Sensors = append(out.Sensors, summarize(s, cc.now))
	}
	out.Units = unitsOfSensors(res.Sensors)
	if page*limit < res.Total && len(res.Sensors) > 0 {
		out.NextCursor = encodeCursor(pageCursor{Page: page + 1, Limit: limit, Query: qh})
	}
	summary := fmt.Sprintf("%d of %d matching sensors (page %d, %d per page).", len(out.Sensors), out.Total, page, limit)
	if out.NextCursor != "" {
		summary += " More: call again with cursor=nextCursor."
	}
	return summary, out, nil
}

func checkLat(tool, name string, v float64) error {
	if math.IsNaN(v) || v < -90 || v > 90 {
		return badArg(tool, name, "must be a latitude between -90 and 90, got %g", v)
	}
	return nil
}

func checkLon(tool, name string, v float64) error {
	if math.IsNaN(v) || v < -180 || v > 180 {
		return badArg(tool, name, "must be a longitude between -180 and 180, got %g", v)
	}
	return nil
}

// mayView reports whether the caller may see a project: public, or its own.
func (h *Handler) mayView(cc *callCtx, p catalog.Project) bool {
	if p.Visibility != catalog.VisibilityPrivate {
		return true
	}
	return cc.viewer != nil && *cc.viewer == p.OwnerID
}

type parameterInfo struct {
	ID      string `json:"id"`
	Unit    string `json:"unit"`
	Meaning string `json:"meaning"`
}

type serviceRef struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"`
	MCPEndpoint string `json:"mcp_endpoint"`
}

type sensorDescription struct {
	Sensor      sensorRecord         `json:"sensor"`
	Service     *serviceRef          `json:"service"`
	Parameters  []parameterInfo      `json:"parameters"`
	Freshness   freshness            `json:"freshness"`
	Latest      *readingView         `json:"latest"`
	LatestError string               `json:"latest_error,omitempty"`
	Provenance  *contract.Provenance `json:"provenance"`
	Endpoints   map[string]string    `json:"endpoints"`
}

func runDescribeSensor(ctx context.Context, cc *callCtx, raw json.RawMessage) (string, any, error) {
	const tool = "describe_sensor"
	var a struct {
		SensorID string `json:"sensor_id"`
	}
	if err := decodeArgs(tool, raw, &a); err != nil {
		return "", nil, err
	}
	s, err := cc.h.resolveSensor(ctx, tool, "sensor_id", a.SensorID)
	if err != nil {
		return "", nil, err
	}
	out := sensorDescription{
		Sensor:     recordOf(s),
		Parameters: []parameterInfo{},
		Endpoints: map[string]string{
			"readings": "/api/v1/sensors/" + s.ID.String() + "/readings",
			"mcp":      "/api/v1/sensors/" + s.ID.String() + "/mcp",
		},
	}
	for _, d := range s.DataTypes {
		if p, ok := canon.Lookup(d); ok {
			out.Parameters = append(out.Parameters, parameterInfo{ID: p.ID, Unit: p.Unit, Meaning: p.Meaning})
		}
	}
	last := s.LastReadingAt
	svc, err := cc.h.serviceOf(ctx, s)
	if err != nil {
		out.LatestError = apierr.From(asAPIError(err)).Message
	} else {
		out.Service = &serviceRef{ID: svc.ID, Name: svc.Name, Status: svc.Status, MCPEndpoint: "/api/v1/services/" + svc.ID + "/mcp"}
		lr, err := cc.h.readings.Latest(ctx, svc, s.ExternalID, nil)
		if err != nil {
			out.LatestError = apierr.From(asAPIError(err)).Message
		} else {
			v := viewReading(lr.Reading, cc.now)
			out.Latest = &v
			p := lr.Provenance
			out.Provenance = &p
			t := lr.Reading.Timestamp.Time
			last = &t
		}
	}
	out.Freshness = newFreshness(last, s.ReportingIntervalS, cc.now)
	summary := fmt.Sprintf("%s (%s, %s) from %s, served by %s.", s.Name, s.ExternalID, s.SensorType, orDash(s.ProviderName), orDash(s.ServiceID))
	if out.Latest != nil {
		summary += " " + describeLatest(*out.Latest, out.Freshness)
	} else if out.LatestError != "" {
		summary += " No latest reading: " + out.LatestError
	}
	return summary, out, nil
}

func describeLatest(r readingView, f freshness) string {
	var parts []string
	for _, m := range r.Measurements {
		parts = append(parts, fmt.Sprintf("%s=%s %s", m.Parameter, strconv.FormatFloat(m.Value, 'f', -1, 64), m.Unit))
	}
	state := "fresh"
	if f.Stale != nil && *f.Stale {
		state = "stale"
	}
	return fmt.Sprintf("Latest reading at %s (%s old, %s): %s.", r.Timestamp, (time.Duration(r.AgeSeconds) * time.Second).String(), state, strings.Join(parts, ", "))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type readingsResult struct {
	Sensor     readingsSensor      `json:"sensor"`
	TimeRange  timeRange           `json:"time_range"`
	Units      map[string]string   `json:"units"`
	Readings   []readingView       `json:"readings"`
	Count      int                 `json:"count"`
	Total      int                 `json:"total"`
	Freshness  freshness           `json:"freshness"`
	Provenance contract.Provenance `json:"provenance"`
	NextCursor string              `json:"nextCursor,omitempty"`
}

type readingsSensor struct {
	ID           string `json:"id"`
	ExternalID   string `json:"external_id"`
	Name         string `json:"name"`
	ServiceID    string `json:"service_id"`
	ProviderSlug string `json:"provider_slug,omitempty"`
}

type timeRange struct {
	Since *string `json:"since"`
	Until *string `json:"until"`
	Order string  `json:"order"`
}

type getReadingsArgs struct {
	SensorID   string   `json:"sensor_id"`
	Since      string   `json:"since,omitempty"`
	Until      string   `json:"until,omitempty"`
	Days       *float64 `json:"days,omitempty"`
	Parameters []string `json:"parameters,omitempty"`
	Order      string   `json:"order,omitempty"`
	DataFormat string   `json:"data_format,omitempty"`
	Limit      *int     `json:"limit,omitempty"`
	Cursor     string   `json:"cursor,omitempty"`
}

func runGetReadings(ctx context.Context, cc *callCtx, raw json.RawMessage) (string, any, error) {
	const tool = "get_readings"
	var a getReadingsArgs
	if err := decodeArgs(tool, raw, &a); err != nil {
		return "", nil, err
	}
	s, err := cc.h.resolveSensor(ctx, tool, "sensor_id", a.SensorID)
	if err != nil {
		return "", nil, err
	}
	for _, p := range a.Parameters {
		if !canon.IsParameter(p) {
			return "", nil, badArg(tool, "parameters", "names %q, which is not a canonical parameter id (describe_catalog lists them)", clip(p, 40))
		}
	}
	q := url.Values{}
	if a.Since != "" {
		q.Set("since", a.Since)
	}
	if a.Until != "" {
		q.Set("until", a.Until)
	}
	if a.Days != nil {
		q.Set("days", strconv.FormatFloat(*a.Days, 'f', -1, 64))
	}
	switch a.Order {
	case "", "desc":
		a.Order = "desc"
	case "asc":
		q.Set("sort", "asc")
	default:
		return "", nil, badArg(tool, "order", "must be desc or asc, got %q", clip(a.Order, 32))
	}
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > contract.MaxReadingsLimit {
			return "", nil, badArg(tool, "limit", "must be between 1 and %d, got %d", contract.MaxReadingsLimit, *a.Limit)
		}
		q.Set("limit", strconv.Itoa(*a.Limit))
	}
	if a.DataFormat != "" {
		q.Set("data_format", a.DataFormat)
	}
	parsed, err := contract.ParseReadingsQuery(q, cc.now)
	if err != nil {
		return "", nil, apierr.New(apierr.InvalidParameter, "%s: %s", tool, apierr.From(err).Message)
	}
	hashArgs := a
	hashArgs.Cursor, hashArgs.Limit = "", nil
	hashArgs.SensorID = s.ID.String()
	qh := queryHash(hashArgs)
	page, limit := 1, parsed.Limit
	since, until := parsed.Since, parsed.Until
	if a.Cursor != "" {
		c, err := decodeCursor(tool, a.Cursor, qh)
		if err != nil {
			return "", nil, err
		}
		page, limit = c.Page, c.Limit
		// A days window is fixed when the first page is asked for, so that later pages do
		// not slide under the caller.
		if since, err = parseCursorTime(tool, c.Since); err != nil {
			return "", nil, err
		}
		if until, err = parseCursorTime(tool, c.Until); err != nil {
			return "", nil, err
		}
	}
	svc, err := cc.h.serviceOf(ctx, s)
	if err != nil {
		return "", nil, err
	}
	up := url.Values{}
	up.Set("data_format", parsed.Format)
	up.Set("limit", strconv.Itoa(limit))
	up.Set("page", strconv.Itoa(page))
	if !since.IsZero() {
		up.Set("since", since.Format(time.RFC3339Nano))
	}
	if !until.IsZero() {
		up.Set("until", until.Format(time.RFC3339Nano))
	}
	if a.Order == "asc" {
		up.Set("sort", "asc")
	}
	if len(a.Parameters) > 0 {
		up.Set("parameter", strings.Join(a.Parameters, ","))
	}

	// The newest reading decides freshness; when this page cannot hold it (a later page,
	// oldest first, or an upper bound), ask for it beside the page.
	needLatest := page > 1 || a.Order == "asc" || !until.IsZero()
	var (
		wg        sync.WaitGroup
		latest    contract.LatestResponse
		latestErr error
	)
	if needLatest {
		wg.Add(1)
		go func() {
			defer wg.Done()
			latest, latestErr = cc.h.readings.Latest(ctx, svc, s.ExternalID, nil)
		}()
	}
	rr, err := cc.h.readings.Readings(ctx, svc, s.ExternalID, up)
	wg.Wait()
	if err != nil {
		return "", nil, asAPIError(err)
	}
	out := readingsResult{
		Sensor:     readingsSensor{ID: s.ID.String(), ExternalID: s.ExternalID, Name: s.Name, ServiceID: s.ServiceID, ProviderSlug: s.ProviderSlug},
		TimeRange:  timeRange{Since: timeString(&since), Until: timeString(&until), Order: a.Order},
		Readings:   []readingView{},
		Total:      rr.Pagination.Total,
		Provenance: rr.Provenance,
	}
	for _, r := range rr.Readings {
		out.Readings = append(out.Readings, viewReading(r, cc.now))
	}
	out.Count = len(out.Readings)
	out.Units = unitsOf(out.Readings, a.Parameters)
	if parsed.Format == contract.FormatRaw {
		// Raw payloads carry the source's own units; state the canonical ones they map to.
		maps.Copy(out.Units, unitsOfSensors([]catalog.Sensor{s}))
	}
	if out.Provenance.SensorID == "" {
		out.Provenance = contract.Provenance{SensorID: s.ID.String(), ServiceID: s.ServiceID, SourceID: s.ExternalID, Provider: s.ProviderSlug}
	}
	last := s.LastReadingAt
	switch {
	case !needLatest && len(rr.Readings) > 0:
		t := rr.Readings[0].Timestamp.Time
		last = &t
	case needLatest && latestErr == nil:
		t := latest.Reading.Timestamp.Time
		last = &t
	}
	out.Freshness = newFreshness(last, s.ReportingIntervalS, cc.now)
	if page*limit < rr.Pagination.Total && len(rr.Readings) > 0 {
		out.NextCursor = encodeCursor(pageCursor{Page: page + 1, Limit: limit, Query: qh, Since: cursorTime(since), Until: cursorTime(until)})
	}
	summary := fmt.Sprintf("%d of %d readings of %s (%s, service %s), %s first.", out.Count, out.Total, s.Name, s.ExternalID, s.ServiceID, map[string]string{"desc": "newest", "asc": "oldest"}[a.Order])
	if len(out.Units) > 0 {
		var us []string
		for _, p := range slices.Sorted(maps.Keys(out.Units)) {
			us = append(us, p+" in "+out.Units[p])
		}
		summary += " Units: " + strings.Join(us, ", ") + "."
	}
	if out.Freshness.AgeSeconds != nil {
		state := "fresh"
		if *out.Freshness.Stale {
			state = "stale"
		}
		summary += fmt.Sprintf(" Newest reading %s, %s old (%s).", *out.Freshness.LastReadingAt, (time.Duration(*out.Freshness.AgeSeconds) * time.Second).String(), state)
	}
	if out.NextCursor != "" {
		summary += " More: call again with cursor=nextCursor."
	}
	return summary, out, nil
}

func cursorTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseCursorTime(tool, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return t, badArg(tool, "cursor", "is not a cursor this tool returned")
	}
	return t, nil
}
