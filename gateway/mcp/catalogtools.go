package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

func (h *Handler) newCatalogTools() (*toolSet, error) {
	ts := newToolSet()
	addTool(ts, toolSpec[noArgs, catalogDescription]{
		Name: "describe_catalog", Title: "Describe the catalog",
		Description: "What the catalog holds: the backing services, the providers, the canonical parameters with their units, and sensor counts by type and status. Call it first to learn the vocabulary of search_sensors.",
		Run:         runDescribeCatalog,
	})
	addTool(ts, toolSpec[searchArgs, sensorPage]{
		Name: "search_sensors", Title: "Search sensors",
		Description: fmt.Sprintf("Find sensors by text, type, status, provider, service, feed, measured parameters, bounding box or distance. Pages of `limit` sensors (default %d, at most %d; larger is clamped); pass nextCursor back as cursor (with the same other arguments) for the next page. Each sensor states how fresh its newest reading is.", sensorListDefaultLimit, sensorListMaxLimit),
		Tweak: func(in, out *jsonschema.Schema) {
			setEnum(prop(in, "sort"), "name", "distance")
			setRange(prop(in, "limit"), 1, 0)
			setRange(prop(in, "near", "radius_km"), 0, sensorquery.MaxRadiusKM)
			prop(in, "near", "radius_km").ExclusiveMinimum, prop(in, "near", "radius_km").Minimum = ptrTo(0.0), nil
			setRange(prop(in, "bbox", "min_lat"), -90, 90)
			setRange(prop(in, "bbox", "max_lat"), -90, 90)
			setRange(prop(in, "bbox", "min_lon"), -180, 180)
			setRange(prop(in, "bbox", "max_lon"), -180, 180)
			setRange(prop(in, "near", "lat"), -90, 90)
			setRange(prop(in, "near", "lon"), -180, 180)
		},
		Run: runSearchSensors,
	})
	addTool(ts, toolSpec[sensorIDArgs, sensorDescription]{
		Name: "describe_sensor", Title: "Describe a sensor",
		Description: "Everything about one sensor: its record, backing service, the parameters it measures with their units, how fresh its data is, and its latest reading with provenance.",
		OpenWorld:   true,
		Run:         runDescribeSensor,
	})
	addTool(ts, toolSpec[getReadingsArgs, readingsResult]{
		Name: "get_readings", Title: "Get readings",
		Description: fmt.Sprintf("Canonical readings of one sensor, newest first unless sort=asc, optionally within a time range and reduced to some parameters. Every value carries its unit, every reading its age, and the result its provenance and freshness. Pages of `limit` readings (default %d, at most %d; larger is clamped); pass nextCursor back as cursor for the next page.", readingsDefaultLimit, readingsMaxLimit) +
			deprecatedNote("order", "sort"),
		OpenWorld: true,
		Tweak: func(in, out *jsonschema.Schema) {
			setEnum(prop(in, "sort"), "desc", "asc")
			setEnum(prop(in, "order"), "desc", "asc")
			setEnum(prop(in, "data_format"), "cleaned", "raw")
			setRange(prop(in, "limit"), 1, 0)
			prop(in, "days").ExclusiveMinimum = ptrTo(0.0)
			setEnum(prop(out, "time_range", "order"), "desc", "asc")
		},
		Run: runGetReadings,
	})
	h.addLiveTools(ts)
	h.addCatalogResources(ts)
	h.addLiveResources(ts)
	return ts.done()
}

// newSensorTools are the gateway's tools at the sensor scope, beside the sensor's service
// tools: aggregate_readings with the sensor implied.
func (h *Handler) newSensorTools() (*toolSet, error) {
	ts := newToolSet()
	addTool(ts, aggregateTool("Aggregate this sensor's readings",
		"Statistics of this sensor's readings per time bucket (1h, 3h, 6h, 1d, 1mo on the clock of tz): mean, min, max, count and coverage per parameter; "+
			"an empty bucket is present with count 0. At most 1000 buckets. Same rules as GET /api/v1/sensors/{id}/readings/aggregate."))
	return ts.done()
}

func ptrTo[T any](v T) *T { return &v }

// noArgs is the input of a tool without arguments.
type noArgs struct{}

