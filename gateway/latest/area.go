// Package latest answers GET /api/v1/readings/latest (docs/api-decisions.md "Area latest
// with staleness", docs/live.md): the newest reading of every sensor the sensor list's
// filters select, one batched call per service in parallel, merged in catalog order, each
// item judged by the one staleness rule (package freshness). A service that fails or is
// slow does not fail the answer: its sensors come back unavailable and the answer lists a
// warning. The area query parser is shared with the streams (package stream).
package latest

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/freshness"
)

// Page sizes of area latest: up to MaxLimit sensors per answer, paged beyond.
const (
	DefaultLimit = 1000
	MaxLimit     = 5000
	// maxSensorIDs bounds the sensor_ids list.
	maxSensorIDs = MaxLimit
	// catalogPage is the page size the catalog store serves (store.MaxLimit).
	catalogPage = 1000
)

// Area is a parsed area query: the catalog filter (sensor list filters, sensor_ids,
// service), the parameters to keep and the staleness rule.
type Area struct {
	Filter     catalog.SensorFilter
	Parameters []string
	Rule       freshness.Rule
	// Page and Limit of the answer (not of Filter, which the store clamps to 1,000).
	Page, Limit int
	// Unfiltered is true when no parameter narrows the sensors (every sensor matches).
	Unfiltered bool
	// QC keeps the measurements whose quality flag it holds (qc=, default all); the
	// services apply it.
	QC contract.QCFilter
}

// ParseArea parses the query of area latest and the area stream: the filters of GET
// /sensors (docs/spec.md 4.2) through the same parser, plus sensor_ids=a,b (UUIDs or
// external ids), service=, parameter=a,b and max_age= (seconds or ISO 8601). Errors are
// *apierr.Error naming the parameter.
func ParseArea(v url.Values, maxLimit int) (Area, error) {
	var a Area
	rest := url.Values{}
	for k, vs := range v {
		switch k {
		case "page", "limit", "sensor_ids", "service", "parameter", "max_age", "format", "minimal", "fields", "qc":
		default:
			rest[k] = vs
		}
	}
	sq, err := sensorquery.Parse(rest)
	if err != nil {
		return a, err
	}
	a.Filter = sq.Filter
	if a.Page, a.Limit, err = pageParams(v, maxLimit); err != nil {
		return a, err
	}
	if s, err := text(v, "service"); err != nil {
		return a, err
	} else if s != "" {
		a.Filter.ServiceID = s
	}
	if s := v.Get("sensor_ids"); s != "" {
		refs, more := sensorquery.List(s, maxSensorIDs)
		if more {
			return a, apierr.Invalid("sensor_ids", "at most %d ids", maxSensorIDs)
		}
		for _, ref := range refs {
			if id, ok := catalog.IsSensorUUID(ref); ok {
				a.Filter.IDs = append(a.Filter.IDs, id)
			}
			if err := contract.ValidExternalID(ref); err != nil {
				return a, apierr.Invalid("sensor_ids", "%q is neither a sensor UUID nor an external id: %v", apierr.Clip(ref, 64), err)
			}
			a.Filter.ExternalIDs = append(a.Filter.ExternalIDs, ref)
		}
	}
	if s := strings.TrimSpace(v.Get("parameter")); s != "" {
		for _, p := range strings.Split(s, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			if !canon.IsParameter(p) {
				return a, apierr.Invalid("parameter", "%q is not a canonical parameter id (see GET /api/v1/sensors?data_types= for the list)", apierr.Clip(p, 64))
			}
			a.Parameters = append(a.Parameters, p)
		}
	}
	if a.QC, err = contract.ParseQC(v, contract.QCAll); err != nil {
		return a, err
	}
	if s := v.Get("max_age"); s != "" {
		d, err := freshness.ParseMaxAge(s)
		if err != nil {
			return a, apierr.Invalid("max_age", "%v", err)
		}
		a.Rule = freshness.WithMaxAge(d)
	}
	f := a.Filter
	a.Unfiltered = f.Search == "" && f.SensorType == "" && f.Status == "" && f.Provider == "" && len(f.DataTypes) == 0 &&
		f.ServiceID == "" && f.BBox == nil && f.Near == nil && len(f.IDs) == 0 && len(f.ExternalIDs) == 0
	return a, nil
}

func text(v url.Values, name string) (string, error) {
	s := strings.TrimSpace(v.Get(name))
	if len(s) > 200 {
		return "", apierr.Invalid(name, "want at most 200 bytes, got %d", len(s))
	}
	return s, nil
}

func pageParams(v url.Values, maxLimit int) (page, limit int, err error) {
	page, limit = 1, min(DefaultLimit, maxLimit)
	if s := v.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > sensorquery.MaxPage {
			return 0, 0, apierr.Invalid("page", "want an integer from 1 to %d, got %q", sensorquery.MaxPage, apierr.Clip(s, 64))
		}
		page = n
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, 0, apierr.Invalid("limit", "want an integer from 1 (values above %d are clamped to %d), got %q", maxLimit, maxLimit, apierr.Clip(s, 64))
		}
		limit = min(n, maxLimit)
	}
	return page, limit, nil
}

// Lister is the part of the catalog store the area selection reads: the lean, cached
// sensor pages (catalog.Store.AreaSensors), and last reading times for the sensors of a
// service that did not answer.
type Lister interface {
	AreaSensors(ctx context.Context, f catalog.SensorFilter) (catalog.SensorPage, error)
	LastReadingTimes(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]time.Time, error)
}

// Select returns the sensors [offset, offset+limit) of the filter in list order and the
// total matching, reading as many catalog pages (of catalogPage) as the window spans.
// The sensors have the fields of catalog.Store.AreaSensors only.
func Select(ctx context.Context, st Lister, f catalog.SensorFilter, offset, limit int) ([]catalog.Sensor, int, error) {
	out := make([]catalog.Sensor, 0, min(limit, catalogPage))
	total := 0
	for p := offset / catalogPage; ; p++ {
		f.Page, f.Limit = p+1, catalogPage
		page, err := st.AreaSensors(ctx, f)
		if err != nil {
			return nil, 0, fmt.Errorf("select sensors: %w", err)
		}
		total = page.Total
		base := p * catalogPage
		for i, s := range page.Sensors {
			if at := base + i; at >= offset && at < offset+limit {
				out = append(out, s)
			}
		}
		if base+catalogPage >= offset+limit || base+catalogPage >= total || len(page.Sensors) < catalogPage {
			return out, total, nil
		}
	}
}
