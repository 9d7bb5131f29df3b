package contract

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	// The IANA zone database, built in: the release images are FROM scratch, with no
	// /usr/share/zoneinfo, and tz= must name the same zones on every machine.
	_ "time/tzdata"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/jsonbytes"
	"github.com/sensorgate/sensorgate/pkg/timebucket"
)

// Aggregate statistics.
const (
	StatMean  = "mean"
	StatMin   = "min"
	StatMax   = "max"
	StatCount = "count"
)

// AllStats are the statistics in their answer order, and the default.
var AllStats = []string{StatMean, StatMin, StatMax, StatCount}

// defaultAggregateDays is the range of an aggregate without since, until or days, per
// interval: a useful chart's worth of buckets.
var defaultAggregateDays = map[string]int{"1h": 2, "3h": 7, "6h": 14, "1d": 31, "1mo": 365}

// AggregateQuery is the parsed query of GET .../readings/aggregate (docs/api-decisions.md
// "Wave 2", Aggregates).
type AggregateQuery struct {
	Interval timebucket.Interval
	Stats    []string
	// Parameters limits the answer (empty: every parameter the range holds).
	Parameters []string
	// Since and Until are the range asked for; Bounds the whole buckets covering it.
	Since, Until time.Time
	TZ           string
	Zone         *time.Location
	Bounds       []time.Time
	// Lineage (lineage=true) adds each parameter's conversion, once per parameter.
	Lineage bool
	// QC keeps the values whose quality flag it holds (qc=; default good); each bucket's
	// parameter counts the others in Excluded.
	QC QCFilter
}

// ParseAggregateQuery parses and validates the aggregate query; every error is an
// *apierr.Error naming the parameter (the bucket limit names interval and the range).
func ParseAggregateQuery(v url.Values, now time.Time) (AggregateQuery, error) {
	var q AggregateQuery
	name := v.Get("interval")
	if name == "" {
		name = "1h"
	}
	iv, ok := timebucket.ParseInterval(name)
	if !ok {
		return q, apierr.Invalid("interval", "want one of %s, got %q", timebucket.Names, name)
	}
	q.Interval = iv
	var err error
	if q.Lineage, err = parseLineage(v); err != nil {
		return q, err
	}
	if q.QC, err = ParseQC(v, QCGood); err != nil {
		return q, err
	}
	q.Stats = AllStats
	if s := v.Get("stats"); s != "" {
		q.Stats = nil
		seen := map[string]bool{}
		for _, st := range strings.Split(s, ",") {
			st = strings.TrimSpace(st)
			if st == "" || seen[st] {
				continue
			}
			switch st {
			case StatMean, StatMin, StatMax, StatCount:
			default:
				return q, apierr.Invalid("stats", "want a comma-separated list of %s, got %q", strings.Join(AllStats, ", "), st)
			}
			seen[st] = true
			q.Stats = append(q.Stats, st)
		}
		if len(q.Stats) == 0 {
			return q, apierr.Invalid("stats", "want at least one of %s", strings.Join(AllStats, ", "))
		}
	}
	if q.Parameters, err = parseParameters(v); err != nil {
		return q, err
	}
	q.TZ = v.Get("tz")
	q.Zone = time.UTC
	if q.TZ == "" {
		q.TZ = "UTC"
	} else {
		// "Local" would be the server's zone, and an empty name is UTC: neither is what a
		// client who names a zone means.
		loc, err := time.LoadLocation(q.TZ)
		if err != nil || q.TZ == "Local" || strings.HasPrefix(q.TZ, "/") || strings.Contains(q.TZ, "..") {
			return q, apierr.Invalid("tz", "want an IANA time zone name such as America/New_York or UTC, got %q", q.TZ)
		}
		q.Zone = loc
	}
	r, err := parseRange(v)
	if err != nil {
		return q, err
	}
	q.Until = now.UTC()
	switch {
	case r.span > 0:
		q.Since = q.Until.Add(-r.span)
	default:
		if !r.until.IsZero() {
			q.Until = r.until
		}
		q.Since = r.since
		if q.Since.IsZero() {
			q.Since = q.Until.AddDate(0, 0, -defaultAggregateDays[iv.Name])
		}
		if !q.Until.After(q.Since) {
			return q, apierr.Invalid("until", "must be after since")
		}
	}
	if q.Bounds, err = timebucket.Bounds(q.Since, q.Until, iv, q.Zone); err != nil {
		return q, apierr.Invalid("interval", "%v", err)
	}
	return q, nil
}

// AggregatePath is the service path of a station's aggregates, with the id escaped.
func AggregatePath(externalID string) string {
	return PathSensors + "/" + url.PathEscape(externalID) + "/readings/aggregate"
}

// AggregateBucket is one bucket: start and end in UTC, start_local on the zone's clock
// with its offset, and per parameter the statistics asked for plus coverage, each null
// when there is nothing to say (an empty bucket; coverage of a sensor whose reporting
// interval is unknown). count is 0 in an empty bucket.
type AggregateBucket struct {
	Start      Time                     `json:"start"`
	End        Time                     `json:"end"`
	StartLocal string                   `json:"start_local"`
	Values     map[string]AggregateStat `json:"values"`
}

// AggregateStat is one parameter's statistics in one bucket: those named in Stats (in
// that order), then coverage; Mean, Min, Max and Coverage null when there is nothing to say.
// It encodes itself without reflection: an answer of 1000 buckets holds thousands of them.
type AggregateStat struct {
	Stats    []string `json:"-"`
	Mean     *float64 `json:"mean"`
	Min      *float64 `json:"min"`
	Max      *float64 `json:"max"`
	Count    int64    `json:"count"`
	Coverage *float64 `json:"coverage"`
	// Excluded counts the bucket's values the qc filter left out.
	Excluded int64 `json:"excluded"`
}