// sensorIDArgs names one sensor.
type sensorIDArgs struct {
	SensorID string `json:"sensor_id" jsonschema:"Sensor UUID or the provider's external id (for example 41001)"`
}

type serviceSummary struct {
	ID              string   `json:"id" jsonschema:"Service id; sensors' service_id"`
	Name            string   `json:"name" jsonschema:"Name"`
	Description     string   `json:"description" jsonschema:"Description"`
	Domain          string   `json:"domain" jsonschema:"For example ocean, weather, air_quality"`
	TemporalPattern string   `json:"temporal_pattern" jsonschema:"For example periodic"`
	Status          string   `json:"status" jsonschema:"active, degraded or down at the last probe"`
	SensorCount     int      `json:"sensor_count" jsonschema:"Sensors in the catalog backed by the service"`
	Providers       []string `json:"providers" jsonschema:"Provider slugs the service ingests"`
	Tools           []string `json:"tools" jsonschema:"MCP tools of the service, callable at /api/v1/services/{id}/mcp"`
	LastIngestAt    *string  `json:"last_ingest_at" jsonschema:"Last successful ingest (ISO 8601 UTC), null when none"`
}

// providerCount is a provider (its slug is the provider filter of search_sensors) and
// how many sensors it has.
type providerCount struct {
	providerRef
	SensorCount int `json:"sensor_count" jsonschema:"Sensors of the provider"`
}

// parameterCount is a canonical parameter and how many sensors collect it.
type parameterCount struct {
	parameterInfo
	SensorCount int `json:"sensor_count" jsonschema:"Sensors that collect the parameter"`
}

type typeCount struct {
	SensorType string `json:"sensor_type" jsonschema:"Sensor type"`
	Count      int    `json:"count" jsonschema:"Sensors of the type"`
}

type statusCount struct {
	Status string `json:"status" jsonschema:"Status"`
	Count  int    `json:"count" jsonschema:"Sensors with the status"`
}

type catalogDescription struct {
	Services     []serviceSummary `json:"services" jsonschema:"Backing services"`
	Providers    []providerCount  `json:"providers" jsonschema:"Providers"`
	Parameters   []parameterCount `json:"parameters" jsonschema:"Canonical parameters"`
	SensorTypes  []typeCount      `json:"sensor_types" jsonschema:"Sensor types"`
	Statuses     []statusCount    `json:"statuses" jsonschema:"Sensor statuses"`
	TotalSensors int              `json:"total_sensors" jsonschema:"Sensors in the catalog"`
	GeneratedAt  string           `json:"generated_at" jsonschema:"When this description was computed (ISO 8601 UTC)"`
}

func runDescribeCatalog(ctx context.Context, cc *callCtx, _ noArgs) (string, catalogDescription, error) {
	var none catalogDescription
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
	out := catalogDescription{
		Services: []serviceSummary{}, Providers: []providerCount{}, SensorTypes: []typeCount{}, Statuses: []statusCount{},
		GeneratedAt: contract.FormatTime(cc.now),
	}
	var err error
	if out.TotalSensors, _, err = count(catalog.SensorFilter{}); err != nil {
		return "", none, err
	}
	services, err := st.Services(ctx)
	if err != nil {
		return "", none, fmt.Errorf("services: %w", err)
	}
	providerSlugs := []string{}
	for _, s := range services {
		n, _, err := count(catalog.SensorFilter{ServiceID: s.ID})
		if err != nil {
			return "", none, err
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
			return "", none, err
		}
		name := first.ProviderName
		if name == "" {
			name = slug
		}
		out.Providers = append(out.Providers, providerCount{providerRef: providerRef{Slug: slug, Name: name}, SensorCount: n})
	}
	for _, p := range canon.Parameters() {
		n, _, err := count(catalog.SensorFilter{DataTypes: []string{p.ID}})
		if err != nil {
			return "", none, err
		}
		out.Parameters = append(out.Parameters, parameterCount{parameterInfo: infoOf(p), SensorCount: n})
	}
	types, err := st.SensorTypes(ctx)
	if err != nil {
		return "", none, fmt.Errorf("sensor types: %w", err)
	}
	for _, t := range types {
		n, _, err := count(catalog.SensorFilter{SensorType: t})
		if err != nil {
			return "", none, err
		}
		out.SensorTypes = append(out.SensorTypes, typeCount{SensorType: t, Count: n})
	}
	statuses, err := st.SensorStatuses(ctx)
	if err != nil {
		return "", none, fmt.Errorf("sensor statuses: %w", err)
	}
	for _, s := range statuses {
		n, _, err := count(catalog.SensorFilter{Status: s})
		if err != nil {
			return "", none, err
		}
		out.Statuses = append(out.Statuses, statusCount{Status: s, Count: n})
	}
	summary := fmt.Sprintf("The catalog holds %d sensors from %d providers, served by %d services; %d canonical parameters, each with one unit.",
		out.TotalSensors, len(out.Providers), len(out.Services), len(out.Parameters))
	return summary, out, nil
}

