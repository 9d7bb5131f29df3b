package api

import (
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

func (h *handlers) sensorTypes(c *gin.Context) {
	ctx, cancel := h.queryCtx(c)
	defer cancel()
	v, err := h.d.Store.SensorTypes(ctx)
	if err != nil {
		fail(c, storeErr("sensor types", err))
		return
	}
	writeJSON(c, nonNil(v))
}

func (h *handlers) sensorStatuses(c *gin.Context) {
	ctx, cancel := h.queryCtx(c)
	defer cancel()
	v, err := h.d.Store.SensorStatuses(ctx)
	if err != nil {
		fail(c, storeErr("sensor statuses", err))
		return
	}
	writeJSON(c, nonNil(v))
}

// sensor serves GET /sensors/:id, by UUID or external id.
func (h *handlers) sensor(c *gin.Context) {
	ctx, cancel := h.queryCtx(c)
	defer cancel()
	s, err := catalog.ResolveSensor(ctx, h.d.Store, c.Param("id"))
	if err != nil {
		fail(c, storeErr("sensor", err))
		return
	}
	writeJSON(c, s.Record())
}
