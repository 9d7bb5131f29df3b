package ogc

import (
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// listFilters are the REST list's filters the feature lists take as query parameters.
var listFilters = []string{"search", "sensor_type", "status", "provider", "data_types"}

// Feature is a GeoJSON feature of a sensor: its UUID, its position (null without one),
// and its fields as GET /api/v1/sensors/{id} has them.
type Feature struct {
	Type       string               `json:"type"`
	ID         string               `json:"id"`
	Geometry   *Point               `json:"geometry"`
	Properties catalog.SensorRecord `json:"properties"`
	Links      []Link               `json:"links,omitempty"`
}

// Point is a GeoJSON point.
type Point struct {
	Type        string     `json:"type"`
	Coordinates [2]float64 `json:"coordinates"`
}

// FeatureCollection is a page of features.
type FeatureCollection struct {
	Type           string    `json:"type"`
	Features       []Feature `json:"features"`
	NumberMatched  int       `json:"numberMatched"`
	NumberReturned int       `json:"numberReturned"`
	TimeStamp      string    `json:"timeStamp"`
	Links          []Link    `json:"links"`
}

func feature(s catalog.Sensor) Feature {
	f := Feature{Type: "Feature", ID: s.ID.String(), Properties: s.Record()}
	if s.Latitude != nil && s.Longitude != nil {
		f.Geometry = &Point{Type: "Point", Coordinates: [2]float64{*s.Longitude, *s.Latitude}}
	}
	return f
}

// items serves GET /collections/sensors/items: bbox, limit, offset and the REST list's
// filters, translated into the REST list query.
func (h *Handlers) items(c *gin.Context) {
	if c.Param("collection") != SensorsCollection {
		h.locationsOr404(c)
		return
	}
	v := c.Request.URL.Query()
	fc, err := h.featurePage(c, v, "", append([]string{"bbox", "limit", "offset"}, listFilters...), "/collections/"+SensorsCollection+"/items")
	if err != nil {
		fail(c, err)
		return
	}
	write(c, typeGeoJSON, fc)
}

// locationsOr404 answers /items on a service collection: EDR collections are queried,
// not listed as items.
func (h *Handlers) locationsOr404(c *gin.Context) {
	if _, err := h.service(c); err != nil {
		fail(c, err)
		return
	}
	fail(c, apierr.New(apierr.NotFound, "collection %q is an EDR collection: its sensors are at /locations", c.Param("collection")))
}

// featurePage answers a feature list of the sensors that v selects (within service, when
// set). The REST list pages by page and limit; an offset that is not a multiple of
// limit takes the two REST pages around it.
func (h *Handlers) featurePage(c *gin.Context, v url.Values, service string, known []string, path string) (FeatureCollection, error) {
	if err := checkParams(v, known...); err != nil {
		return FeatureCollection{}, err
	}
	if err := format(v, "json", "geojson"); err != nil {
		return FeatureCollection{}, err
	}
	limit, offset, err := paging(v)
	if err != nil {
		return FeatureCollection{}, err
	}
	q := url.Values{}
	for _, f := range listFilters {
		if s := v.Get(f); s != "" {
			q.Set(f, s)
		}
	}
	if s := v.Get("bbox"); s != "" {
		if err := bbox(s, q); err != nil {
			return FeatureCollection{}, err
		}
	}
	if service != "" {
		q.Set("service", service)
	}
	q.Set("limit", strconv.Itoa(limit))
	first := offset/limit + 1
	skip := offset % limit
	sensors, total, err := h.page(c, q, first)
	if err != nil {
		return FeatureCollection{}, err
	}
	if skip > 0 {
		sensors = sensors[min(skip, len(sensors)):]
		if len(sensors) < limit && offset+len(sensors) < total {
			more, _, err := h.page(c, q, first+1)
			if err != nil {
				return FeatureCollection{}, err
			}
			sensors = append(sensors, more[:min(limit-len(sensors), len(more))]...)
		}
	}
	fc := FeatureCollection{Type: "FeatureCollection", Features: make([]Feature, len(sensors)),
		NumberMatched: total, NumberReturned: len(sensors), TimeStamp: contract.FormatTime(h.o.Now())}
	for i, s := range sensors {
		fc.Features[i] = feature(s)
	}
	self := base(c) + path
	link := func(off int) string {
		w := url.Values{}
		for k, vs := range v {
			w[k] = vs
		}
		w.Set("limit", strconv.Itoa(limit))
		w.Set("offset", strconv.Itoa(off))
		return self + "?" + w.Encode()
	}
	fc.Links = []Link{{link(offset), "self", typeGeoJSON, ""}}
	if offset+len(sensors) < total {
		fc.Links = append(fc.Links, Link{link(offset + limit), "next", typeGeoJSON, "next page"})
	}
	if offset > 0 {
		fc.Links = append(fc.Links, Link{link(max(0, offset-limit)), "prev", typeGeoJSON, "previous page"})
	}
	return fc, nil
}

// page is one REST page of the list query q.
func (h *Handlers) page(c *gin.Context, q url.Values, page int) ([]catalog.Sensor, int, error) {
	if page > 10_000_000 {
		return nil, 0, apierr.Invalid("offset", "too large")
	}
	q.Set("page", strconv.Itoa(page))
	ctx, cancel := h.ctx(c)
	defer cancel()
	p, err := h.o.Catalog.Sensors(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	return p.Sensors, p.Total, nil
}

// item serves GET /collections/sensors/items/{id}: one feature, by UUID (the feature id)
// or external id, 404 otherwise.
func (h *Handlers) item(c *gin.Context) {
	if c.Param("collection") != SensorsCollection {
		h.locationsOr404(c)
		return
	}
	if err := metaParams(c); err != nil {
		fail(c, err)
		return
	}
	ctx, cancel := h.ctx(c)
	defer cancel()
	s, err := h.o.Catalog.Sensor(ctx, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	f := feature(s)
	b := base(c)
	f.Links = []Link{
		{b + "/collections/" + SensorsCollection + "/items/" + s.ID.String(), "self", typeGeoJSON, ""},
		{b + "/collections/" + SensorsCollection, "collection", typeJSON, ""},
	}
	write(c, typeGeoJSON, f)
}
