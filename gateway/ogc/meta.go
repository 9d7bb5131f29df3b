package ogc

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/covjson"
)

// SensorsCollection is the Features collection of the catalog.
const SensorsCollection = "sensors"

// Media types of the answers.
const (
	typeJSON    = "application/json"
	typeGeoJSON = "application/geo+json"
	typeOpenAPI = "application/vnd.oai.openapi+json;version=3.1"
)

// Conformance lists the classes served (docs/ogc.md says what each covers here).
var Conformance = []string{
	"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
	"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
	"http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core",
	"http://www.opengis.net/spec/ogcapi-common-2/1.0/conf/collections",
	"http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/core",
	"http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/collections",
	"http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/json",
	"http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/geojson",
	"http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/covjson",
	"http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/queries",
	"http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/position",
	"http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/radius",
	"http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/area",
	"http://www.opengis.net/spec/ogcapi-edr-1/1.1/conf/locations",
}

// Link is an OGC link.
type Link struct {
	Href  string `json:"href"`
	Rel   string `json:"rel"`
	Type  string `json:"type,omitempty"`
	Title string `json:"title,omitempty"`
}

// base is the absolute URL of /api/v1/ogc as the client reached it. The Host header is
// the client's own (the server does not trust forwarding headers).
func base(c *gin.Context) string {
	scheme := "http"
	if c.Request.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.Request.Host + "/api/v1" + Base
}

func origin(c *gin.Context) string {
	scheme := "http"
	if c.Request.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.Request.Host
}

// write answers v as JSON of media type typ (no-cache like the catalog's answers).
func write(c *gin.Context, typ string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Cache-Control", "private, no-cache")
	c.Header("Content-Length", strconv.Itoa(len(b)))
	c.Data(http.StatusOK, typ, b)
}

func (h *Handlers) landing(c *gin.Context) {
	if err := metaParams(c); err != nil {
		fail(c, err)
		return
	}
	b := base(c)
	write(c, typeJSON, gin.H{
		"title":       "sensorgate",
		"description": "Environmental sensors (buoys, weather stations, air-quality monitors) as OGC API - Features (the catalog) and OGC API - EDR (one collection per backing service, in CoverageJSON).",
		"links": []Link{
			{b, "self", typeJSON, "this document"},
			{origin(c) + h.o.OpenAPIPath, "service-desc", typeOpenAPI, "the API definition"},
			{b + "/conformance", "conformance", typeJSON, "conformance classes"},
			{b + "/collections", "data", typeJSON, "collections"},
		},
	})
}

func metaParams(c *gin.Context) error {
	v := c.Request.URL.Query()
	if err := checkParams(v); err != nil {
		return err
	}
	return format(v, "json")
}

func (h *Handlers) conformance(c *gin.Context) {
	if err := metaParams(c); err != nil {
		fail(c, err)
		return
	}
	write(c, typeJSON, gin.H{"conformsTo": Conformance})
}

func (h *Handlers) collections(c *gin.Context) {
	if err := metaParams(c); err != nil {
		fail(c, err)
		return
	}
	ss, err := h.services(c)
	if err != nil {
		fail(c, err)
		return
	}
	b := base(c)
	out := []any{sensorsCollection(b, ss)}
	for _, s := range ss {
		out = append(out, edrCollection(b, s))
	}
	write(c, typeJSON, gin.H{
		"links":       []Link{{b + "/collections", "self", typeJSON, ""}},
		"collections": out,
	})
}

func (h *Handlers) collection(c *gin.Context) {
	if err := metaParams(c); err != nil {
		fail(c, err)
		return
	}
	id := c.Param("collection")
	ss, err := h.services(c)
	if err != nil {
		fail(c, err)
		return
	}
	if id == SensorsCollection {
		write(c, typeJSON, sensorsCollection(base(c), ss))
		return
	}
	s, err := find(ss, id)
	if err != nil {
		fail(c, err)
		return
	}
	write(c, typeJSON, edrCollection(base(c), s))
}

func (h *Handlers) services(c *gin.Context) ([]Service, error) {
	ctx, cancel := h.ctx(c)
	defer cancel()
	return h.o.Catalog.Services(ctx)
}

// service is the EDR collection the path names.
func (h *Handlers) service(c *gin.Context) (Service, error) {
	id := c.Param("collection")
	if id == SensorsCollection {
		return Service{}, apierr.New(apierr.NotFound, "collection %q is a feature collection: its data is at /items; EDR queries are on the service collections", id)
	}
	ss, err := h.services(c)
	if err != nil {
		return Service{}, err
	}
	return find(ss, id)
}

func find(ss []Service, id string) (Service, error) {
	for _, s := range ss {
		if s.ID == id {
			return s, nil
		}
	}
	ids := []string{SensorsCollection}
	for _, s := range ss {
		ids = append(ids, s.ID)
	}
	return Service{}, apierr.New(apierr.NotFound, "collection %q not found; the collections are %v", sensorquery.Clip(id), ids)
}

