// Package ogc translates OGC API - Features (the catalog's sensors as features) and OGC
// API - EDR (one collection per backing service, answers in CoverageJSON) into the
// catalog and readings questions the REST routes answer, and their answers back into the
// OGC shapes (docs/ogc.md). It holds no query logic of its own: the sensor list, the
// sensor resolver and the readings come through the small interfaces below, which the
// gateway's wiring (gateway/app) points at the code behind GET /api/v1/sensors,
// /sensors/:id and /sensors/:id/readings (and the export's service calls for many
// sensors at once).
package ogc

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/ginerr"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/covjson"
)

// Catalog is the part of the catalog the OGC faces read.
type Catalog interface {
	// Sensors answers the sensor list query v exactly as GET /api/v1/sensors reads it
	// (search, sensor_type, status, provider, data_types, min_lat/min_lon/max_lat/max_lon,
	// lat/lon/radius_km, page, limit), plus service= (a service id) to keep one
	// service's sensors: one page and the total. Errors are *apierr.Error for a bad query.
	Sensors(ctx context.Context, v url.Values) (catalog.SensorPage, error)
	// Sensor resolves a sensor UUID or external id as GET /api/v1/sensors/:id does.
	Sensor(ctx context.Context, ref string) (catalog.Sensor, error)
	// Services lists the backing services with their parameters and extents.
	Services(ctx context.Context) ([]Service, error)
}

// Service is a backing service as an EDR collection sees it.
type Service struct {
	ID, Name, Description string
	// Parameters are the canonical parameter ids its sensors report.
	Parameters []string
	// BBox is the CRS84 box of its sensors (min lon, min lat, max lon, max lat); nil
	// when none has a position.
	BBox *[4]float64
	// Start and End bound its readings in time as the catalog knows them (nil: unknown).
	Start, End *time.Time
}

// Readings fetches canonical readings.
type Readings interface {
	// Series returns the measurements of each sensor (all of one service) within w as
	// samples, by sensor id, each sensor's in time order: every parameter, or
	// w.Parameters when set. Samples rather than readings because an area query holds a
	// thousand sensors' day at once (docs/ogc.md "Speed"). Errors are *apierr.Error (a
	// bad qc, an upstream failure) or the context's.
	Series(ctx context.Context, sensors []catalog.Sensor, w Window) (map[uuid.UUID][]covjson.Sample, error)
}

// Window is the time range, parameters and quality filter of a readings fetch.
type Window struct {
	Since, Until time.Time
	Parameters   []string
	QC           contract.QCFilter
}

// Options configure the handlers; Catalog and Readings are required.
type Options struct {
	Catalog  Catalog
	Readings Readings
	// OpenAPIPath is the path of the OpenAPI document (the landing page's service-desc).
	OpenAPIPath string
	// QueryTimeout bounds each catalog call (default catalog.QueryTimeout).
	QueryTimeout time.Duration
	// ReadingsTimeout bounds the readings fetch of one EDR query (default
	// DefaultReadingsTimeout, within the server's write timeout), so that a query too large
	// for it ends in a 504 naming the cure instead of a connection cut mid-answer.
	ReadingsTimeout time.Duration
	Logger          *slog.Logger
	Now             func() time.Time
}

// Handlers answer the OGC routes.
type Handlers struct{ o Options }

// New returns the handlers.
func New(o Options) (*Handlers, error) {
	if o.Catalog == nil || o.Readings == nil {
		return nil, errors.New("ogc: Catalog and Readings are required")
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = catalog.QueryTimeout
	}
	if o.ReadingsTimeout <= 0 {
		o.ReadingsTimeout = DefaultReadingsTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Handlers{o: o}, nil
}

// DefaultReadingsTimeout is ReadingsTimeout's default.
const DefaultReadingsTimeout = 45 * time.Second

// Base is the path every OGC route is under, within /api/v1.
const Base = "/ogc"

// Route is one OGC route, its path relative to the /api/v1 group.
type Route struct {
	Method, Path string
	Handler      gin.HandlerFunc
}

// Routes lists the OGC routes. One :collection parameter for all collections (Gin does
// not mix a literal and a parameter at one level): the handlers tell sensors (Features)
// from the services (EDR).
func (h *Handlers) Routes() []Route {
	get := func(p string, f gin.HandlerFunc) Route { return Route{http.MethodGet, Base + p, f} }
	return []Route{
		get("", h.landing),
		get("/conformance", h.conformance),
		get("/collections", h.collections),
		get("/collections/:collection", h.collection),
		get("/collections/:collection/items", h.items),
		get("/collections/:collection/items/:id", h.item),
		get("/collections/:collection/locations", h.locations),
		get("/collections/:collection/locations/:id", h.location),
		get("/collections/:collection/position", h.query(queryPosition)),
		get("/collections/:collection/radius", h.query(queryRadius)),
		get("/collections/:collection/area", h.query(queryArea)),
	}
}

// ctx bounds one catalog call.
func (h *Handlers) ctx(c *gin.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request.Context(), h.o.QueryTimeout)
}

func fail(c *gin.Context, err error) { ginerr.Fail(c, err) }

// series fetches the readings of sensors within ReadingsTimeout.
func (h *Handlers) series(c *gin.Context, sensors []catalog.Sensor, w Window) (map[uuid.UUID][]covjson.Sample, error) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.o.ReadingsTimeout)
	defer cancel()
	got, err := h.o.Readings.Series(ctx, sensors, w)
	if err != nil && ctx.Err() != nil && c.Request.Context().Err() == nil {
		return nil, apierr.New(apierr.UpstreamTimeout, "the readings of %d sensors over %s took longer than %s; narrow datetime, coords or parameter-name",
			len(sensors), w.Until.Sub(w.Since).Round(time.Second), h.o.ReadingsTimeout)
	}
	return got, err
}