// MarshalJSON implements json.Marshaler.
func (a AggregateStat) MarshalJSON() ([]byte, error) { return a.appendJSON(make([]byte, 0, 96)) }

func (a AggregateStat) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	num := func(v *float64) {
		if v == nil {
			b = append(b, "null"...)
			return
		}
		b = strconv.AppendFloat(b, *v, 'f', -1, 64)
	}
	for _, st := range a.Stats {
		b = append(b, '"')
		b = append(b, st...)
		b = append(b, `":`...)
		switch st {
		case StatMean:
			num(a.Mean)
		case StatMin:
			num(a.Min)
		case StatMax:
			num(a.Max)
		case StatCount:
			b = strconv.AppendInt(b, a.Count, 10)
		default:
			return nil, fmt.Errorf("aggregate: unknown statistic %q", st)
		}
		b = append(b, ',')
	}
	b = append(b, `"coverage":`...)
	num(a.Coverage)
	b = append(b, `,"excluded":`...)
	b = strconv.AppendInt(b, a.Excluded, 10)
	return append(b, '}'), nil
}

// LocalLayout is the form of start_local: the zone's local clock with milliseconds and
// the offset.
const LocalLayout = "2006-01-02T15:04:05.000-07:00"

// AggregateResponse is the public answer of GET .../readings/aggregate.
type AggregateResponse struct {
	SensorID   string `json:"sensor_id"`
	ExternalID string `json:"external_id"`
	Name       string `json:"name"`
	ServiceID  string `json:"service_id"`
	Interval   string `json:"interval"`
	TZ         string `json:"tz"`
	// Since and Until are the whole-bucket range answered (the range asked for, widened
	// to the buckets that hold its ends).
	Since      Time     `json:"since"`
	Until      Time     `json:"until"`
	Stats      []string `json:"stats"`
	Parameters []string `json:"parameters"`
	// ExpectedIntervalSeconds is the sensor's reporting interval coverage is judged by
	// (null: unknown, and coverage is null).
	ExpectedIntervalSeconds *int              `json:"expected_interval_seconds"`
	Source                  string            `json:"source"`
	Buckets                 []AggregateBucket `json:"buckets"`
	Provenance              Provenance        `json:"provenance"`
	// Lineage (lineage=true) is, per parameter answered, the conversion that made its
	// values (docs/api-decisions.md "Wave 2", Lineage): from the newest reading of the
	// range that holds the parameter. Absent without lineage=true.
	Lineage map[string]AggregateLineage `json:"lineage,omitempty"`
}

// AggregateLineage is one parameter's conversion in an aggregate answer: the rule of
// canon's conversion table, its formula in x, the source field and unit. A bucket's
// statistics summarize many source values, so none is given.
type AggregateLineage struct {
	Rule        string `json:"rule"`
	Formula     string `json:"formula"`
	SourceField string `json:"source_field"`
	SourceUnit  string `json:"source_unit"`
}

// AppendAggregate appends r as JSON, byte for byte what json.Marshal(r) gives
// (aggregate_test.go checks it), without its cost: for 1000 buckets of six parameters
// encoding/json spent three quarters of the service's time on reflection over the bucket
// maps and on re-validating each AggregateStat's own output (docs/services.md,
// "Aggregates").
func AppendAggregate(b []byte, r *AggregateResponse) ([]byte, error) {
	str := func(key, v string) {
		b = append(b, key...)
		b = jsonbytes.AppendString(b, v)
	}
	str(`{"sensor_id":`, r.SensorID)
	str(`,"external_id":`, r.ExternalID)
	str(`,"name":`, r.Name)
	str(`,"service_id":`, r.ServiceID)
	str(`,"interval":`, r.Interval)
	str(`,"tz":`, r.TZ)
	b = appendTime(append(b, `,"since":`...), r.Since)
	b = appendTime(append(b, `,"until":`...), r.Until)
	b = appendStrings(append(b, `,"stats":`...), r.Stats)
	b = appendStrings(append(b, `,"parameters":`...), r.Parameters)
	b = append(b, `,"expected_interval_seconds":`...)
	if r.ExpectedIntervalSeconds == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*r.ExpectedIntervalSeconds), 10)
	}
	str(`,"source":`, r.Source)
	b = append(b, `,"buckets":`...)
	if r.Buckets == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		var keys []string
		for i := range r.Buckets {
			bk := &r.Buckets[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = appendTime(append(b, `{"start":`...), bk.Start)
			b = appendTime(append(b, `,"end":`...), bk.End)
			str(`,"start_local":`, bk.StartLocal)
			b = append(b, `,"values":`...)
			if bk.Values == nil {
				b = append(b, "null}"...)
				continue
			}
			keys = keys[:0]
			for k := range bk.Values {
				keys = append(keys, k)
			}
			slices.Sort(keys) // encoding/json writes map keys sorted
			b = append(b, '{')
			for j, k := range keys {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(jsonbytes.AppendString(b, k), ':')
				var err error
				if b, err = bk.Values[k].appendJSON(b); err != nil {
					return nil, err
				}
			}
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	// The rest is small: encoding/json's cost does not matter there.
	prov, err := json.Marshal(r.Provenance)
	if err != nil {
		return nil, err
	}
	b = append(append(b, `,"provenance":`...), prov...)
	if len(r.Lineage) > 0 {
		lin, err := json.Marshal(r.Lineage)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"lineage":`...), lin...)
	}
	return append(b, '}'), nil
}

// appendStrings appends ss as a JSON array (null when nil).
func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonbytes.AppendString(b, s)
	}
	return append(b, ']')
}
