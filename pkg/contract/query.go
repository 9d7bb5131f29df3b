package contract

import (
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
)

// Readings page sizes (docs/spec.md 8, docs/api-decisions.md "Lists and ordering").
const (
	DefaultReadingsLimit = 100
	MaxReadingsLimit     = 500
	MaxDays              = 3660
)

// Data formats.
const (
	FormatCleaned = "cleaned"
	FormatRaw     = "raw"
)

// ReadingsQuery is the parsed query of the readings endpoints. Since is inclusive, Until
// exclusive; zero values mean unbounded.
type ReadingsQuery struct {
	Since      time.Time
	Until      time.Time
	Limit      int
	Page       int
	Format     string
	Parameters []string // empty: all
	Ascending  bool
	// Lineage (lineage=true) adds to every measurement its conversion: the named rule of
	// canon's conversion table, its formula and the source field, value and unit.
	Lineage bool
	// Revisions adds each reading's earlier values (revisions=true).
	Revisions bool
	// QC keeps the measurements whose quality flag it holds (qc=; default all).
	QC QCFilter
}

// Offset is the row offset of the page.
func (q ReadingsQuery) Offset() int { return (q.Page - 1) * q.Limit }

// ParseLatestQuery parses the query of GET .../readings/latest (data_format only, plus
// parameter as for readings).
func ParseLatestQuery(v url.Values, now time.Time) (ReadingsQuery, error) {
	q := ReadingsQuery{Limit: 1, Page: 1, Format: FormatCleaned}
	var err error
	if q.Format, err = parseFormat(v); err != nil {
		return q, err
	}
	err = parseSelection(v, &q.Parameters, &q.Lineage, &q.QC)
	return q, err
}

// ParseReadingsQuery parses and validates the query of GET .../readings (docs/spec.md 4.8 and
// docs/api-decisions.md "Times"). Every error is an *apierr.Error naming the parameter.
func ParseReadingsQuery(v url.Values, now time.Time) (ReadingsQuery, error) {
	q := ReadingsQuery{Limit: DefaultReadingsLimit, Page: 1, Format: FormatCleaned}
	var err error
	if q.Format, err = parseFormat(v); err != nil {
		return q, err
	}
	if err := parseSelection(v, &q.Parameters, &q.Lineage, &q.QC); err != nil {
		return q, err
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return q, apierr.Invalid("limit", "want a positive integer (maximum %d), got %q", MaxReadingsLimit, s)
		}
		q.Limit = min(n, MaxReadingsLimit)
	}
	if s := v.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 10_000_000 {
			return q, apierr.Invalid("page", "want a positive integer, got %q", s)
		}
		q.Page = n
	}
	if q.Revisions, err = choice(v, "revisions", "true", "false"); err != nil {
		return q, err
	}
	if q.Ascending, err = choice(v, "sort", "asc", "desc"); err != nil {
		return q, err
	}
	r, err := parseRange(v)
	if err != nil {
		return q, err
	}
	if r.span > 0 {
		q.Since = now.Add(-r.span).UTC()
		return q, nil
	}
	q.Since, q.Until = r.since, r.until
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return q, apierr.Invalid("until", "must be after since")
	}
	return q, nil
}

// timeRange is a query's range as given: days as span (0 when absent), or since and until
// (each zero when absent).
type timeRange struct {
	span         time.Duration
	since, until time.Time
}

// parseRange reads a range's parameters: days, which excludes since and until, or either of
// those as a time (timeParam). Each error names the parameter.
func parseRange(v url.Values) (timeRange, error) {
	var r timeRange
	days, since, until := v.Get("days"), v.Get("since"), v.Get("until")
	if days == "" {
		var err error
		if since != "" {
			if r.since, err = timeParam("since", since); err != nil {
				return r, err
			}
		}
		if until != "" {
			if r.until, err = timeParam("until", until); err != nil {
				return r, err
			}
		}
		return r, nil
	}
	if since != "" || until != "" {
		name := "since"
		if since == "" {
			name = "until"
		}
		return r, apierr.Invalid("days", "cannot be combined with %s", name)
	}
	d, err := strconv.ParseFloat(days, 64)
	if err != nil || math.IsNaN(d) || d <= 0 || d > MaxDays {
		return r, apierr.Invalid("days", "want a number of days greater than 0 and at most %d, got %q", MaxDays, days)
	}
	r.span = time.Duration(d * float64(24*time.Hour))
	return r, nil
}

// choice reads a two-valued parameter: yes gives true, no or nothing false; anything else
// is an error naming the parameter.
func choice(v url.Values, name, yes, no string) (bool, error) {
	switch s := v.Get(name); s {
	case "", no:
		return false, nil
	case yes:
		return true, nil
	default:
		return false, apierr.Invalid(name, "want %s or %s, got %q", yes, no, s)
	}
}

// timeParam parses the time parameter name (since, until) with ParseTime; its error names
// the parameter.
func timeParam(name, s string) (time.Time, error) {
	t, err := ParseTime(s)
	if err != nil {
		return t, apierr.Invalid(name, "want an RFC 3339 time or a date YYYY-MM-DD, got %q", s)
	}
	return t, nil
}

// ParseTime accepts RFC 3339 with or without fraction and offset (UTC assumed without
// one), and plain dates meaning the start of that day in UTC.
func ParseTime(s string) (time.Time, error) {
	layouts := []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"}
	var err error
	for _, l := range layouts {
		var t time.Time
		if t, err = time.Parse(l, s); err == nil {
			if t.Year() < 1900 || t.Year() > 2200 {
				break
			}
			return t.UTC(), nil
		}
	}
	return time.Time{}, &time.ParseError{Layout: time.RFC3339, Value: s, Message: ": not a supported time"}
}

func parseFormat(v url.Values) (string, error) {
	switch s := v.Get("data_format"); s {
	case "", FormatCleaned:
		return FormatCleaned, nil
	case FormatRaw:
		return FormatRaw, nil
	default:
		return "", apierr.Invalid("data_format", "want cleaned or raw, got %q", s)
	}
}

// parseSelection reads what of each reading a readings, latest or export answer holds:
// parameter, lineage and qc (default all), in that order of precedence for errors.
func parseSelection(v url.Values, params *[]string, lineage *bool, qc *QCFilter) error {
	var err error
	if *params, err = parseParameters(v); err != nil {
		return err
	}
	if *lineage, err = parseLineage(v); err != nil {
		return err
	}
	*qc, err = ParseQC(v, QCAll)
	return err
}

// parseLineage reads lineage=true|false (absent: false). It applies to cleaned readings
// only: raw readings carry the source fragment itself.
func parseLineage(v url.Values) (bool, error) {
	switch s := v.Get("lineage"); s {
	case "", "false":
		return false, nil
	case "true":
		if v.Get("data_format") == FormatRaw {
			return false, apierr.Invalid("lineage", "applies to cleaned readings; data_format=raw already returns the source fragment")
		}
		return true, nil
	default:
		return false, apierr.Invalid("lineage", "want true or false, got %q", s)
	}
}

func parseParameters(v url.Values) ([]string, error) {
	s := v.Get("parameter")
	if s == "" {
		return nil, nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !canon.IsParameter(p) {
			return nil, apierr.Invalid("parameter", "unknown parameter id %q (see the canonical parameters)", p)
		}
		out = append(out, p)
	}
	return out, nil
}