type extent struct {
	Spatial  spatial   `json:"spatial"`
	Temporal *temporal `json:"temporal,omitempty"`
}

type spatial struct {
	BBox [][4]float64 `json:"bbox"`
	CRS  string       `json:"crs"`
}

type temporal struct {
	Interval [][2]*string `json:"interval"`
	TRS      string       `json:"trs"`
}

// world is the extent when nothing narrower is known.
var world = [4]float64{-180, -90, 180, 90}

func sensorsCollection(b string, ss []Service) any {
	box := world
	first := true
	for _, s := range ss {
		if s.BBox == nil {
			continue
		}
		if first {
			box, first = *s.BBox, false
			continue
		}
		box = [4]float64{min(box[0], s.BBox[0]), min(box[1], s.BBox[1]), max(box[2], s.BBox[2]), max(box[3], s.BBox[3])}
	}
	self := b + "/collections/" + SensorsCollection
	return gin.H{
		"id":          SensorsCollection,
		"title":       "Sensors",
		"description": "Every sensor of the catalog as a point feature; properties are the fields of GET /api/v1/sensors/{id}.",
		"itemType":    "feature",
		"crs":         []string{covjson.CRS84},
		"extent":      extent{Spatial: spatial{BBox: [][4]float64{box}, CRS: covjson.CRS84}},
		"links": []Link{
			{self, "self", typeJSON, ""},
			{self + "/items", "items", typeGeoJSON, "the sensors"},
		},
	}
}

// edrCollection is a service as an EDR collection: its extent, queries and parameters.
func edrCollection(b string, s Service) any {
	box := world
	if s.BBox != nil {
		box = *s.BBox
	}
	ext := extent{Spatial: spatial{BBox: [][4]float64{box}, CRS: covjson.CRS84}}
	if s.Start != nil || s.End != nil {
		var iv [2]*string
		if s.Start != nil {
			t := contract.FormatTime(*s.Start)
			iv[0] = &t
		}
		if s.End != nil {
			t := contract.FormatTime(*s.End)
			iv[1] = &t
		}
		ext.Temporal = &temporal{Interval: [][2]*string{iv}, TRS: "http://www.opengis.net/def/uom/ISO-8601/0/Gregorian"}
	}
	self := b + "/collections/" + s.ID
	query := func(q, title string, extra gin.H) gin.H {
		vars := gin.H{"title": title, "query_type": q, "output_formats": []string{"CoverageJSON"},
			"default_output_format": "CoverageJSON", "crs_details": []gin.H{{"crs": "CRS84", "wkt": crs84WKT}}}
		if q == queryLocations {
			vars["output_formats"] = []string{"CoverageJSON", "GeoJSON"}
		}
		for k, v := range extra {
			vars[k] = v
		}
		return gin.H{"link": gin.H{"href": self + "/" + q, "rel": "data", "title": title, "templated": false, "variables": vars}}
	}
	params := gin.H{}
	for _, p := range s.Parameters {
		params[p] = describe(p)
	}
	return gin.H{
		"id":          s.ID,
		"title":       nonEmpty(s.Name, s.ID),
		"description": s.Description,
		"extent":      ext,
		"crs":         []string{covjson.CRS84},
		"data_queries": gin.H{
			queryPosition:  query(queryPosition, "Sensors within 1 km of a point", nil),
			queryRadius:    query(queryRadius, "Sensors within a radius", gin.H{"within_units": []string{"km", "mi"}}),
			queryArea:      query(queryArea, "Sensors in a polygon", nil),
			queryLocations: query(queryLocations, "Sensors by id", nil),
		},
		"parameter_names": params,
		"output_formats":  []string{"CoverageJSON", "GeoJSON"},
		"links": []Link{
			{self, "self", typeJSON, ""},
			{self + "/locations", "data", typeGeoJSON, "the sensors of " + s.ID},
		},
	}
}

const crs84WKT = `GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],AXIS["Longitude",EAST],AXIS["Latitude",NORTH]]`

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// symbols are the canonical units as symbols (UCUM-like, as CoverageJSON readers show
// them); a unit not listed is its own symbol.
var symbols = map[string]string{
	canon.Celsius: "°C", canon.Percent: "%", canon.Degrees: "°", canon.Dimensionless: "1",
}

// describe is a canonical parameter as a CoverageJSON / EDR parameter.
func describe(id string) covjson.Parameter {
	p, ok := canon.Lookup(id)
	unit, meaning := "", id
	if ok {
		unit, meaning = p.Unit, p.Meaning
	}
	sym := unit
	if s, ok := symbols[unit]; ok {
		sym = s
	}
	return covjson.Parameter{Type: "Parameter", Description: map[string]string{"en": meaning},
		Unit:             covjson.Unit{Label: map[string]string{"en": unit}, Symbol: sym},
		ObservedProperty: covjson.ObservedProperty{ID: id, Label: map[string]string{"en": meaning}}}
}

func describeAll(ids []string) map[string]covjson.Parameter {
	out := make(map[string]covjson.Parameter, len(ids))
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		out[id] = describe(id)
	}
	return out
}
