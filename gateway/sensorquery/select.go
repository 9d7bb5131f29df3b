package sensorquery

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// SelectFunc picks the sensors of a bulk export for the caller of c.
type SelectFunc func(c *gin.Context, v url.Values) ([]catalog.Sensor, error)

// ExportSelector returns the sensor selection of GET /readings/export (docs/api-decisions.md
// "Wave 2", Export): sensor_ids (UUIDs or external ids), or the sensor list's filters
// (search, sensor_type, status, provider, data_types, the bounding box or radius), narrowed
// by service= and project= (a project the caller may see). More than
// contract.MaxExportSensors sensors is a 400 naming the selection. Sensors are resolved
// through the one resolver.
func ExportSelector(st catalog.Store, resolver *catalog.Resolver, timeout time.Duration) SelectFunc {
	return func(c *gin.Context, v url.Values) ([]catalog.Sensor, error) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), timeout)
		defer cancel()
		if s := v.Get("sensor_ids"); s != "" {
			refs := strings.Split(s, ",")
			if len(refs) > contract.MaxExportSensors {
				return nil, apierr.Invalid("sensor_ids", "at most %d sensors per export, got %d", contract.MaxExportSensors, len(refs))
			}
			out := make([]catalog.Sensor, 0, len(refs))
			seen := map[string]bool{}
			for _, ref := range refs {
				ref = strings.TrimSpace(ref)
				if ref == "" {
					continue
				}
				sn, err := resolver.Resolve(ctx, ref)
				if err != nil {
					var ae *apierr.Error
					if errors.As(err, &ae) {
						return nil, apierr.New(ae.Code, "sensor_ids: %s", ae.Message)
					}
					return nil, catalog.StoreError("export sensors", err)
				}
				if !seen[sn.ID.String()] {
					seen[sn.ID.String()] = true
					out = append(out, sn)
				}
			}
			return out, nil
		}
		q, err := Parse(v)
		if err != nil {
			return nil, err
		}
		f := q.Filter
		f.ServiceID = strings.TrimSpace(v.Get("service"))
		if ref := strings.TrimSpace(v.Get("project")); ref != "" {
			who, err := auth.Caller(c)
			if err != nil {
				return nil, err
			}
			p, err := st.Project(ctx, ref)
			if errors.Is(err, catalog.ErrNotFound) {
				return nil, apierr.New(apierr.NotFound, "project %q not found", Clip(ref))
			}
			if err != nil {
				return nil, catalog.StoreError("project", err)
			}
			if !catalog.Visible(p, &who.OwnerID) {
				return nil, apierr.New(apierr.Forbidden, "project %q is private", Clip(ref))
			}
			f.FeedID = &p.ID
		}
		f.Page, f.Limit = 1, contract.MaxExportSensors+1
		page, err := st.ListSensors(ctx, f)
		if err != nil {
			return nil, catalog.StoreError("export sensors", err)
		}
		if page.Total > contract.MaxExportSensors {
			return nil, apierr.Invalid("sensor_ids", "the filters select %d sensors; an export takes at most %d (narrow the filters or name sensor_ids)", page.Total, contract.MaxExportSensors)
		}
		return page.Sensors, nil
	}
}
