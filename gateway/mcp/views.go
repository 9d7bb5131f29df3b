package mcp

import (
	"context"
	"errors"
	"time"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	sgfreshness "github.com/sensorgate/sensorgate/pkg/freshness"
	"github.com/sensorgate/sensorgate/pkg/pagecursor"
)

// freshness says how old a station's newest reading is and whether that is late for it,
// by the one staleness rule of REST and every MCP tool (pkg/freshness).
type freshness struct {
	LastReadingAt      *string `json:"last_reading_at"`
	AgeSeconds         *int64  `json:"age_seconds"`
	ReportingIntervalS int     `json:"reporting_interval_s"`
	StaleAfterSeconds  int     `json:"stale_after_seconds"`
	Stale              *bool   `json:"stale"`
}

func newFreshness(last *time.Time, intervalS int, now time.Time) freshness {
	v := sgfreshness.Assess(last, intervalS, now)
	f := freshness{ReportingIntervalS: int(v.ExpectedIntervalSeconds), StaleAfterSeconds: int(v.StaleAfterSeconds), Stale: &v.Stale}
	if last != nil && !last.IsZero() {
		ts := contract.FormatTime(*last)
		f.LastReadingAt, f.AgeSeconds = &ts, v.AgeSeconds
	}
	return f
}

func freshnessSchema() schema {
	return object(schema{
		"last_reading_at":      nullable(strFormat("Time of the newest reading (ISO 8601 UTC), null when none is known", "date-time")),
		"age_seconds":          nullable(integer("Seconds between the newest reading and now", 0, 0)),
		"reporting_interval_s": integer("How often the station is expected to report, in seconds (3600 when the station does not say)", 1, 0),
		"stale_after_seconds":  integer("Age beyond which the reading counts as stale: twice the reporting interval", 1, 0),
		"stale":                boolean("True when age_seconds exceeds stale_after_seconds, and when no reading is known"),
	}, "last_reading_at", "age_seconds", "reporting_interval_s", "stale_after_seconds", "stale")
}

// sensorSummary is a sensor in search results and project listings.
type sensorSummary struct {
	ID           string    `json:"id"`
	ExternalID   string    `json:"external_id"`
	Name         string    `json:"name"`
	SensorType   string    `json:"sensor_type"`
	Status       string    `json:"status"`
	DataTypes    []string  `json:"data_types"`
	Latitude     *float64  `json:"latitude"`
	Longitude    *float64  `json:"longitude"`
	ProviderSlug string    `json:"provider_slug"`
	ProviderName string    `json:"provider_name"`
	FeedID       *string   `json:"feed_id"`
	FeedSlug     string    `json:"feed_slug"`
	ServiceID    string    `json:"service_id"`
	Freshness    freshness `json:"freshness"`
	DistanceKM   *float64  `json:"distance_km,omitempty"`
}

func summarize(s catalog.Sensor, now time.Time) sensorSummary {
	v := sensorSummary{
		ID: s.ID.String(), ExternalID: s.ExternalID, Name: s.Name, SensorType: s.SensorType,
		Status: s.Status, DataTypes: nonNil(s.DataTypes), Latitude: s.Latitude, Longitude: s.Longitude,
		ProviderSlug: s.ProviderSlug, ProviderName: s.ProviderName, FeedSlug: s.FeedSlug,
		ServiceID: s.ServiceID, Freshness: newFreshness(s.LastReadingAt, s.ReportingIntervalS, now),
		DistanceKM: catalog.RoundKM(s.DistanceKM),
	}
	if s.FeedID != nil {
		id := s.FeedID.String()
		v.FeedID = &id
	}
	return v
}

func sensorSummarySchema() schema {
	return object(schema{
		"id":            strFormat("Sensor UUID", "uuid"),
		"external_id":   str("The provider's identifier of the station"),
		"name":          str("Display name"),
		"sensor_type":   str("For example buoy, weather_station, air_quality_monitor"),
		"status":        str("active, inactive or maintenance"),
		"data_types":    array(str("Canonical parameter id"), "Canonical parameters the sensor collects"),
		"latitude":      nullable(number("Degrees north; null when the sensor has no location")),
		"longitude":     nullable(number("Degrees east; null when the sensor has no location")),
		"provider_slug": str("Provider slug"),
		"provider_name": str("Provider name"),
		"feed_id":       nullable(strFormat("Feed (project) UUID; null when the sensor has no feed", "uuid")),
		"feed_slug":     str("Feed (project) slug; empty when the sensor has no feed"),
		"service_id":    str("Backing service id (SPEC's connected_service)"),
		"freshness":     freshnessSchema(),
		"distance_km":   number("Great-circle distance from the search centre, only with a radius search"),
	}, "id", "external_id", "name", "sensor_type", "status", "data_types", "latitude", "longitude", "provider_slug", "feed_id", "service_id", "freshness")
}

// sensorRecord is docs/spec.md 2.1 (as the REST API renders it) plus the feed slug and the
// reporting interval that ages are judged by.
type sensorRecord struct {
	catalog.SensorRecord
	FeedSlug           string `json:"feed_slug"`
	ReportingIntervalS int    `json:"reporting_interval_s"`
}

