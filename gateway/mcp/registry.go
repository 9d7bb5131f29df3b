package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// Limits of the legacy registry tools (docs/spec.md 8 and docs/api-decisions.md "Lists and
// ordering"): the sensor-list limits of every scope (vocabulary.go).
const (
	// feedStreamMaxSensors bounds how many of a feed's sensors sensor_cleaned_stream reads.
	feedStreamMaxSensors = 20
	// feedLatestMaxSensors bounds how many sensors sensor_last_reading tries for a feed.
	feedLatestMaxSensors = 50
)

func (h *Handler) newRegistryTools() (*toolSet, error) {
	ts := newToolSet()
	flex := func(s *jsonschema.Schema, desc string) { s.Description = desc + " (a number, or a numeric string)" }
	addTool(ts, toolSpec[listSensorsArgs, listSensorsResult]{
		Name: "list_sensors", Title: "List sensors (registry)",
		Description: fmt.Sprintf("Legacy registry listing of sensors (docs/spec.md 4.10) with optional filters and a map radius. Pages of `limit` sensors (default %d, at most %d; larger is clamped); pass nextCursor back as cursor for the next page. `page` (spec 4.10) still works. New integrations should use search_sensors on /api/v1/catalog/mcp.", sensorListDefaultLimit, sensorListMaxLimit),
		Tweak: func(in, _ *jsonschema.Schema) {
			flex(prop(in, "latitude"), "Centre latitude for a radius filter")
			flex(prop(in, "longitude"), "Centre longitude for a radius filter")
			flex(prop(in, "radius_km"), "Radius around latitude/longitude in km (default 50)")
			flex(prop(in, "limit"), fmt.Sprintf("Sensors per page (default %d, at most %d; larger is clamped)", sensorListDefaultLimit, sensorListMaxLimit))
			flex(prop(in, "page"), "Page, from 1 (spec 4.10; cursor is the preferred form)")
			prop(in, "data_types").Description = "Canonical parameter ids, comma-separated or as an array; sensors collecting any of them"
		},
		Run: runListSensors,
	})
	addTool(ts, toolSpec[targetArgs, connectedServicesResult]{
		Name: "sensor_connected_services", Title: "Connected service of a sensor",
		Description: "The backing service of a sensor (sensor_id, UUID or external id) or of a feed (feed_id).",
		Run:         runConnectedServices,
	})
	addTool(ts, toolSpec[cleanedStreamArgs, cleanedStreamResult]{
		Name: "sensor_cleaned_stream", Title: "Readings of a sensor or feed",
		Description: fmt.Sprintf("Readings of a sensor (sensor_id) or of the first %d sensors of a feed by name (feed_id), newest first, cleaned (canonical units) or raw, optionally reduced to some parameters.", feedStreamMaxSensors),
		OpenWorld:   true,
		Tweak: func(in, out *jsonschema.Schema) {
			out.Required = nil // a sensor's envelope, or a feed's streams
			setEnum(prop(in, "data_format"), "cleaned", "raw")
			flex(prop(in, "days"), "Last N days")
			flex(prop(in, "limit"), fmt.Sprintf("Readings per sensor (default %d, at most %d; larger is clamped)", readingsDefaultLimit, readingsMaxLimit))
		},
		Run: runCleanedStream,
	})
	addTool(ts, toolSpec[targetArgs, lastReadingResult]{
		Name: "sensor_last_reading", Title: "Last reading",
		Description: "The most recent reading of a sensor, or of a feed (its first sensor by name that has a reading): timestamp, measurements as the legacy flat object {parameter: value} in canonical units (units lists them), and location.",
		OpenWorld:   true,
		Run:         runLastReading,
	})
	return ts.done()
}

