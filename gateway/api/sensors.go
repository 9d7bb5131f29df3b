package api

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/render"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
)

// handlers holds the catalog handlers' dependencies.
type handlers struct{ d Deps }

// listSensors serves GET /sensors (registry false) and /sensors/registry (true): the same
// query, two item views.
func (h *handlers) listSensors(registry bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		q, err := sensorquery.Parse(c.Request.URL.Query())
		if err != nil {
			fail(c, err)
			return
		}
		// The answer format (docs/api-decisions.md "Wave 2"): the format parameter wins
		// over Accept.
		f, err := formats.Negotiate(c.Request.URL.Query(), c.GetHeader("Accept"), render.ListFormats...)
		if err != nil {
			fail(c, err)
			return
		}
		ctx, cancel := h.queryCtx(c)
		defer cancel()
		page, err := h.d.Store.ListSensors(ctx, q.Filter)
		if err != nil {
			fail(c, storeErr("list sensors", err))
			return
		}
		items, pg := shapeItems(page.Sensors, q, registry), contract.NewPagination(q.Filter.Page, q.Filter.Limit, page.Total)
		if f != formats.JSON {
			if err := render.List(c.Writer, c.Writer.Header(), c.Request, f, items, pg); err != nil {
				_ = c.Error(err)
			}
			return
		}
		c.Writer.Header().Add("Vary", "Accept") // Add: the gzip layer has put Accept-Encoding there
		writeJSON(c, sensorList{Sensors: items, Pagination: pg})
	}
}

// distinct serves a list of a facet's distinct values (GET /sensors/types and
// /sensors/statuses): what the store lists, as a JSON array, never null.
func (h *handlers) distinct(what string, list func(catalog.Store, context.Context) ([]string, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := h.queryCtx(c)
		defer cancel()
		v, err := list(h.d.Store, ctx)
		if err != nil {
			fail(c, storeErr(what, err))
			return
		}
		writeJSON(c, nonNil(v))
	}
}

// sensor serves GET /sensors/:id, by UUID or external id.
func (h *handlers) sensor(c *gin.Context) {
	ctx, cancel := h.queryCtx(c)
	defer cancel()
	s, err := h.d.Resolver.Resolve(ctx, c.Param("id"))
	if err != nil {
		fail(c, storeErr("sensor", err))
		return
	}
	writeJSON(c, s.Record())
}