func recordOf(s catalog.Sensor) sensorRecord {
	return sensorRecord{SensorRecord: s.Record(), FeedSlug: s.FeedSlug, ReportingIntervalS: s.ReportingIntervalS}
}

func sensorRecordSchema() schema {
	return object(schema{
		"id":                   strFormat("Sensor UUID", "uuid"),
		"external_id":          str("The provider's identifier of the station"),
		"name":                 str("Display name"),
		"description":          str("Description"),
		"sensor_type":          str("For example buoy, weather_station"),
		"status":               str("active, inactive or maintenance"),
		"data_types":           array(str("Canonical parameter id"), "Canonical parameters the sensor collects"),
		"deployment_date":      nullable(strFormat("YYYY-MM-DD", "date")),
		"decommissioned_date":  nullable(strFormat("YYYY-MM-DD, null while in service", "date")),
		"latitude":             nullable(number("Degrees north")),
		"longitude":            nullable(number("Degrees east")),
		"provider_id":          nullable(strFormat("Provider UUID", "uuid")),
		"provider_name":        str("Provider name"),
		"provider_slug":        str("Provider slug"),
		"feed_id":              nullable(strFormat("Feed (project) UUID", "uuid")),
		"feed_name":            str("Feed name"),
		"feed_slug":            str("Feed slug"),
		"connected_service":    str("Backing service id"),
		"reporting_interval_s": integer("Expected seconds between reports (0 when unknown)", 0, 0),
	}, "id", "external_id", "name", "sensor_type", "status", "data_types", "latitude", "longitude", "provider_slug", "feed_id", "connected_service")
}

// readingView is a canonical reading with its age.
// With data_format=raw, Raw and SourceFormat replace Measurements.
type readingView struct {
	ID           string              `json:"id"`
	Timestamp    string              `json:"timestamp"`
	AgeSeconds   int64               `json:"age_seconds"`
	Measurements []canon.Measurement `json:"measurements,omitempty"`
	Location     *contract.Location  `json:"location"`
	Raw          any                 `json:"raw,omitempty"`
	SourceFormat string              `json:"source_format,omitempty"`
}

func viewReading(r contract.Reading, now time.Time) readingView {
	v := readingView{
		ID:           r.ID,
		Timestamp:    contract.FormatTime(r.Timestamp.Time),
		AgeSeconds:   max(int64(now.Sub(r.Timestamp.Time)/time.Second), 0),
		Measurements: r.Measurements,
		Location:     r.Location,
		Raw:          r.Raw,
		SourceFormat: r.SourceFormat,
	}
	if v.Raw == nil {
		v.Measurements = nonNilM(r.Measurements)
	}
	return v
}

func locationSchema() schema {
	return nullable(object(schema{
		"type":        enum("GeoJSON geometry type", "Point"),
		"coordinates": schema{"type": "array", "items": schema{"type": "number"}, "minItems": 2, "maxItems": 2, "description": "Longitude first, then latitude"},
	}, "type", "coordinates"))
}

func measurementSchema() schema {
	return object(schema{
		"parameter":      str("Canonical parameter id"),
		"value":          number("Value in the canonical unit"),
		"unit":           str("Canonical unit of the parameter"),
		"unit_original":  str("Unit the source reported"),
		"value_original": number("Value as the source reported it, in unit_original"),
	}, "parameter", "value", "unit", "unit_original")
}

func readingSchema() schema {
	return object(schema{
		"id":            strFormat("Reading UUID", "uuid"),
		"timestamp":     strFormat("Observation time, ISO 8601 UTC with milliseconds", "date-time"),
		"age_seconds":   integer("Seconds between the observation and now", 0, 0),
		"measurements":  array(measurementSchema(), "Canonical measurements (data_format cleaned); parameters the source lacked are omitted"),
		"location":      locationSchema(),
		"raw":           schema{"description": "The source payload as it came (data_format raw): a JSON object for JSON sources, {format, header, line} or similar for text sources"},
		"source_format": str("Format of raw (data_format raw)"),
	}, "id", "timestamp", "age_seconds", "location")
}

func provenanceSchema() schema {
	return object(schema{
		"sensor_id":  strFormat("Sensor UUID", "uuid"),
		"service_id": str("Backing service id"),
		"source_id":  str("The provider's identifier of the sensor"),
		"provider":   str("Provider slug"),
		"fetched_at": nullable(strFormat("When the service fetched the source payload", "date-time")),
	}, "sensor_id", "service_id", "source_id")
}

// unitsOf maps every parameter seen in readings, and every one asked for, to its unit.
func unitsOf(readings []readingView, asked []string) map[string]string {
	units := map[string]string{}
	for _, p := range asked {
		if c, ok := canon.Lookup(p); ok {
			units[p] = c.Unit
		}
	}
	for _, r := range readings {
		for _, m := range r.Measurements {
			units[m.Parameter] = m.Unit
		}
	}
	return units
}