type searchArgs struct {
	Query      string   `json:"query,omitempty" jsonschema:"Substring of the name, description, external id or provider name"`
	SensorType string   `json:"sensor_type,omitempty" jsonschema:"Exact sensor type (describe_catalog lists them)"`
	Status     string   `json:"status,omitempty" jsonschema:"Exact status: active, inactive or maintenance"`
	Provider   string   `json:"provider,omitempty" jsonschema:"Provider slug"`
	ServiceID  string   `json:"service_id,omitempty" jsonschema:"Backing service id"`
	Feed       string   `json:"feed,omitempty" jsonschema:"Feed (project) slug or UUID"`
	DataTypes  []string `json:"data_types,omitempty" jsonschema:"Sensors that collect any of these canonical parameter ids (sensorgate://parameters lists them)"`
	BBox       *bboxArg `json:"bbox,omitempty" jsonschema:"Bounding box; min_lon greater than max_lon crosses the antimeridian"`
	Near       *nearArg `json:"near,omitempty" jsonschema:"Radius around a point"`
	Sort       string   `json:"sort,omitempty" jsonschema:"name (default) or distance (only with near)"`
	Limit      *int     `json:"limit,omitempty" jsonschema:"Sensors per page (default 20, at most 1000; larger is clamped)"`
	Cursor     string   `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
}

type bboxArg struct {
	MinLat *float64 `json:"min_lat" jsonschema:"South edge, degrees"`
	MinLon *float64 `json:"min_lon" jsonschema:"West edge, degrees"`
	MaxLat *float64 `json:"max_lat" jsonschema:"North edge, degrees"`
	MaxLon *float64 `json:"max_lon" jsonschema:"East edge, degrees"`
}

type nearArg struct {
	Lat      *float64 `json:"lat" jsonschema:"Centre latitude, degrees"`
	Lon      *float64 `json:"lon" jsonschema:"Centre longitude, degrees"`
	RadiusKM *float64 `json:"radius_km,omitempty" jsonschema:"Radius in km (default 50, at most 20038: half the earth's circumference, as REST)"`
}

// searchNames maps the REST sensor list's parameters to search_sensors' arguments (the
// documented envelope mapping of docs/mcp.md): errors of the one parser name the argument.
var searchNames = map[string]string{
	"search": "query", "min_lat": "bbox.min_lat", "min_lon": "bbox.min_lon", "max_lat": "bbox.max_lat",
	"max_lon": "bbox.max_lon", "lat": "near.lat", "lon": "near.lon", "radius_km": "near.radius_km",
}

func runSearchSensors(ctx context.Context, cc *callCtx, a searchArgs) (string, sensorPage, error) {
	const tool = "search_sensors"
	var none sensorPage
	// The arguments become the query of GET /api/v1/sensors, read by its one parser.
	v := url.Values{}
	setArg(v, "search", a.Query)
	setArg(v, "sensor_type", a.SensorType)
	setArg(v, "status", a.Status)
	setArg(v, "provider", a.Provider)
	setArg(v, "data_types", strings.Join(a.DataTypes, ","))
	if b := a.BBox; b != nil {
		setNum(v, "min_lat", b.MinLat)
		setNum(v, "min_lon", b.MinLon)
		setNum(v, "max_lat", b.MaxLat)
		setNum(v, "max_lon", b.MaxLon)
		if b.MinLat == nil && b.MinLon == nil && b.MaxLat == nil && b.MaxLon == nil {
			return "", none, badArg(tool, "bbox", "needs min_lat, min_lon, max_lat and max_lon")
		}
	}
	if n := a.Near; n != nil {
		setNum(v, "lat", n.Lat)
		setNum(v, "lon", n.Lon)
		setNum(v, "radius_km", n.RadiusKM)
		if n.Lat == nil && n.Lon == nil {
			return "", none, badArg(tool, "near", "needs lat and lon")
		}
	}
	setArg(v, "sort", a.Sort)
	if a.Limit != nil {
		v.Set("limit", strconv.Itoa(*a.Limit))
	}
	q, err := parseSensorQuery(tool, v, searchNames)
	if err != nil {
		return "", none, err
	}
	f := q.Filter
	f.ServiceID = a.ServiceID
	if a.Feed != "" {
		p, err := cc.h.project(ctx, a.Feed)
		if err != nil {
			return "", none, notFound(err, apierr.NotFound, "%s: feed %q not found", tool, clip(a.Feed, 64))
		}
		if !cc.h.mayView(cc, p) {
			return "", none, apierr.New(apierr.NotFound, "%s: feed %q not found", tool, clip(a.Feed, 64))
		}
		f.FeedID = &p.ID
	}
	cursorless := a
	cursorless.Cursor, cursorless.Limit = "", nil
	out, err := cc.sensorPage(ctx, tool, a.Cursor, queryHash(cursorless), f.Limit, f)
	if err != nil {
		return "", none, asAPIError(fmt.Errorf("list sensors: %w", err))
	}
	summary := fmt.Sprintf("%d of %d matching sensors (page %d, %d per page).", len(out.Sensors), out.Total, out.page, out.Limit)
	if out.NextCursor != "" {
		summary += " More: call again with cursor=nextCursor."
	}
	return summary, out, nil
}

// parseSensorQuery reads v with the sensor list's one parser (sensorquery.Parse), naming a
// bad parameter by the tool's argument for it (names; unlisted ones keep their name).
func parseSensorQuery(tool string, v url.Values, names map[string]string) (sensorquery.Query, error) {
	q, err := sensorquery.Parse(v)
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return q, ae.Renamed(tool+": ", func(p string) string { return names[p] })
	}
	return q, err
}

// setNum sets a numeric argument as a query parameter, written as Go reads it back.
func setNum(v url.Values, name string, x *float64) {
	if x != nil {
		v.Set(name, strconv.FormatFloat(*x, 'g', -1, 64))
	}
}

// mayView reports whether the caller may see a project, by the one rule (catalog.Visible).
func (h *Handler) mayView(cc *callCtx, p catalog.Project) bool { return catalog.Visible(p, cc.viewer) }

// parameterInfo is a canonical parameter with its unit and meaning, as describe_sensor,
// describe_catalog and the parameters and sensor resources show it.
type parameterInfo struct {
	ID      string `json:"id" jsonschema:"Canonical parameter id"`
	Unit    string `json:"unit" jsonschema:"Canonical unit every value of the parameter is given in"`
	Meaning string `json:"meaning" jsonschema:"What the parameter measures"`
}

func infoOf(p canon.Parameter) parameterInfo {
	return parameterInfo{ID: p.ID, Unit: p.Unit, Meaning: p.Meaning}
}

// parametersOf lists the canonical parameters a sensor collects; ids the vocabulary does
// not know are left out.
func parametersOf(s catalog.Sensor) []parameterInfo {
	out := []parameterInfo{}
	for _, d := range s.DataTypes {
		if p, ok := canon.Lookup(d); ok {
			out = append(out, infoOf(p))
		}
	}
	return out
}

type serviceRef struct {
	ID          string `json:"id" jsonschema:"Service id"`
	Name        string `json:"name" jsonschema:"Name"`
	Status      string `json:"status" jsonschema:"Status at the last probe"`
	MCPEndpoint string `json:"mcp_endpoint" jsonschema:"Path of the service-scope MCP endpoint"`
}

type sensorEndpoints struct {
	Readings string `json:"readings" jsonschema:"REST path of the sensor's readings"`
	MCP      string `json:"mcp" jsonschema:"Path of the sensor-scope MCP endpoint"`
}

type sensorDescription struct {
	Sensor      sensorRecord         `json:"sensor" jsonschema:"The sensor record"`
	Service     *serviceRef          `json:"service" jsonschema:"The backing service; null when the sensor has none"`
	Parameters  []parameterInfo      `json:"parameters" jsonschema:"Parameters the sensor collects"`
	Freshness   freshness            `json:"freshness" jsonschema:"How old the newest reading is"`
	Latest      *readingView         `json:"latest" jsonschema:"The newest reading; null when none could be read"`
	LatestError string               `json:"latest_error,omitempty" jsonschema:"Why there is no latest reading, when latest is null"`
	Provenance  *contract.Provenance `json:"provenance" jsonschema:"Where the latest reading came from"`
	Endpoints   sensorEndpoints      `json:"endpoints" jsonschema:"Where to ask for more"`
}

func runDescribeSensor(ctx context.Context, cc *callCtx, a sensorIDArgs) (string, sensorDescription, error) {
	const tool = "describe_sensor"
	var none sensorDescription
	s, err := cc.h.resolveSensor(ctx, tool, "sensor_id", a.SensorID)
	if err != nil {
		return "", none, err
	}
	out := sensorDescription{
		Sensor:     recordOf(s),
		Parameters: parametersOf(s),
		Endpoints: sensorEndpoints{
			Readings: "/api/v1/sensors/" + s.ID.String() + "/readings",
			MCP:      "/api/v1/sensors/" + s.ID.String() + "/mcp",
		},
	}
	last := s.LastReadingAt
	svc, err := cc.h.serviceOf(ctx, s)
	if err != nil {
		out.LatestError = apierr.From(asAPIError(err)).Message
	} else {
		out.Service = &serviceRef{ID: svc.ID, Name: svc.Name, Status: svc.Status, MCPEndpoint: "/api/v1/services/" + svc.ID + "/mcp"}
		lr, err := cc.h.latest(ctx, s, nil)
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
	Sensor     readingsSensor      `json:"sensor" jsonschema:"The sensor read"`
	TimeRange  timeRange           `json:"time_range" jsonschema:"The range and order applied"`
	Units      map[string]string   `json:"units" jsonschema:"Canonical unit of every parameter in the result, by parameter id"`
	Readings   []readingView       `json:"readings" jsonschema:"This page of readings"`
	Count      int                 `json:"count" jsonschema:"Readings in this page"`
	Total      int                 `json:"total" jsonschema:"Readings in the range"`
	Freshness  freshness           `json:"freshness" jsonschema:"How old the sensor's newest reading is"`
	Provenance contract.Provenance `json:"provenance" jsonschema:"Where the readings came from"`
	NextCursor string              `json:"nextCursor,omitempty" jsonschema:"Cursor of the next page; absent on the last page"`
}

type readingsSensor struct {
	ID           string `json:"id" jsonschema:"Sensor UUID"`
	ExternalID   string `json:"external_id" jsonschema:"Provider's id"`
	Name         string `json:"name" jsonschema:"Name"`
	ServiceID    string `json:"service_id" jsonschema:"Backing service"`
	ProviderSlug string `json:"provider_slug,omitempty" jsonschema:"Provider"`
}

type timeRange struct {
	Since *string `json:"since" jsonschema:"Inclusive lower bound applied (ISO 8601 UTC), null when open"`
	Until *string `json:"until" jsonschema:"Exclusive upper bound applied (ISO 8601 UTC), null when open"`
	Order string  `json:"order" jsonschema:"Order of readings: desc (newest first) or asc"`
}

type getReadingsArgs struct {
	SensorID   string   `json:"sensor_id" jsonschema:"Sensor UUID or the provider's external id"`
	Since      string   `json:"since,omitempty" jsonschema:"Inclusive lower bound: RFC 3339 time or date YYYY-MM-DD (UTC)"`
	Until      string   `json:"until,omitempty" jsonschema:"Exclusive upper bound: RFC 3339 time or date YYYY-MM-DD (UTC)"`
	Days       *float64 `json:"days,omitempty" jsonschema:"Last N days up to now; not with since or until"`
	Parameters []string `json:"parameters,omitempty" jsonschema:"Keep only these canonical parameter ids (sensorgate://parameters lists them)"`
	Sort       string   `json:"sort,omitempty" jsonschema:"desc (newest first, default) or asc, as REST's sort"`
	Order      string   `json:"order,omitempty" jsonschema:"Deprecated name of sort"`
	DataFormat string   `json:"data_format,omitempty" jsonschema:"cleaned (default): canonical measurements; raw: the source payload of each reading"`
	QC         string   `json:"qc,omitempty" jsonschema:"Quality flags to keep: good (1 and 2), all or QARTOD codes such as 1,2,3 (1 pass, 2 not evaluated, 3 suspect, 4 fail, 9 missing); default all, as REST"`
	Limit      *int     `json:"limit,omitempty" jsonschema:"Readings per page (default 100, at most 500; larger is clamped)"`
	Cursor     string   `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
}

