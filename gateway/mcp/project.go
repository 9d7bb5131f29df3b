package mcp

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sensorgate/sensorgate/gateway/catalog"
)

// Project tools are named without a service prefix, so they never collide with the
// project's service tools (<service_id>.<tool>) listed beside them.
func (h *Handler) newProjectTools() (*toolSet, error) {
	ts := newToolSet()
	addTool(ts, toolSpec[noArgs, projectRecord]{
		Name: "describe_project", Title: "Describe the project",
		Description: "The project (feed) this endpoint serves: provider, domain, temporal pattern, feed type, backing service and sensor count.",
		Tweak: func(_, out *jsonschema.Schema) {
			setEnum(prop(out, "visibility"), "public", "private")
			prop(out, "id").Format = "uuid"
		},
		Run: runDescribeProject,
	})
	addTool(ts, toolSpec[projectSensorsArgs, projectSensors]{
		Name: "list_project_sensors", Title: "List the project's sensors",
		Description: fmt.Sprintf("The sensors of this project, ordered by name, with the freshness of each one's newest reading. Pages of `limit` sensors (default %d, at most %d; larger is clamped); pass nextCursor back as cursor for the next page.", sensorListDefaultLimit, sensorListMaxLimit),
		Tweak: func(in, out *jsonschema.Schema) {
			setRange(prop(in, "limit"), 1, 0)
			prop(out, "project_id").Format = "uuid"
		},
		Run: runListProjectSensors,
	})
	return ts.done()
}

// providerRef names a provider: a project's, or one counted by describe_catalog.
type providerRef = catalog.ProviderRef

// projectRecord is the project as REST's GET /projects/:id gives it.
type projectRecord = catalog.ProjectRecord

func runDescribeProject(ctx context.Context, cc *callCtx, _ noArgs) (string, projectRecord, error) {
	p := cc.scope.project
	return fmt.Sprintf("Project %s (%s): %d sensors from %s, served by %s.", p.Name, p.Slug, p.SensorCount, orDash(p.ProviderName), orDash(p.ServiceID)), p.Record(), nil
}

type projectSensorsArgs struct {
	Status string `json:"status,omitempty" jsonschema:"Only sensors with this status"`
	Limit  *int   `json:"limit,omitempty" jsonschema:"Sensors per page (default 20, at most 1000; larger is clamped)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
}

// projectSensors is a page of the project's sensors, as search_sensors pages them.
type projectSensors struct {
	ProjectID string `json:"project_id" jsonschema:"Project UUID"`
	sensorPage
}

func runListProjectSensors(ctx context.Context, cc *callCtx, a projectSensorsArgs) (string, projectSensors, error) {
	const tool = "list_project_sensors"
	var none projectSensors
	p := cc.scope.project
	limit, err := limitOf(tool, a.Limit, sensorListDefaultLimit, sensorListMaxLimit)
	if err != nil {
		return "", none, err
	}
	qh := queryHash(struct{ Project, Status string }{p.ID.String(), a.Status})
	id := p.ID
	sp, err := cc.sensorPage(ctx, tool, a.Cursor, qh, limit, catalog.SensorFilter{FeedID: &id, Status: a.Status})
	if err != nil {
		return "", none, asAPIError(fmt.Errorf("list project sensors: %w", err))
	}
	out := projectSensors{ProjectID: p.ID.String(), sensorPage: sp}
	return fmt.Sprintf("%d of %d sensors of project %s (page %d).", len(sp.Sensors), sp.Total, p.Slug, sp.page), out, nil
}
