package ogc

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/covjson"
)

// EDR query types.
const (
	queryPosition  = "position"
	queryRadius    = "radius"
	queryArea      = "area"
	queryLocations = "locations"
)

// dataParams are the parameters every EDR data query takes.
var dataParams = []string{"parameter-name", "datetime", "qc"}

// covFormats are the f= values of a CoverageJSON answer.
var covFormats = []string{"covjson", "coveragejson", "json"}

// locations serves GET /collections/{service}/locations: the service's sensors as
// GeoJSON features (EDR's list of locations), bbox, limit (default all up to MaxLimit)
// and offset as on items.
func (h *Handlers) locations(c *gin.Context) {
	s, err := h.service(c)
	if err != nil {
		fail(c, err)
		return
	}
	v := c.Request.URL.Query()
	if v.Get("limit") == "" {
		v.Set("limit", strconv.Itoa(MaxLimit))
	}
	fc, err := h.featurePage(c, v, s.ID, []string{"bbox", "limit", "offset"}, "/collections/"+s.ID+"/locations")
	if err != nil {
		fail(c, err)
		return
	}
	write(c, typeGeoJSON, fc)
}

// dataQuery is what every data query reads: the parameters, the window and qc.
type dataQuery struct {
	params []string
	w      Window
}

func (h *Handlers) dataQuery(c *gin.Context, s Service, extra ...string) (dataQuery, error) {
	v := c.Request.URL.Query()
	if err := checkParams(v, append(extra, dataParams...)...); err != nil {
		return dataQuery{}, err
	}
	if err := format(v, covFormats...); err != nil {
		return dataQuery{}, err
	}
	params, err := parameterNames(v, s)
	if err != nil {
		return dataQuery{}, err
	}
	since, until, err := datetime(v.Get("datetime"), h.o.Now())
	if err != nil {
		return dataQuery{}, err
	}
	qc, err := contract.ParseQC(v, contract.QCAll)
	if err != nil {
		return dataQuery{}, err
	}
	w := Window{Since: since, Until: until, QC: qc}
	if strings.TrimSpace(v.Get("parameter-name")) != "" {
		// Only a narrowing is sent on: every parameter is the services' default, and a
		// filter that keeps them all would make the service decode each reading for it.
		w.Parameters = params
	}
	return dataQuery{params: params, w: w}, nil
}

// location serves GET /collections/{service}/locations/{id}: one sensor (UUID or
// external id, of this service) as a PointSeries coverage.
func (h *Handlers) location(c *gin.Context) {
	s, err := h.service(c)
	if err != nil {
		fail(c, err)
		return
	}
	q, err := h.dataQuery(c, s)
	if err != nil {
		fail(c, err)
		return
	}
	ctx, cancel := h.ctx(c)
	sn, err := h.o.Catalog.Sensor(ctx, c.Param("id"))
	cancel()
	if err != nil {
		fail(c, err)
		return
	}
	if sn.ServiceID != s.ID {
		fail(c, apierr.New(apierr.SensorNotFound, "sensor %q is not in collection %q (its service is %q)", sensorquery.Clip(c.Param("id")), s.ID, sn.ServiceID))
		return
	}
	if sn.Latitude == nil || sn.Longitude == nil {
		fail(c, apierr.New(apierr.NotFound, "sensor %q has no position, so it has no point series", sn.ID))
		return
	}
	if sn.FeedID == nil {
		fail(c, apierr.New(apierr.NoFeed, "sensor %q has no feed, so it has no readings", sn.ID))
		return
	}
	got, err := h.series(c, []catalog.Sensor{sn}, q.w)
	if err != nil {
		fail(c, err)
		return
	}
	series := toSeries(sn, got[sn.ID], q.params)
	if len(series.Samples) == 0 {
		fail(c, apierr.New(apierr.NoReadings, "sensor %q has no readings of %v between %s and %s", sn.ID, q.params,
			contract.FormatTime(q.w.Since), contract.FormatTime(q.w.Until)))
		return
	}
	writeCov(c, covjson.NewCoverage(series, q.params, describeAll(q.params)))
}

