package api

import (
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// services serves GET /services: docs/spec.md 2.7 records.
func (h *handlers) services(c *gin.Context) {
	ctx, cancel := h.queryCtx(c)
	defer cancel()
	ss, err := h.d.Store.Services(ctx)
	if err != nil {
		fail(c, storeErr("services", err))
		return
	}
	out := make([]catalog.ServiceRecord, len(ss))
	for i := range ss {
		out[i] = ss[i].Record()
	}
	writeJSON(c, out)
}

// service serves GET /services/:id: the record plus version, providers, feeds, tools,
// sensor count and last ingest time (docs/api-decisions.md).
func (h *handlers) service(c *gin.Context) {
	ctx, cancel := h.queryCtx(c)
	defer cancel()
	id := c.Param("id")
	s, err := h.d.Store.Service(ctx, id)
	if errors.Is(err, catalog.ErrNotFound) {
		fail(c, apierr.New(apierr.NotFound, "service %q not found", sensorquery.Clip(id)))
		return
	}
	if err != nil {
		fail(c, storeErr("service", err))
		return
	}
	names, err := h.providerNames(c, s.ID)
	if err != nil {
		fail(c, err)
		return
	}
	providers := make([]catalog.ProviderRef, len(s.Providers))
	for i, slug := range s.Providers {
		providers[i] = catalog.ProviderRef{Slug: slug, Name: names[slug]}
	}
	var last *contract.Time
	if s.LastIngestAt != nil {
		last = &contract.Time{Time: *s.LastIngestAt}
	}
	writeJSON(c, serviceMetaJSON{
		ServiceRecord: s.Record(), Version: s.Version, Providers: providers,
		Feeds: nonNil(s.Feeds), Tools: nonNil(s.Tools), SensorCount: s.SensorCount, LastIngestAt: last,
	})
}

// providerNames maps provider slugs to names through the service's public projects, which
// carry their provider; the store keeps no separate provider listing.
func (h *handlers) providerNames(c *gin.Context, serviceID string) (map[string]string, error) {
	ctx, cancel := h.queryCtx(c)
	defer cancel()
	names := map[string]string{}
	for page := 1; page <= 10; page++ {
		ps, total, err := h.d.Store.ListProjects(ctx, catalog.ProjectFilter{Page: page, Limit: sensorquery.MaxListLimit})
		if err != nil {
			return nil, storeErr("service providers", err)
		}
		for _, p := range ps {
			if p.ServiceID == serviceID && p.ProviderSlug != "" {
				names[p.ProviderSlug] = p.ProviderName
			}
		}
		if page*sensorquery.MaxListLimit >= total {
			break
		}
	}
	return names, nil
}