func runGetReadings(ctx context.Context, cc *callCtx, a getReadingsArgs) (string, readingsResult, error) {
	const tool = "get_readings"
	var none readingsResult
	if a.Order != "" {
		if a.Sort != "" && a.Sort != a.Order {
			return "", none, badArg(tool, "order", "is the deprecated name of sort; give one of them")
		}
		a.Sort, a.Order = a.Order, ""
	}
	s, err := cc.h.resolveSensor(ctx, tool, "sensor_id", a.SensorID)
	if err != nil {
		return "", none, err
	}
	for _, p := range a.Parameters {
		if !canon.IsParameter(p) {
			return "", none, badArg(tool, "parameters", "names %q, which is not a canonical parameter id (describe_catalog lists them)", clip(p, 40))
		}
	}
	q := url.Values{}
	setArg(q, "since", a.Since)
	setArg(q, "until", a.Until)
	if a.Days != nil {
		q.Set("days", strconv.FormatFloat(*a.Days, 'f', -1, 64))
	}
	switch a.Sort {
	case "", "desc":
		a.Sort = "desc"
	case "asc":
		q.Set("sort", "asc")
	default:
		return "", none, badArg(tool, "sort", "must be desc or asc, got %q", clip(a.Sort, 32))
	}
	if a.Limit != nil {
		n, err := limitOf(tool, a.Limit, readingsDefaultLimit, readingsMaxLimit)
		if err != nil {
			return "", none, err
		}
		q.Set("limit", strconv.Itoa(n))
	}
	setArg(q, "data_format", a.DataFormat)
	setArg(q, "qc", a.QC)
	parsed, err := contract.ParseReadingsQuery(q, cc.now)
	if err != nil {
		return "", none, apierr.New(apierr.InvalidParameter, "%s: %s", tool, apierr.From(err).Message)
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
			return "", none, err
		}
		page, limit = c.Page, c.Limit
		// A days window is fixed when the first page is asked for, so that later pages do
		// not slide under the caller.
		if since, err = parseCursorTime(tool, c.Since); err != nil {
			return "", none, err
		}
		if until, err = parseCursorTime(tool, c.Until); err != nil {
			return "", none, err
		}
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
	if a.Sort == "asc" {
		up.Set("sort", "asc")
	}
	if len(a.Parameters) > 0 {
		up.Set("parameter", strings.Join(a.Parameters, ","))
	}
	setArg(up, "qc", a.QC)

	// The newest reading decides freshness; when this page cannot hold it (a later page,
	// oldest first, or an upper bound), ask for it beside the page.
	needLatest := page > 1 || a.Sort == "asc" || !until.IsZero()
	var (
		wg        sync.WaitGroup
		latest    contract.LatestResponse
		latestErr error
	)
	if needLatest {
		wg.Add(1)
		go func() {
			defer wg.Done()
			latest, latestErr = cc.h.latest(ctx, s, nil)
		}()
	}
	rr, err := cc.h.readingsPage(ctx, s, up)
	wg.Wait()
	if err != nil {
		return "", none, asAPIError(err)
	}
	out := readingsResult{
		Sensor:     readingsSensor{ID: s.ID.String(), ExternalID: s.ExternalID, Name: s.Name, ServiceID: s.ServiceID, ProviderSlug: s.ProviderSlug},
		TimeRange:  timeRange{Since: timeString(&since), Until: timeString(&until), Order: a.Sort},
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
	summary := fmt.Sprintf("%d of %d readings of %s (%s, service %s), %s first.", out.Count, out.Total, s.Name, s.ExternalID, s.ServiceID, map[string]string{"desc": "newest", "asc": "oldest"}[a.Sort])
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
