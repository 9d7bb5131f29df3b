package api

import (
	"errors"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// ParseProjectQuery parses the query of GET /projects (docs/spec.md 4.14) and /projects/my:
// provider, domain, temporal_pattern, search, feed_type, page and limit. Viewer and owner
// are the caller's to fill.
func ParseProjectQuery(v url.Values) (catalog.ProjectFilter, error) {
	var f catalog.ProjectFilter
	if err := sensorquery.CheckValues(v); err != nil {
		return f, err
	}
	var err error
	for _, p := range []struct {
		name string
		dst  *string
	}{{"provider", &f.Provider}, {"domain", &f.Domain}, {"temporal_pattern", &f.TemporalPattern}, {"search", &f.Search}, {"feed_type", &f.FeedType}} {
		if *p.dst, err = sensorquery.TextParam(v, p.name); err != nil {
			return f, err
		}
	}
	f.Page, f.Limit, err = sensorquery.PageParams(v)
	return f, err
}

// caller is the authenticated identity; the auth middleware guarantees one on /api/v1.
func caller(c *gin.Context) (auth.Identity, error) { return auth.Caller(c) }

// listProjects serves GET /projects (mine false) and /projects/my (true). The caller sees
// public projects and its own private ones; /my keeps only its own.
func (h *handlers) listProjects(mine bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		who, err := caller(c)
		if err != nil {
			fail(c, err)
			return
		}
		f, err := ParseProjectQuery(c.Request.URL.Query())
		if err != nil {
			fail(c, err)
			return
		}
		f.ViewerID = who.OwnerID
		if mine {
			owner := who.OwnerID
			f.OwnerID = &owner
		}
		ctx, cancel := h.queryCtx(c)
		defer cancel()
		ps, total, err := h.d.Store.ListProjects(ctx, f)
		if err != nil {
			fail(c, storeErr("list projects", err))
			return
		}
		out := projectList{Projects: make([]catalog.ProjectRecord, len(ps)), Pagination: contract.NewPagination(f.Page, f.Limit, total)}
		for i := range ps {
			out.Projects[i] = ps[i].Record()
		}
		writeJSON(c, out)
	}
}

// project serves GET /projects/:id by UUID or slug; a private project of another owner is
// 403 forbidden.
func (h *handlers) project(c *gin.Context) {
	who, err := caller(c)
	if err != nil {
		fail(c, err)
		return
	}
	ref := c.Param("id")
	ctx, cancel := h.queryCtx(c)
	defer cancel()
	p, err := h.d.Store.Project(ctx, ref)
	if errors.Is(err, catalog.ErrNotFound) {
		fail(c, apierr.New(apierr.NotFound, "project %q not found", sensorquery.Clip(ref)))
		return
	}
	if err != nil {
		fail(c, storeErr("project", err))
		return
	}
	if !catalog.Visible(p, &who.OwnerID) {
		fail(c, apierr.New(apierr.Forbidden, "project %q is private", sensorquery.Clip(ref)))
		return
	}
	writeJSON(c, p.Record())
}