type listSensorsArgs struct {
	SensorType string     `json:"sensor_type,omitempty" jsonschema:"Sensor type, for example buoy"`
	Provider   string     `json:"provider,omitempty" jsonschema:"Provider slug"`
	Status     string     `json:"status,omitempty" jsonschema:"active, inactive or maintenance"`
	DataTypes  stringList `json:"data_types,omitempty"`
	Latitude   flexNumber `json:"latitude,omitzero"`
	Longitude  flexNumber `json:"longitude,omitzero"`
	RadiusKM   flexNumber `json:"radius_km,omitzero"`
	Limit      flexNumber `json:"limit,omitzero"`
	Page       flexNumber `json:"page,omitzero"`
	Cursor     string     `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
}

type listSensorsResult struct {
	Sensors    []registryView      `json:"sensors" jsonschema:"Sensors of this page"`
	Pagination contract.Pagination `json:"pagination" jsonschema:"Page, limit applied, total and pages"`
	NextCursor string              `json:"nextCursor,omitempty" jsonschema:"Cursor of the next page; absent on the last page"`
}

type connectedServicesResult struct {
	SensorID         string                  `json:"sensor_id,omitempty" jsonschema:"The sensor asked about (UUID)"`
	FeedID           string                  `json:"feed_id,omitempty" jsonschema:"The feed asked about (UUID)"`
	ConnectedService string                  `json:"connected_service" jsonschema:"Id of the backing service"`
	Services         []catalog.ServiceRecord `json:"services" jsonschema:"The backing service record (SPEC 2.7)"`
}

type cleanedStreamArgs struct {
	targetArgs
	DataFormat string     `json:"data_format,omitempty" jsonschema:"cleaned (default) or raw"`
	Parameters []string   `json:"parameters,omitempty" jsonschema:"Keep only these canonical parameters in each reading"`
	Days       flexNumber `json:"days,omitzero"`
	Since      string     `json:"since,omitempty" jsonschema:"Inclusive lower bound, RFC 3339 or YYYY-MM-DD"`
	Until      string     `json:"until,omitempty" jsonschema:"Exclusive upper bound, RFC 3339 or YYYY-MM-DD"`
	Limit      flexNumber `json:"limit,omitzero"`
}

// cleanedStreamResult is one sensor's envelope, or a feed's streams.
type cleanedStreamResult struct {
	*streamEnvelope
	FeedID       string           `json:"feed_id,omitempty" jsonschema:"The feed asked about (UUID)"`
	FeedSlug     string           `json:"feed_slug,omitempty" jsonschema:"The feed's slug"`
	Streams      []streamEnvelope `json:"streams,omitempty" jsonschema:"One envelope per sensor of the feed"`
	SensorsTotal *int             `json:"sensors_total,omitempty" jsonschema:"Sensors in the feed (streams holds at most 20)"`
}

// sensorRef is the sensor a legacy registry result is about: sensor_last_reading's, and
// each envelope of sensor_cleaned_stream.
type sensorRef struct {
	SensorID   string `json:"sensor_id" jsonschema:"Sensor UUID"`
	ExternalID string `json:"external_id" jsonschema:"Provider's id"`
	Name       string `json:"name" jsonschema:"Sensor name"`
	ServiceID  string `json:"service_id" jsonschema:"Backing service"`
}

func refOf(s catalog.Sensor) sensorRef {
	return sensorRef{SensorID: s.ID.String(), ExternalID: s.ExternalID, Name: s.Name, ServiceID: s.ServiceID}
}

type lastReadingResult struct {
	sensorRef
	FeedID       string              `json:"feed_id,omitempty" jsonschema:"The feed asked about, when feed_id was given"`
	Timestamp    string              `json:"timestamp" jsonschema:"Observation time, ISO 8601 UTC"`
	Measurements map[string]float64  `json:"measurements" jsonschema:"Legacy flat object: canonical parameter id to value in its canonical unit"`
	Units        map[string]string   `json:"units" jsonschema:"Canonical unit of every parameter, by parameter id"`
	Location     *contract.Location  `json:"location" jsonschema:"GeoJSON point of the reading, null when unknown"`
	AgeSeconds   int64               `json:"age_seconds" jsonschema:"Seconds between the observation and now"`
	Stale        bool                `json:"stale" jsonschema:"Older than the staleness limit (twice the station's reporting interval)"`
	Provenance   contract.Provenance `json:"provenance" jsonschema:"Where the reading came from"`
}

// Aliases of the contract types whose schemas schemaTypes writes by hand.
type (
	contractProvenance = contract.Provenance
	contractLocation   = contract.Location
	contractPagination = contract.Pagination
	contractReading    = contract.Reading
	contractTime       = contract.Time
)

func legacyReadingSchema() schema {
	return object(schema{
		"id":            strFormat("Reading UUID", "uuid"),
		"timestamp":     strFormat("Observation time, ISO 8601 UTC with milliseconds", "date-time"),
		"measurements":  array(measurementSchema(), "Canonical measurements (data_format cleaned)"),
		"location":      locationSchema(),
		"raw":           schema{"description": "The source payload as it came (data_format raw)"},
		"source_format": str("Format of raw (data_format raw)"),
	}, "id", "timestamp", "location")
}

func paginationSchema() schema {
	return object(schema{
		"page":        integer("Page", 1, 0),
		"limit":       integer("Items per page", 1, 0),
		"total":       integer("Items in all pages", 0, 0),
		"total_pages": integer("Pages", 0, 0),
	}, "page", "limit", "total", "total_pages")
}

// registryView is the registry view REST's GET /sensors/registry gives too.
type registryView = catalog.RegistryRecord

func registryViewSchema() schema {
	return object(schema{
		"id":                strFormat("Sensor UUID", "uuid"),
		"external_id":       str("Provider's id"),
		"name":              str("Name"),
		"sensor_type":       str("Sensor type"),
		"status":            str("Status"),
		"data_types":        array(str("Canonical parameter id"), "Parameters collected"),
		"provider_slug":     str("Provider slug"),
		"feed_id":           nullable(strFormat("Feed UUID", "uuid")),
		"connected_service": str("Backing service id"),
		"latitude":          nullable(number("Degrees north")),
		"longitude":         nullable(number("Degrees east")),
		"distance_km":       number("Distance from the centre, with a radius filter"),
	}, "id", "external_id", "name", "sensor_type", "status", "data_types", "provider_slug", "feed_id", "connected_service")
}

func serviceRecordSchema() schema {
	return object(schema{
		"id":               str("Service id"),
		"name":             str("Name"),
		"description":      str("Description"),
		"domain":           str("For example ocean"),
		"temporal_pattern": str("For example periodic"),
		"port":             integer("Port", 0, 0),
		"status":           str("For example active"),
	}, "id", "name", "description", "domain", "temporal_pattern", "port", "status")
}

// flexNumber accepts a JSON number or a numeric string: legacy registry clients send both.
type flexNumber struct {
	set bool
	v   float64
	raw string
}

func (f *flexNumber) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		s = strings.TrimSpace(s)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return apierr.New(apierr.InvalidParameter, "a numeric argument is %s, which is not a number", clip(string(b), 32))
	}
	f.set, f.v, f.raw = true, v, s
	return nil
}

func (f flexNumber) int(tool, name string) (int, error) {
	if f.v != math.Trunc(f.v) || f.v < 1 || f.v > 1e9 {
		return 0, badArg(tool, name, "must be a positive integer, got %s", f.raw)
	}
	return int(f.v), nil
}

// stringList accepts "a,b" or ["a","b"].
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				*l = append(*l, p)
			}
		}
		return nil
	}
	var a []string
	if err := json.Unmarshal(b, &a); err != nil {
		return apierr.New(apierr.InvalidParameter, "data_types must be a comma-separated string or an array of strings")
	}
	*l = a
	return nil
}

// registryNames maps the REST sensor list's parameters to list_sensors' arguments.
var registryNames = map[string]string{"lat": "latitude", "lon": "longitude"}

func runListSensors(ctx context.Context, cc *callCtx, a listSensorsArgs) (string, listSensorsResult, error) {
	const tool = "list_sensors"
	var none listSensorsResult
	// The arguments become the query of GET /api/v1/sensors/registry, read by its one parser.
	v := url.Values{}
	setArg(v, "sensor_type", a.SensorType)
	setArg(v, "provider", a.Provider)
	setArg(v, "status", a.Status)
	setArg(v, "data_types", strings.Join(a.DataTypes, ","))
	for name, n := range map[string]flexNumber{"lat": a.Latitude, "lon": a.Longitude, "radius_km": a.RadiusKM, "limit": a.Limit, "page": a.Page} {
		if n.set {
			v.Set(name, n.raw)
		}
	}
	if a.Page.set && a.Cursor != "" {
		return "", none, badArg(tool, "page", "cannot be combined with cursor; give one of them")
	}
	q, err := parseSensorQuery(tool, v, registryNames)
	if err != nil {
		return "", none, err
	}
	f := q.Filter
	qh := queryHash(struct {
		T, P, S string
		D       []string
		La, Lo  float64
		R       float64
	}{a.SensorType, a.Provider, a.Status, a.DataTypes, a.Latitude.v, a.Longitude.v, a.RadiusKM.v})
	if a.Cursor != "" {
		c, err := decodeCursor(tool, a.Cursor, qh)
		if err != nil {
			return "", none, err
		}
		f.Page, f.Limit = c.Page, c.Limit
	}
	res, err := cc.h.store.ListSensors(ctx, f)
	if err != nil {
		return "", none, fmt.Errorf("list sensors: %w", err)
	}
	out := listSensorsResult{Sensors: []registryView{}, Pagination: contract.NewPagination(f.Page, f.Limit, res.Total)}
	if f.Page*f.Limit < res.Total && len(res.Sensors) > 0 {
		out.NextCursor = encodeCursor(pageCursor{Page: f.Page + 1, Limit: f.Limit, Query: qh})
	}
	for i := range res.Sensors {
		out.Sensors = append(out.Sensors, res.Sensors[i].Registry())
	}
	return fmt.Sprintf("%d of %d sensors (page %d of %d).", len(out.Sensors), res.Total, f.Page, out.Pagination.TotalPages), out, nil
}

type targetArgs struct {
	SensorID string `json:"sensor_id,omitempty" jsonschema:"Sensor UUID or the provider's external id"`
	FeedID   string `json:"feed_id,omitempty" jsonschema:"Feed (project) UUID or slug, instead of sensor_id"`
}

// target resolves the sensor_id-or-feed_id pair of the registry tools: exactly one.
func (cc *callCtx) target(ctx context.Context, tool string, a targetArgs) (*catalog.Sensor, *catalog.Project, error) {
	switch {
	case a.SensorID != "" && a.FeedID != "":
		return nil, nil, badArg(tool, "feed_id", "cannot be combined with sensor_id; give one of them")
	case a.SensorID != "":
		s, err := cc.h.resolveSensor(ctx, tool, "sensor_id", a.SensorID)
		if err != nil {
			return nil, nil, err
		}
		return &s, nil, nil
	case a.FeedID != "":
		p, err := cc.h.project(ctx, a.FeedID)
		if err != nil || !cc.h.mayView(cc, p) {
			if err != nil && !errors.Is(err, catalog.ErrNotFound) {
				return nil, nil, err
			}
			return nil, nil, apierr.New(apierr.NotFound, "%s: feed %q not found", tool, clip(a.FeedID, 64))
		}
		return nil, &p, nil
	default:
		return nil, nil, apierr.New(apierr.InvalidParameter, "%s: give sensor_id (UUID or external id) or feed_id", tool)
	}
}

func runConnectedServices(ctx context.Context, cc *callCtx, a targetArgs) (string, connectedServicesResult, error) {
	const tool = "sensor_connected_services"
	var none connectedServicesResult
	s, p, err := cc.target(ctx, tool, a)
	if err != nil {
		return "", none, err
	}
	out := connectedServicesResult{Services: []catalog.ServiceRecord{}}
	serviceID := ""
	if s != nil {
		out.SensorID, serviceID = s.ID.String(), s.ServiceID
	} else {
		out.FeedID, serviceID = p.ID.String(), p.ServiceID
	}
	out.ConnectedService = serviceID
	if serviceID == "" {
		return "No connected service.", out, nil
	}
	svc, err := cc.h.service(ctx, serviceID)
	if err != nil {
		return "", none, notFound(err, apierr.NotFound, "%s: connected service %q is not known to the gateway", tool, serviceID)
	}
	out.Services = append(out.Services, svc.Record())
	return fmt.Sprintf("Connected service: %s (%s, %s).", svc.ID, svc.Name, svc.Status), out, nil
}

type streamEnvelope struct {
	sensorRef
	Readings   []contract.Reading   `json:"readings" jsonschema:"Readings, newest first: measurements (cleaned) or raw and source_format (raw)"`
	Units      map[string]string    `json:"units,omitempty" jsonschema:"Canonical unit of every parameter, by parameter id"`
	Provenance *contract.Provenance `json:"provenance,omitempty" jsonschema:"Where the readings came from"`
	Pagination *contract.Pagination `json:"pagination,omitempty" jsonschema:"Page of the readings"`
	Error      string               `json:"error,omitempty" jsonschema:"Why this sensor has no readings (feed streams only)"`
}

func runCleanedStream(ctx context.Context, cc *callCtx, a cleanedStreamArgs) (string, cleanedStreamResult, error) {
	const tool = "sensor_cleaned_stream"
	var none cleanedStreamResult
	q := url.Values{}
	if len(a.Parameters) > 0 {
		q.Set("parameter", strings.Join(a.Parameters, ","))
	}
	setArg(q, "data_format", a.DataFormat)
	if a.Days.set {
		q.Set("days", a.Days.raw)
	}
	setArg(q, "since", a.Since)
	setArg(q, "until", a.Until)
	if a.Limit.set {
		n, err := a.Limit.int(tool, "limit")
		if err != nil {
			return "", none, err
		}
		q.Set("limit", strconv.Itoa(n))
	}
	parsed, err := contract.ParseReadingsQuery(q, cc.now)
	if err != nil {
		return "", none, apierr.New(apierr.InvalidParameter, "%s: %s", tool, apierr.From(err).Message)
	}
	// Resolve days once, so every sensor of a feed is read over the same window.
	up := url.Values{"limit": {strconv.Itoa(parsed.Limit)}, "data_format": {parsed.Format}}
	if len(parsed.Parameters) > 0 {
		up.Set("parameter", strings.Join(parsed.Parameters, ","))
	}
	if !parsed.Since.IsZero() {
		up.Set("since", cursorTime(parsed.Since))
	}
	if !parsed.Until.IsZero() {
		up.Set("until", cursorTime(parsed.Until))
	}
	s, p, err := cc.target(ctx, tool, a.targetArgs)
	if err != nil {
		return "", none, err
	}
	if s != nil {
		env, err := cc.stream(ctx, *s, up)
		if err != nil {
			return "", none, err
		}
		return fmt.Sprintf("%d readings of %s (%s), %s.", len(env.Readings), s.Name, s.ExternalID, parsed.Format), cleanedStreamResult{streamEnvelope: &env}, nil
	}
	feedID := p.ID
	page, err := cc.h.store.ListSensors(ctx, catalog.SensorFilter{FeedID: &feedID, Page: 1, Limit: feedStreamMaxSensors})
	if err != nil {
		return "", none, fmt.Errorf("list feed sensors: %w", err)
	}
	streams := make([]streamEnvelope, len(page.Sensors))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, sensor := range page.Sensors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			env, err := cc.stream(ctx, sensor, up)
			if err != nil {
				env = streamEnvelope{sensorRef: refOf(sensor), Readings: []contract.Reading{}, Error: apierr.From(asAPIError(err)).Message}
				if apierr.From(asAPIError(err)).Code == apierr.Internal {
					cc.h.log.ErrorContext(ctx, "feed stream failed", "sensor", sensor.ID, "err", err)
				}
			}
			streams[i] = env
		}()
	}
	wg.Wait()
	total := page.Total
	out := cleanedStreamResult{FeedID: p.ID.String(), FeedSlug: p.Slug, Streams: streams, SensorsTotal: &total}
	n := 0
	for _, st := range streams {
		n += len(st.Readings)
	}
	return fmt.Sprintf("%d readings from %d of the %d sensors of feed %s, %s.", n, len(streams), page.Total, p.Slug, parsed.Format), out, nil
}

func (cc *callCtx) stream(ctx context.Context, s catalog.Sensor, q url.Values) (streamEnvelope, error) {
	rr, err := cc.h.readingsPage(ctx, s, q)
	if err != nil {
		return streamEnvelope{}, asAPIError(err)
	}
	env := streamEnvelope{
		sensorRef: refOf(s),
		Readings:  rr.Readings, Provenance: &rr.Provenance, Pagination: &rr.Pagination, Units: map[string]string{},
	}
	if env.Readings == nil {
		env.Readings = []contract.Reading{}
	}
	for _, r := range rr.Readings {
		for _, m := range r.Measurements {
			env.Units[m.Parameter] = m.Unit
		}
	}
	return env, nil
}

func runLastReading(ctx context.Context, cc *callCtx, a targetArgs) (string, lastReadingResult, error) {
	const tool = "sensor_last_reading"
	var none lastReadingResult
	s, p, err := cc.target(ctx, tool, a)
	if err != nil {
		return "", none, err
	}
	candidates := []catalog.Sensor{}
	if s != nil {
		candidates = append(candidates, *s)
	} else {
		feedID := p.ID
		page, err := cc.h.store.ListSensors(ctx, catalog.SensorFilter{FeedID: &feedID, Page: 1, Limit: feedLatestMaxSensors})
		if err != nil {
			return "", none, fmt.Errorf("list feed sensors: %w", err)
		}
		candidates = page.Sensors
		if len(candidates) == 0 {
			return "", none, apierr.New(apierr.NoReadings, "%s: feed %s has no sensors", tool, p.Slug)
		}
	}
	var lastErr error
	for _, c := range candidates {
		lr, err := cc.h.latest(ctx, c, nil)
		if err != nil {
			lastErr = err
			if ae := apierr.From(asAPIError(err)); ae.Code == apierr.UpstreamTimeout || ae.Code == apierr.UpstreamUnavailable {
				break // the service is down: asking about its next sensor will not help
			}
			continue
		}
		flat := map[string]float64{}
		units := map[string]string{}
		for _, m := range lr.Reading.Measurements {
			flat[m.Parameter] = m.Value
			units[m.Parameter] = m.Unit
		}
		rv := viewReading(lr.Reading, cc.now)
		fr := newFreshness(&lr.Reading.Timestamp.Time, c.ReportingIntervalS, cc.now)
		out := lastReadingResult{
			sensorRef: refOf(c),
			Timestamp: rv.Timestamp, Measurements: flat, Units: units, Location: lr.Reading.Location,
			AgeSeconds: rv.AgeSeconds, Stale: fr.Stale != nil && *fr.Stale, Provenance: lr.Provenance,
		}
		if p != nil {
			out.FeedID = p.ID.String()
		}
		return fmt.Sprintf("%s (%s) at %s: %s", c.Name, c.ExternalID, rv.Timestamp, flatText(flat, units)), out, nil
	}
	if s == nil && lastErr != nil && apierr.From(asAPIError(lastErr)).Code == apierr.NoReadings {
		return "", none, apierr.New(apierr.NoReadings, "%s: none of the first %d sensors of feed %s has a reading", tool, len(candidates), p.Slug)
	}
	return "", none, asAPIError(lastErr)
}

func flatText(flat map[string]float64, units map[string]string) string {
	var parts []string
	for _, p := range canon.Parameters() {
		if v, ok := flat[p.ID]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s %s", p.ID, strconv.FormatFloat(v, 'f', -1, 64), units[p.ID]))
		}
	}
	return strings.Join(parts, ", ")
}