// unitsOfSensors maps every parameter the sensors collect to its canonical unit.
func unitsOfSensors(sensors []catalog.Sensor) map[string]string {
	units := map[string]string{}
	for _, s := range sensors {
		for _, d := range s.DataTypes {
			if c, ok := canon.Lookup(d); ok {
				units[d] = c.Unit
			}
		}
	}
	return units
}

func unitsSchema() schema {
	return schema{"type": "object", "additionalProperties": schema{"type": "string"}, "description": "Canonical unit of every parameter in the result, by parameter id"}
}

// resolveSensor finds a sensor by UUID or by the provider's external id through the
// gateway's one resolver, naming the tool's argument where REST names the path's id.
func (h *Handler) resolveSensor(ctx context.Context, tool, arg, idOrExternal string) (catalog.Sensor, error) {
	if idOrExternal == "" {
		return catalog.Sensor{}, badArg(tool, arg, "is required: a sensor UUID or the provider's external id")
	}
	s, err := h.resolver.Resolve(ctx, idOrExternal)
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return s, ae.Renamed(tool+": ", func(string) string { return arg })
	}
	return s, err
}

// serviceOf returns the service that holds a sensor's readings.
func (h *Handler) serviceOf(ctx context.Context, s catalog.Sensor) (catalog.Service, error) {
	if s.FeedID == nil || s.ServiceID == "" {
		return catalog.Service{}, apierr.New(apierr.NoFeed, "sensor %s (%s) has no feed, so it has no readings", s.ID, s.ExternalID)
	}
	svc, err := h.service(ctx, s.ServiceID)
	return svc, notFound(err, apierr.NoFeed, "sensor %s is connected to service %q, which the gateway does not know", s.ID, s.ServiceID)
}

// sensorPage is a page of sensor summaries: the result of search_sensors, and of
// list_project_sensors beside the project's id.
type sensorPage struct {
	Sensors    []sensorSummary   `json:"sensors" jsonschema:"This page of sensors, ordered by name then id (or by distance)"`
	Units      map[string]string `json:"units" jsonschema:"Canonical unit of every parameter listed, by parameter id"`
	Total      int               `json:"total" jsonschema:"Sensors matching the filters"`
	Limit      int               `json:"limit" jsonschema:"Page size applied"`
	NextCursor string            `json:"nextCursor,omitempty" jsonschema:"Cursor of the next page; absent on the last page"`
	page       int               // the page number, for the summary line
}

// sensorPage lists the sensors of f on the page that cursor, issued for the arguments
// hashed as query, continues; without a cursor, the first page of limit sensors.
func (cc *callCtx) sensorPage(ctx context.Context, tool, cursor string, query uint64, limit int, f catalog.SensorFilter) (sensorPage, error) {
	f.Page, f.Limit = 1, limit
	if cursor != "" {
		c, err := decodeCursor(tool, cursor, query)
		if err != nil {
			return sensorPage{}, err
		}
		f.Page, f.Limit = c.Page, c.Limit
	}
	res, err := cc.h.store.ListSensors(ctx, f)
	if err != nil {
		return sensorPage{}, err
	}
	out := sensorPage{Sensors: []sensorSummary{}, Units: unitsOfSensors(res.Sensors), Total: res.Total, Limit: f.Limit, page: f.Page}
	for _, s := range res.Sensors {
		out.Sensors = append(out.Sensors, summarize(s, cc.now))
	}
	if f.Page*f.Limit < res.Total && len(res.Sensors) > 0 {
		out.NextCursor = encodeCursor(pageCursor{Page: f.Page + 1, Limit: f.Limit, Query: query})
	}
	return out, nil
}

// pageCursor is the opaque cursor of the gateway's paginated tools (pkg/pagecursor, which
// the services' tools use too).
type pageCursor = pagecursor.Cursor

func encodeCursor(c pageCursor) string { return pagecursor.Encode(c) }

// decodeCursor reads a cursor of tool's arguments hashed as query, refusing it in the
// tool's words.
func decodeCursor(tool, s string, query uint64) (pageCursor, error) {
	c, err := pagecursor.Decode(s, query)
	switch {
	case errors.Is(err, pagecursor.ErrOtherQuery):
		return c, badArg(tool, "cursor", "belongs to a query with other arguments; repeat the same arguments with the cursor, or drop the cursor to start over")
	case err != nil:
		return c, badArg(tool, "cursor", "is not a cursor this tool returned; pass nextCursor from the previous result unchanged")
	}
	return c, nil
}

// queryHash identifies the arguments a cursor was issued for (without cursor and limit).
func queryHash(v any) uint64 { return pagecursor.QueryHash(v) }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilM(s []canon.Measurement) []canon.Measurement {
	if s == nil {
		return []canon.Measurement{}
	}
	return s
}

func timeString(t *time.Time) *string {
	if t == nil || t.IsZero() {
		return nil
	}
	s := contract.FormatTime(*t)
	return &s
}

// asAPIError keeps an *apierr.Error as it is; anything else stays an internal error.
func asAPIError(err error) error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return err
}
