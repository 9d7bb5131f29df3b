package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sensorgate/sensorgate/gateway/catalog"
)

// Project tools are named without a service prefix, so they never collide with the
// project's service tools (<service_id>.<tool>) listed beside them.
func (h *Handler) newProjectTools() (*toolSet, error) {
	return newToolSet(
		newTool("describe_project", "Describe the project",
			"The project (feed) this endpoint serves: provider, domain, temporal pattern, feed type, backing service and sensor count.",
			input(schema{}),
			object(schema{
				"id":               strFormat("Project (feed) UUID", "uuid"),
				"slug":             str("Project slug; the feed_slug injected into service tool calls"),
				"name":             str("Name"),
				"description":      str("Description"),
				"provider":         object(schema{"slug": str("Provider slug"), "name": str("Provider name")}, "slug", "name"),
				"domain":           str("Domain"),
				"temporal_pattern": str("Temporal pattern"),
				"feed_type":        str("Feed type"),
				"service_id":       str("Backing service id; its tools are listed beside the project tools"),
				"sensor_count":     integer("Sensors of the project", 0, 0),
				"visibility":       enum("public or private", "public", "private"),
				"created_at":       strFormat("Creation time", "date-time"),
			}, "id", "slug", "name", "provider", "domain", "temporal_pattern", "feed_type", "service_id", "sensor_count", "visibility"),
			runDescribeProject),
		newTool("list_project_sensors", "List the project's sensors",
			"The sensors of this project, ordered by name, with the freshness of each one's newest reading. Pass nextCursor back as cursor for the next page.",
			input(schema{
				"status": str("Only sensors with this status"),
				"limit":  integer(fmt.Sprintf("Sensors per page (default %d)", searchDefaultLimit), 1, searchMaxLimit),
				"cursor": str("nextCursor of the previous page"),
			}),
			object(schema{
				"project_id": strFormat("Project UUID", "uuid"),
				"sensors":    array(sensorSummarySchema(), "This page of sensors"),
				"units":      unitsSchema(),
				"total":      integer("Sensors of the project matching the filter", 0, 0),
				"limit":      integer("Page size applied", 1, 0),
				"nextCursor": str("Cursor of the next page; absent on the last page"),
			}, "project_id", "sensors", "units", "total", "limit"),
			runListProjectSensors),
	)
}

type projectRecord struct {
	ID              string            `json:"id"`
	Slug            string            `json:"slug"`
	Name            string            `json:"name"`
	Description     string            `json:"description"`
	Provider        map[string]string `json:"provider"`
	Domain          string            `json:"domain"`
	TemporalPattern string            `json:"temporal_pattern"`
	FeedType        string            `json:"feed_type"`
	ServiceID       string            `json:"service_id"`
	SensorCount     int               `json:"sensor_count"`
	Visibility      string            `json:"visibility"`
	CreatedAt       *string           `json:"created_at,omitempty"`
}

func runDescribeProject(ctx context.Context, cc *callCtx, raw json.RawMessage) (string, any, error) {
	if err := decodeArgs("describe_project", raw, &struct{}{}); err != nil {
		return "", nil, err
	}
	p := cc.scope.project
	id := p.ID
	n, err := cc.h.store.ListSensors(ctx, catalog.SensorFilter{FeedID: &id, Page: 1, Limit: 1})
	if err != nil {
		return "", nil, fmt.Errorf("count project sensors: %w", err)
	}
	out := projectRecord{
		ID: p.ID.String(), Slug: p.Slug, Name: p.Name, Description: p.Description,
		Provider: map[string]string{"slug": p.ProviderSlug, "name": p.ProviderName},
		Domain:   p.Domain, TemporalPattern: p.TemporalPattern, FeedType: p.FeedType,
		ServiceID: p.ServiceID, SensorCount: n.Total, Visibility: p.Visibility,
		CreatedAt: timeString(&p.CreatedAt),
	}
	return fmt.Sprintf("Project %s (%s): %d sensors from %s, served by %s.", p.Name, p.Slug, n.Total, orDash(p.ProviderName), orDash(p.ServiceID)), out, nil
}

func runListProjectSensors(ctx context.Context, cc *callCtx, raw json.RawMessage) (string, any, error) {
	const tool = "list_project_sensors"
	var a struct {
		Status string `json:"status,omitempty"`
		Limit  *int   `json:"limit,omitempty"`
		Cursor string `json:"cursor,omitempty"`
	}
	if err := decodeArgs(tool, raw, &a); err != nil {
		return "", nil, err
	}
	p := cc.scope.project
	limit := searchDefaultLimit
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > searchMaxLimit {
			return "", nil, badArg(tool, "limit", "must be between 1 and %d, got %d", searchMaxLimit, *a.Limit)
		}
		limit = *a.Limit
	}
	qh := queryHash(struct{ Project, Status string }{p.ID.String(), a.Status})
	page := 1
	if a.Cursor != "" {
		c, err := decodeCursor(tool, a.Cursor, qh)
		if err != nil {
			return "", nil, err
		}
		page, limit = c.Page, c.Limit
	}
	id := p.ID
	res, err := cc.h.store.ListSensors(ctx, catalog.SensorFilter{FeedID: &id, Status: a.Status, Page: page, Limit: limit})
	if err != nil {
		return "", nil, fmt.Errorf("list project sensors: %w", err)
	}
	out := struct {
		ProjectID  string            `json:"project_id"`
		Sensors    []sensorSummary   `json:"sensors"`
		Units      map[string]string `json:"units"`
		Total      int               `json:"total"`
		Limit      int               `json:"limit"`
		NextCursor string            `json:"nextCursor,omitempty"`
	}{ProjectID: p.ID.String(), Sensors: []sensorSummary{}, Total: res.Total, Limit: limit}
	for _, s := range res.Sensors {
		out.Sensors = append(out.Sensors, summarize(s, cc.now))
	}
	out.Units = unitsOfSensors(res.Sensors)
	if page*limit < res.Total && len(res.Sensors) > 0 {
		out.NextCursor = encodeCursor(pageCursor{Page: page + 1, Limit: limit, Query: qh})
	}
	return fmt.Sprintf("%d of %d sensors of project %s (page %d).", len(out.Sensors), res.Total, p.Slug, page), out, nil
}