// query serves position, radius and area: the service's sensors the geometry selects
// (at most MaxSensors), as a CoverageCollection of PointSeries; sensors without readings
// in the window are left out.
func (h *Handlers) query(kind string) gin.HandlerFunc {
	return func(c *gin.Context) {
		s, err := h.service(c)
		if err != nil {
			fail(c, err)
			return
		}
		extra := []string{"coords"}
		if kind == queryRadius {
			extra = append(extra, "within", "within-units")
		}
		q, err := h.dataQuery(c, s, extra...)
		if err != nil {
			fail(c, err)
			return
		}
		sensors, err := h.selectSensors(c, s, kind)
		if err != nil {
			fail(c, err)
			return
		}
		var withFeed []catalog.Sensor
		for _, sn := range sensors {
			if sn.FeedID != nil && sn.Latitude != nil && sn.Longitude != nil {
				withFeed = append(withFeed, sn)
			}
		}
		var got map[uuid.UUID][]covjson.Sample
		if len(withFeed) > 0 {
			if got, err = h.series(c, withFeed, q.w); err != nil {
				fail(c, err)
				return
			}
		}
		series := make([]covjson.Series, 0, len(withFeed))
		for _, sn := range withFeed {
			series = append(series, toSeries(sn, got[sn.ID], q.params))
		}
		writeCov(c, covjson.NewCollection(series, q.params, describeAll(q.params)))
	}
}

// selectSensors lists the service's sensors the query's coords (and within) select,
// through the REST list's radius and bounding-box filters.
func (h *Handlers) selectSensors(c *gin.Context, s Service, kind string) ([]catalog.Sensor, error) {
	v := c.Request.URL.Query()
	want := "POINT"
	if kind == queryArea {
		want = "POLYGON"
	}
	g, err := coords(v, want)
	if err != nil {
		return nil, err
	}
	q := url.Values{"service": {s.ID}, "limit": {strconv.Itoa(MaxLimit)}}
	switch kind {
	case queryPosition, queryRadius:
		km := PositionKM
		if kind == queryRadius {
			if km, err = within(v); err != nil {
				return nil, err
			}
		}
		p := g.(orb.Point)
		q.Set("lon", fmtF(p[0]))
		q.Set("lat", fmtF(p[1]))
		q.Set("radius_km", fmtF(km))
		sensors, total, err := h.page(c, q, 1)
		if err != nil {
			return nil, err
		}
		if total > MaxSensors {
			return nil, tooMany(total)
		}
		return sensors, nil
	}
	pg := g.(orb.Polygon)
	b := pg.Bound()
	q.Set("min_lon", fmtF(b.Min[0]))
	q.Set("min_lat", fmtF(b.Min[1]))
	q.Set("max_lon", fmtF(b.Max[0]))
	q.Set("max_lat", fmtF(b.Max[1]))
	// The polygon's bounding box, page by page, kept where the polygon holds the point;
	// a box of more than maxBoxSensors is refused before reading it all.
	const maxBoxSensors = 10 * MaxSensors
	var out []catalog.Sensor
	for page := 1; ; page++ {
		sensors, total, err := h.page(c, q, page)
		if err != nil {
			return nil, err
		}
		if total > maxBoxSensors {
			return nil, apierr.Invalid("coords", "the polygon's bounding box holds %d sensors of %q; narrow the polygon (an area query reads at most %d sensors)", total, s.ID, MaxSensors)
		}
		for _, sn := range sensors {
			if sn.Latitude != nil && sn.Longitude != nil && planar.PolygonContains(pg, orb.Point{*sn.Longitude, *sn.Latitude}) {
				out = append(out, sn)
			}
		}
		if len(out) > MaxSensors {
			return nil, tooMany(len(out))
		}
		if page*MaxLimit >= total {
			return out, nil
		}
	}
}

func tooMany(n int) error {
	return apierr.Invalid("coords", "selects %d sensors (at least); a query reads at most %d: narrow coords or within", n, MaxSensors)
}

// toSeries is a sensor's samples of params as its CoverageJSON series, filtered in place
// (the service reads every parameter when the query names none).
func toSeries(sn catalog.Sensor, samples []covjson.Sample, params []string) covjson.Series {
	keep := samples[:0]
	for _, x := range samples {
		if slices.Contains(params, x.Parameter) {
			keep = append(keep, x)
		}
	}
	return covjson.Series{ID: sn.ID.String(), Lon: *sn.Longitude, Lat: *sn.Latitude, Samples: keep}
}

func writeCov(c *gin.Context, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Cache-Control", "private, no-cache")
	c.Header("Content-Length", strconv.Itoa(len(b)))
	c.Data(http.StatusOK, covjson.MediaType, b)
}
