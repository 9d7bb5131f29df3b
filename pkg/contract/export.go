package contract

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// Bulk export limits (docs/api-decisions.md "Wave 2", Export).
const (
	MaxExportDays    = 366
	MaxExportSensors = 1000
	// ExportRowsPerRequest is the cost rule of an export: one request of the key's budget
	// per started block of this many rows sent (the first is the request itself).
	ExportRowsPerRequest = 10_000
	// PathExport is a service's streaming export of its stations' readings:
	// ?station=a&station=b&since=&until=&parameter=&format=csv|ndjson&header=false.
	PathExport = "/v1/readings/export"
)

// ExportQuery is the time range and parameters of an export.
type ExportQuery struct {
	Since, Until time.Time
	Parameters   []string
	// Lineage (lineage=true) adds each measurement's conversion: NDJSON measurements carry
	// `conversion`, CSV rows five more columns (formats.LineageHeader).
	Lineage bool
	// QC keeps the measurements whose quality flag it holds (qc=; default all).
	QC QCFilter
}

// ParseExportQuery parses since/until or days (one of them required; until defaults to
// now) and parameter; the range is at most MaxExportDays. Errors name the parameter.
func ParseExportQuery(v url.Values, now time.Time) (ExportQuery, error) {
	var q ExportQuery
	var err error
	if q.Parameters, err = parseParameters(v); err != nil {
		return q, err
	}
	if q.Lineage, err = parseLineage(v); err != nil {
		return q, err
	}
	if q.QC, err = ParseQC(v, QCAll); err != nil {
		return q, err
	}
	days, since, until := v.Get("days"), v.Get("since"), v.Get("until")
	switch {
	case days != "" && (since != "" || until != ""):
		return q, apierr.Invalid("days", "cannot be combined with since or until")
	case days != "":
		d, err := strconv.ParseFloat(days, 64)
		if err != nil || !(d > 0) || d > MaxExportDays {
			return q, apierr.Invalid("days", "want a number of days greater than 0 and at most %d, got %q", MaxExportDays, days)
		}
		q.Until = now.UTC()
		q.Since = q.Until.Add(-time.Duration(d * float64(24*time.Hour)))
		return q, nil
	case since == "":
		return q, apierr.Invalid("since", "an export needs a range: since (and until, default now) or days, at most %d days", MaxExportDays)
	}
	if q.Since, err = ParseTime(since); err != nil {
		return q, apierr.Invalid("since", "want an RFC 3339 time or a date YYYY-MM-DD, got %q", since)
	}
	q.Until = now.UTC()
	if until != "" {
		if q.Until, err = ParseTime(until); err != nil {
			return q, apierr.Invalid("until", "want an RFC 3339 time or a date YYYY-MM-DD, got %q", until)
		}
	}
	if !q.Until.After(q.Since) {
		return q, apierr.Invalid("until", "must be after since")
	}
	if q.Until.Sub(q.Since) > MaxExportDays*24*time.Hour {
		return q, apierr.Invalid("since", "the range %s .. %s is longer than %d days; export it in parts", FormatTime(q.Since), FormatTime(q.Until), MaxExportDays)
	}
	return q, nil
}

// ExportValues are the query of a service export call for stations (one station
// parameter each: an external id may hold a comma).
func ExportValues(stations []string, q ExportQuery, format string, header bool) url.Values {
	v := url.Values{"station": stations, "since": {FormatTime(q.Since)}, "until": {FormatTime(q.Until)}, "format": {format}}
	if len(q.Parameters) > 0 {
		v.Set("parameter", strings.Join(q.Parameters, ","))
	}
	if !header {
		v.Set("header", "false")
	}
	if q.Lineage {
		v.Set("lineage", "true")
	}
	if !q.QC.All() {
		v.Set("qc", q.QC.String())
	}
	return v
}
