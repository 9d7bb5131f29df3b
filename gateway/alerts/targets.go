package alerts

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// ResolveFunc finds the sensor a reference names (a UUID or a provider's external id),
// returning *apierr.Error for a malformed or unknown one: the gateway passes its one
// resolver (catalog.Resolver.Resolve), the one REST's and MCP's sensor routes use.
type ResolveFunc func(ctx context.Context, ref string) (catalog.Sensor, error)

// ProjectLookup finds a project by UUID or slug (catalog.Store does).
type ProjectLookup interface {
	Project(ctx context.Context, idOrSlug string) (catalog.Project, error)
}

// resolveTarget makes r's target name what it watches by the catalog's ids, or refuses a
// target that could never fire: every listed sensor is resolved (UUID or external id, as
// every REST route takes it) and stored by its UUID, the one the readings of the live
// feed carry; a project must exist and be visible to the caller, and is stored by its
// UUID, the sensors' feed id. An unknown sensor is a 400 naming target.sensor_ids and the
// item; an unknown or invisible project the same 404 project_not_found.
func (h *Handlers) resolveTarget(ctx context.Context, who auth.Identity, r *Rule) error {
	switch t := &r.Target; {
	case len(t.SensorIDs) > 0:
		if h.Resolve == nil {
			return errors.New("alerts: no sensor resolver configured")
		}
		ids := make([]string, 0, len(t.SensorIDs))
		seen := make(map[uuid.UUID]bool, len(t.SensorIDs))
		for i, ref := range t.SensorIDs {
			s, err := h.Resolve(ctx, ref)
			if err != nil {
				var ae *apierr.Error
				if errors.As(err, &ae) && (ae.Code == apierr.SensorNotFound || ae.Code == apierr.InvalidParameter) {
					return apierr.Invalid("target.sensor_ids", "item %d (%q) names no sensor; want a sensor UUID or a provider's external id", i, clip(ref))
				}
				return catalog.StoreError(fmt.Sprintf("alerts: resolve target.sensor_ids item %d", i), err)
			}
			// Two references to one sensor (its UUID and its external id) watch it once.
			if !seen[s.ID] {
				seen[s.ID] = true
				ids = append(ids, s.ID.String())
			}
		}
		t.SensorIDs = ids
	case t.ProjectID != "":
		if h.Projects == nil {
			return errors.New("alerts: no project lookup configured")
		}
		p, err := h.Projects.Project(ctx, t.ProjectID)
		var ae *apierr.Error
		switch {
		case errors.Is(err, catalog.ErrNotFound), errors.As(err, &ae) && ae.Code == apierr.InvalidParameter,
			err == nil && !catalog.Visible(p, &who.OwnerID):
			return apierr.New(apierr.ProjectNotFound, "project %q not found", clip(t.ProjectID))
		case err != nil:
			return catalog.StoreError("project", err)
		}
		t.ProjectID = p.ID.String()
	}
	return nil
}
