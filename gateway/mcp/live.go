package mcp

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sensorgate/sensorgate/gateway/latest"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// AreaLatest answers area latest: the same code path as GET /api/v1/readings/latest
// (gateway/latest), so latest_in_area and REST agree on every rule and limit.
type AreaLatest interface {
	Answer(ctx context.Context, q latest.Area) (latest.Answer, error)
}

type latestInAreaArgs struct {
	Query      string   `json:"query,omitempty" jsonschema:"Substring of the name, description or external id (REST's search)"`
	SensorType string   `json:"sensor_type,omitempty" jsonschema:"Exact sensor type"`
	Provider   string   `json:"provider,omitempty" jsonschema:"Provider slug"`
	ServiceID  string   `json:"service_id,omitempty" jsonschema:"Backing service id (REST's service)"`
	DataTypes  []string `json:"data_types,omitempty" jsonschema:"Sensors that collect any of these canonical parameters"`
	SensorIDs  []string `json:"sensor_ids,omitempty" jsonschema:"These sensors only: UUIDs or external ids"`
	BBox       *bboxArg `json:"bbox,omitempty" jsonschema:"Bounding box; min_lon greater than max_lon crosses the antimeridian"`
	Near       *nearArg `json:"near,omitempty" jsonschema:"Radius around a point"`
	Parameters []string `json:"parameters,omitempty" jsonschema:"Keep only these canonical parameter ids"`
	MaxAge     string   `json:"max_age,omitempty" jsonschema:"Stale beyond this age: seconds (900) or ISO 8601 (PT15M)"`
	QC         string   `json:"qc,omitempty" jsonschema:"Quality flags to keep: good (1 and 2), all or QARTOD codes such as 1,2,3 (1 pass, 2 not evaluated, 3 suspect, 4 fail, 9 missing); default all, as REST"`
	Limit      *int     `json:"limit,omitempty" jsonschema:"Sensors per page (default 1000, at most 5000, as REST)"`
	Cursor     string   `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
}

type latestInAreaResult struct {
	latest.Answer
	NextCursor string `json:"nextCursor,omitempty" jsonschema:"Cursor of the next page; absent on the last page"`
}

func (h *Handler) addLiveTools(ts *toolSet) {
	if h.area != nil {
		addTool(ts, toolSpec[latestInAreaArgs, latestInAreaResult]{
			Name: "latest_in_area", Title: "Latest readings in an area",
			Description: "Newest reading of every sensor the filters select, with its age and staleness (older than max_age, else " +
				"twice the sensor's reporting interval; never reported is stale). A service that does not answer marks its sensors unavailable " +
				"and adds a warning. Rules and limits of GET /api/v1/readings/latest; pass nextCursor back as cursor.",
			OpenWorld: true,
			Tweak: func(in, _ *jsonschema.Schema) {
				setRange(prop(in, "limit"), 1, 0)
			},
			Run: runLatestInArea,
		})
	}
	addTool(ts, aggregateTool("Aggregate readings",
		"Mean, min, max, count and coverage per parameter and time bucket (on tz's clock) of one sensor's readings; "+
			"empty buckets have count 0; at most 1000 buckets. Rules of GET /api/v1/sensors/{id}/readings/aggregate."))
}

// aggregateTool is aggregate_readings, at the catalog scope and (the sensor implied) at
// the sensor scope, which differ in title and description only.
func aggregateTool(title, description string) toolSpec[aggregateArgs, contract.AggregateResponse] {
	return toolSpec[aggregateArgs, contract.AggregateResponse]{
		Name: "aggregate_readings", Title: title, Description: description, OpenWorld: true,
		Tweak: func(in, _ *jsonschema.Schema) {
			setEnum(prop(in, "interval"), "1h", "3h", "6h", "1d", "1mo")
			setEnum(prop(in, "stats"), contract.AllStats...)
			prop(in, "days").ExclusiveMinimum = ptrTo(0.0)
		},
		Run: runAggregate,
	}
}

func runLatestInArea(ctx context.Context, cc *callCtx, a latestInAreaArgs) (string, latestInAreaResult, error) {
	const tool = "latest_in_area"
	var none latestInAreaResult
	v := url.Values{}
	setArg(v, "search", a.Query)
	setArg(v, "sensor_type", a.SensorType)
	setArg(v, "provider", a.Provider)
	setArg(v, "service", a.ServiceID)
	setArg(v, "data_types", strings.Join(a.DataTypes, ","))
	setArg(v, "sensor_ids", strings.Join(a.SensorIDs, ","))
	setArg(v, "parameter", strings.Join(a.Parameters, ","))
	setArg(v, "max_age", a.MaxAge)
	setArg(v, "qc", a.QC)
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	if b := a.BBox; b != nil {
		if b.MinLat == nil || b.MinLon == nil || b.MaxLat == nil || b.MaxLon == nil {
			return "", none, badArg(tool, "bbox", "needs min_lat, min_lon, max_lat and max_lon")
		}
		v.Set("min_lat", num(*b.MinLat))
		v.Set("min_lon", num(*b.MinLon))
		v.Set("max_lat", num(*b.MaxLat))
		v.Set("max_lon", num(*b.MaxLon))
	}
	if n := a.Near; n != nil {
		if n.Lat == nil || n.Lon == nil {
			return "", none, badArg(tool, "near", "needs lat and lon")
		}
		v.Set("lat", num(*n.Lat))
		v.Set("lon", num(*n.Lon))
		if n.RadiusKM != nil {
			v.Set("radius_km", num(*n.RadiusKM))
		}
	}
	if a.Limit != nil {
		v.Set("limit", strconv.Itoa(*a.Limit))
	}
	hashed := a
	hashed.Cursor, hashed.Limit = "", nil
	qh := queryHash(hashed)
	if a.Cursor != "" {
		c, err := decodeCursor(tool, a.Cursor, qh)
		if err != nil {
			return "", none, err
		}
		v.Set("page", strconv.Itoa(c.Page))
		v.Set("limit", strconv.Itoa(c.Limit))
	}
	q, err := latest.ParseArea(v, latest.MaxLimit)
	if err != nil {
		return "", none, restArgError(tool, err, map[string]string{"search": "query", "service": "service_id", "parameter": "parameters", "min_lat": "bbox.min_lat", "min_lon": "bbox.min_lon", "max_lat": "bbox.max_lat", "max_lon": "bbox.max_lon", "lat": "near.lat", "lon": "near.lon", "radius_km": "near.radius_km"})
	}
	ans, err := cc.h.area.Answer(ctx, q)
	if err != nil {
		return "", none, asAPIError(err)
	}
	out := latestInAreaResult{Answer: ans}
	p := ans.Pagination
	if p.Page*p.Limit < p.Total && len(ans.Items) > 0 {
		out.NextCursor = encodeCursor(pageCursor{Page: p.Page + 1, Limit: p.Limit, Query: qh})
	}
	stale, unavailable := 0, 0
	for _, it := range ans.Items {
		if it.Stale {
			stale++
		}
		if it.Unavailable {
			unavailable++
		}
	}
	summary := fmt.Sprintf("%d of %d sensors (page %d): %d fresh, %d stale", len(ans.Items), p.Total, p.Page, len(ans.Items)-stale, stale)
	if unavailable > 0 {
		summary += fmt.Sprintf(", %d unavailable (%d service warnings)", unavailable, len(ans.Warnings))
	}
	summary += "."
	if out.NextCursor != "" {
		summary += " More: call again with cursor=nextCursor."
	}
	return summary, out, nil
}

type aggregateArgs struct {
	SensorID   string   `json:"sensor_id,omitempty" jsonschema:"Sensor UUID or external id (at the sensor scope: that sensor when omitted)"`
	Interval   string   `json:"interval,omitempty" jsonschema:"Bucket length (default 1h)"`
	Stats      []string `json:"stats,omitempty" jsonschema:"Statistics (default all)"`
	Parameters []string `json:"parameters,omitempty" jsonschema:"Only these canonical parameters"`
	Since      string   `json:"since,omitempty" jsonschema:"Inclusive, RFC 3339 or YYYY-MM-DD"`
	Until      string   `json:"until,omitempty" jsonschema:"Exclusive, RFC 3339 or YYYY-MM-DD"`
	Days       *float64 `json:"days,omitempty" jsonschema:"Last N days; not with since or until"`
	TZ         string   `json:"tz,omitempty" jsonschema:"IANA zone whose clock the buckets follow (default UTC)"`
	QC         string   `json:"qc,omitempty" jsonschema:"Quality flags to keep: good (1 and 2), all or QARTOD codes such as 1,2,3 (1 pass, 2 not evaluated, 3 suspect, 4 fail, 9 missing); default good, as REST; each bucket says how many values it left out"`
}

func runAggregate(ctx context.Context, cc *callCtx, a aggregateArgs) (string, contract.AggregateResponse, error) {
	const tool = "aggregate_readings"
	var none contract.AggregateResponse
	ref := a.SensorID
	if ref == "" && cc.scope.sensor != nil {
		ref = cc.scope.sensor.ID.String()
	}
	s, err := cc.h.resolveSensor(ctx, tool, "sensor_id", ref)
	if err != nil {
		return "", none, err
	}
	v := url.Values{}
	setArg(v, "interval", a.Interval)
	setArg(v, "stats", strings.Join(a.Stats, ","))
	setArg(v, "parameter", strings.Join(a.Parameters, ","))
	setArg(v, "since", a.Since)
	setArg(v, "until", a.Until)
	setArg(v, "tz", a.TZ)
	setArg(v, "qc", a.QC)
	if a.Days != nil {
		v.Set("days", strconv.FormatFloat(*a.Days, 'f', -1, 64))
	}
	// The proxy's check of REST's aggregate route (bucket limit included), before the call.
	if _, err := contract.ParseAggregateQuery(v, cc.now); err != nil {
		return "", none, restArgError(tool, err, map[string]string{"parameter": "parameters"})
	}
	out, err := cc.h.aggregate(ctx, s, v)
	if err != nil {
		return "", none, asAPIError(err)
	}
	if out.Buckets == nil {
		out.Buckets = []contract.AggregateBucket{}
	}
	// A statistic is written only when asked for (AggregateStat.MarshalJSON); the list
	// asked for is the answer's stats, which decoding does not put back on each value.
	for _, b := range out.Buckets {
		for p, st := range b.Values {
			st.Stats = out.Stats
			b.Values[p] = st
		}
	}
	filled := 0
	for _, b := range out.Buckets {
		for _, st := range b.Values {
			if st.Count > 0 {
				filled++
				break
			}
		}
	}
	return fmt.Sprintf("%d %s buckets of %s (%s) from %s to %s (%s), %d with readings; parameters: %s.",
		len(out.Buckets), out.Interval, s.Name, s.ExternalID, contract.FormatTime(out.Since.Time), contract.FormatTime(out.Until.Time), out.TZ, filled, strings.Join(out.Parameters, ", ")), out, nil
}

// setArg sets a REST query parameter from an optional tool argument; an empty argument
// leaves the parameter out, so that REST's default applies as it would over HTTP.
func setArg(q url.Values, name, value string) {
	if value != "" {
		q.Set(name, value)
	}
}

// restArgError words a REST query parse error for a tool caller, naming the argument
// rather than the query parameter it maps to.
func restArgError(tool string, err error, names map[string]string) error {
	e := apierr.From(err)
	if e.Code != apierr.InvalidParameter {
		return err
	}
	msg := e.Message
	for q, arg := range names {
		msg = strings.ReplaceAll(msg, `"`+q+`"`, `"`+arg+`"`)
	}
	return apierr.New(apierr.InvalidParameter, "%s: %s", tool, msg)
}
