package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/ogc"
	"github.com/sensorgate/sensorgate/gateway/openapi"
	"github.com/sensorgate/sensorgate/gateway/readings"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/covjson"
	"github.com/sensorgate/sensorgate/pkg/formats"
	"github.com/sensorgate/sensorgate/pkg/ttlcache"
)

// The OGC faces (package ogc) ask the catalog and the readings path through small
// interfaces; these adapters point them at what the REST routes call today: the sensor
// list's parser and store call, the one sensor resolver, the readings path with its cache
// (one sensor) and the services' export calls (many sensors, as GET /readings/export
// makes them).

// newOGC returns the OGC routes.
func newOGC(st catalog.Store, resolver *catalog.Resolver, answers *readings.Handlers, clients map[string]*contract.Client, log *slog.Logger) (*ogc.Handlers, error) {
	return ogc.New(ogc.Options{
		Catalog:     &ogcCatalog{st: st, resolver: resolver, services: ttlcache.New[string, []ogc.Service](ogcServicesTTL, 1, 1<<20, func(string, []ogc.Service) int64 { return 1 })},
		Readings:    ogcReadings{answers: answers, clients: clients},
		OpenAPIPath: openapi.PathJSON,
		Logger:      log,
	})
}

// ogcServicesTTL is how long the services' extents are reused: computing them reads
// every sensor of the catalog, and a catalog sync moves them rarely.
const ogcServicesTTL = 30 * time.Second

type ogcCatalog struct {
	st       catalog.Store
	resolver *catalog.Resolver
	services *ttlcache.Cache[string, []ogc.Service]
}

var _ ogc.Catalog = (*ogcCatalog)(nil)

// Sensors is GET /api/v1/sensors's query (sensorquery.Parse, Store.ListSensors) with
// service= as the export reads it.
func (o *ogcCatalog) Sensors(ctx context.Context, v url.Values) (catalog.SensorPage, error) {
	q, err := sensorquery.Parse(v)
	if err != nil {
		return catalog.SensorPage{}, err
	}
	q.Filter.ServiceID = strings.TrimSpace(v.Get("service"))
	p, err := o.st.ListSensors(ctx, q.Filter)
	if err != nil {
		return p, catalog.StoreError("list sensors", err)
	}
	return p, nil
}

// Sensor is GET /api/v1/sensors/:id's resolver, the gateway's one.
func (o *ogcCatalog) Sensor(ctx context.Context, ref string) (catalog.Sensor, error) {
	s, err := o.resolver.Resolve(ctx, ref)
	if err != nil {
		return s, catalog.StoreError("sensor", err)
	}
	return s, nil
}

// Services are the services of GET /api/v1/services with the extent and parameters of
// their sensors, reused for ogcServicesTTL.
func (o *ogcCatalog) Services(ctx context.Context) ([]ogc.Service, error) {
	return o.services.GetOrLoad(ctx, "", time.Now(), func(ctx context.Context, _ string) ([]ogc.Service, error) {
		ss, err := o.st.Services(ctx)
		if err != nil {
			return nil, catalog.StoreError("services", err)
		}
		out := make([]ogc.Service, 0, len(ss))
		for _, s := range ss {
			e, err := o.extent(ctx, s.ID)
			if err != nil {
				return nil, err
			}
			e.ID, e.Name, e.Description = s.ID, s.Name, s.Description
			out = append(out, e)
		}
		return out, nil
	})
}

// extent reads every sensor of a service, a page of the list's maximum at a time.
func (o *ogcCatalog) extent(ctx context.Context, service string) (ogc.Service, error) {
	var e ogc.Service
	params := map[string]bool{}
	for page := 1; ; page++ {
		p, err := o.st.ListSensors(ctx, catalog.SensorFilter{ServiceID: service, Page: page, Limit: sensorquery.MaxListLimit})
		if err != nil {
			return e, catalog.StoreError("service extent", err)
		}
		for _, s := range p.Sensors {
			for _, d := range s.DataTypes {
				params[d] = true
			}
			if s.Latitude != nil && s.Longitude != nil {
				x, y := *s.Longitude, *s.Latitude
				if e.BBox == nil {
					e.BBox = &[4]float64{x, y, x, y}
				}
				e.BBox[0], e.BBox[1] = min(e.BBox[0], x), min(e.BBox[1], y)
				e.BBox[2], e.BBox[3] = max(e.BBox[2], x), max(e.BBox[3], y)
			}
			if d := s.DeploymentDate; d != nil && (e.Start == nil || d.Before(*e.Start)) {
				e.Start = d
			}
			if l := s.LastReadingAt; l != nil && (e.End == nil || l.After(*e.End)) {
				e.End = l
			}
		}
		if page*sensorquery.MaxListLimit >= p.Total {
			break
		}
	}
	for p := range params {
		e.Parameters = append(e.Parameters, p)
	}
	slices.Sort(e.Parameters)
	return e, nil
}

type ogcReadings struct {
	answers *readings.Handlers
	clients map[string]*contract.Client
}

var _ ogc.Readings = ogcReadings{}

// maxReadingsPages bounds one sensor's pages through the readings path; a longer series
// is read through the export call instead.
const maxReadingsPages = 20

// Series reads one sensor through the readings path (readings.Handlers.Answer: its
// cache, its coalescing, its validation), pages of contract.MaxReadingsLimit oldest
// first; several sensors, or one whose window holds more than maxReadingsPages pages,
// through one export call to their service.
func (r ogcReadings) Series(ctx context.Context, sensors []catalog.Sensor, w ogc.Window) (map[uuid.UUID][]covjson.Sample, error) {
	if len(sensors) == 1 {
		samples, err := r.pages(ctx, sensors[0], w)
		if !errors.Is(err, errTooManyPages) {
			return map[uuid.UUID][]covjson.Sample{sensors[0].ID: samples}, err
		}
	}
	return r.export(ctx, sensors, w)
}

var errTooManyPages = errors.New("more pages than maxReadingsPages")

func (r ogcReadings) pages(ctx context.Context, sn catalog.Sensor, w ogc.Window) ([]covjson.Sample, error) {
	v := url.Values{"since": {contract.FormatTime(w.Since)}, "until": {contract.FormatTime(w.Until)},
		"limit": {strconv.Itoa(contract.MaxReadingsLimit)}, "sort": {"asc"}}
	if len(w.Parameters) > 0 {
		v.Set("parameter", strings.Join(w.Parameters, ","))
	}
	if !w.QC.All() {
		v.Set("qc", w.QC.String())
	}
	var out []covjson.Sample
	for page := 1; ; page++ {
		if page > maxReadingsPages {
			return nil, errTooManyPages
		}
		v.Set("page", strconv.Itoa(page))
		resp, err := r.answers.Answer(ctx, contract.RouteReadings, sn.ID.String(), v.Encode())
		if err != nil {
			return nil, err
		}
		var body contract.ReadingsResponse
		if err := json.Unmarshal(resp.Body, &body); err != nil {
			return nil, apierr.New(apierr.UpstreamBadResponse, "service %q: readings of %s: %v", sn.ServiceID, sn.ID, err)
		}
		for _, rd := range body.Readings {
			for _, m := range rd.Measurements {
				out = append(out, covjson.Sample{Time: rd.Timestamp.Time, Parameter: m.Parameter, Value: m.Value})
			}
		}
		if page >= body.Pagination.TotalPages || len(body.Readings) == 0 {
			return out, nil
		}
	}
}

// export reads the sensors' readings through their service's export call, one call per
// service, in CSV: a row per measurement, the readings' measurements on consecutive
// rows. CSV rather than NDJSON because a 1,000-sensor day is hundreds of thousands of
// readings and a CSV record costs a fraction of a JSON line to read (docs/ogc.md
// "Speed").
func (r ogcReadings) export(ctx context.Context, sensors []catalog.Sensor, w ogc.Window) (map[uuid.UUID][]covjson.Sample, error) {
	byService := map[string][]catalog.Sensor{}
	for _, s := range sensors {
		byService[s.ServiceID] = append(byService[s.ServiceID], s)
	}
	out := make(map[uuid.UUID][]covjson.Sample, len(sensors))
	q := contract.ExportQuery{Since: w.Since, Until: w.Until, Parameters: w.Parameters, QC: w.QC}
	for service, ss := range byService {
		c, ok := r.clients[service]
		if !ok {
			return nil, apierr.New(apierr.UpstreamUnavailable, "service %q is not configured on this gateway", service)
		}
		ids := make([]string, len(ss))
		byExternal := make(map[string]uuid.UUID, len(ss))
		for i, s := range ss {
			ids[i] = s.ExternalID
			byExternal[s.ExternalID] = s.ID
		}
		if err := exportRows(ctx, c, contract.ExportValues(ids, q, formats.CSV, false), byExternal, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// exportRows reads one service's CSV export (formats.ReadingHeader's columns) into out,
// a sample per row. A field of a record is a slice of the record's line, which it would
// keep alive: parameter names are interned (a service has a few dozen), and a timestamp
// is parsed once for the rows of its reading.
func exportRows(ctx context.Context, c *contract.Client, v url.Values, byExternal map[string]uuid.UUID, out map[uuid.UUID][]covjson.Sample) error {
	resp, err := c.Export(ctx, v)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	params := map[string]string{}
	var (
		curExt, curTime string
		id              uuid.UUID
		known           bool
		ts              time.Time
	)
	err = contract.CSVRecords(resp.Body, func(rec []string) error {
		if len(rec) < 5 {
			return fmt.Errorf("a row of %d fields", len(rec))
		}
		if rec[1] != curExt {
			curExt = strings.Clone(rec[1])
			id, known = byExternal[curExt]
		}
		if !known || rec[4] == "" { // not asked for; a value the source did not give
			return nil
		}
		if rec[2] != curTime {
			var err error
			if ts, err = time.Parse(time.RFC3339, rec[2]); err != nil {
				return fmt.Errorf("timestamp %q: %w", rec[2], err)
			}
			ts, curTime = ts.UTC(), strings.Clone(rec[2])
		}
		value, err := strconv.ParseFloat(rec[4], 64)
		if err != nil {
			return fmt.Errorf("value %q: %w", rec[4], err)
		}
		p, ok := params[rec[3]]
		if !ok {
			p = strings.Clone(rec[3])
			params[p] = p
		}
		out[id] = append(out[id], covjson.Sample{Time: ts, Parameter: p, Value: value})
		return nil
	})
	var failed *contract.ExportFailure
	switch {
	case err == nil:
		return nil
	case errors.As(err, &failed):
		return apierr.New(apierr.UpstreamUnavailable, "a service's export ended early: %s", failed.Message)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return apierr.New(apierr.UpstreamBadResponse, "a service's export: %v", err)
}
