package latest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/ginerr"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
	"github.com/sensorgate/sensorgate/pkg/settings"
)

// DefaultTimeout bounds each service's batched call: a slower service is reported
// unavailable rather than holding the answer.
const DefaultTimeout = 2 * time.Second

// BatchClient is the part of a service client area latest calls (contract.Client).
type BatchClient interface {
	LatestBatch(ctx context.Context, externalIDs []string, qc contract.QCFilter) (contract.LatestBatchResponse, error)
}

// Options configure a Handler.
type Options struct {
	Store Lister
	// Services are the clients of the configured services by id.
	Services map[string]BatchClient
	// Timeout bounds each service's call (default DefaultTimeout).
	Timeout time.Duration
	// QueryTimeout bounds the catalog selection (default catalog.QueryTimeout).
	QueryTimeout time.Duration
	Now          func() time.Time
	Logger       *slog.Logger
}

// Handler answers area latest.
type Handler struct{ o Options }

// New returns the handler.
func New(o Options) *Handler {
	settings.Default(&o.Timeout, DefaultTimeout)
	settings.Default(&o.QueryTimeout, catalog.QueryTimeout)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{o: o}
}

// Item is one sensor of an area-latest answer (docs/api-decisions.md). Timestamp and
// AgeSeconds are null for a sensor that never reported (then Stale is true). An
// Unavailable sensor's service did not answer: its timestamp is the catalog's last known
// reading time (from the last sync) and Measurements is null.
type Item struct {
	SensorID                string          `json:"sensor_id"`
	ExternalID              string          `json:"external_id"`
	Name                    string          `json:"name"`
	Latitude                *float64        `json:"latitude"`
	Longitude               *float64        `json:"longitude"`
	ServiceID               string          `json:"service_id"`
	Timestamp               *contract.Time  `json:"timestamp"`
	AgeSeconds              *int64          `json:"age_seconds"`
	ExpectedIntervalSeconds int64           `json:"expected_interval_seconds"`
	StaleAfterSeconds       int64           `json:"stale_after_seconds"`
	Stale                   bool            `json:"stale"`
	Unavailable             bool            `json:"unavailable"`
	Measurements            json.RawMessage `json:"measurements"`
}

// Warning names a service whose sensors are unavailable in this answer, and why (an
// apierr code: upstream_timeout, upstream_unavailable).
type Warning struct {
	ServiceID string `json:"service_id"`
	Code      string `json:"code"`
	Message   string `json:"message"`
}

// Answer is the body of area latest.
type Answer struct {
	Items    []Item    `json:"items"`
	Warnings []Warning `json:"warnings"`
	// MaxAgeSeconds is the request's max_age, null when the sensors' own intervals apply.
	MaxAgeSeconds *int64              `json:"max_age_seconds"`
	ServerTime    contract.Time       `json:"server_time"`
	Pagination    contract.Pagination `json:"pagination"`
}

// Serve is the Gin handler of GET /api/v1/readings/latest, in JSON, CSV, NDJSON or
// GeoJSON (format= or Accept, package formats).
func (h *Handler) Serve(c *gin.Context) {
	f, err := formats.Negotiate(c.Request.URL.Query(), c.GetHeader("Accept"), formats.JSON, formats.CSV, formats.NDJSON, formats.GeoJSON)
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	q, err := ParseArea(c.Request.URL.Query(), MaxLimit)
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	ans, err := h.Answer(c.Request.Context(), q)
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	if f == formats.JSON {
		body, err := appendAnswer(make([]byte, 0, answerSize(&ans)), &ans)
		if err != nil {
			ginerr.Fail(c, fmt.Errorf("area latest: encode: %w", err))
			return
		}
		c.Header("Vary", "Accept")
		c.Header("Content-Length", strconv.Itoa(len(body))) // else chunked over 2 KiB
		c.Data(http.StatusOK, formats.TypeJSON, body)
		return
	}
	formats.SetHeaders(c.Writer.Header(), f, "latest")
	formats.SetPaging(c.Writer.Header(), ans.Pagination.Total, formats.NextPage(c.Request.URL, q.Page, q.Limit, ans.Pagination.Total))
	if len(ans.Warnings) > 0 {
		// The other formats have no place for warnings: a header names the services.
		var ws []string
		for _, w := range ans.Warnings {
			ws = append(ws, w.ServiceID+"="+w.Code)
		}
		c.Header("X-Unavailable-Services", strings.Join(ws, ","))
	}
	c.Status(http.StatusOK)
	if err := encode(c.Writer, f, ans); err != nil {
		h.o.Logger.WarnContext(c.Request.Context(), "area latest: write", "format", f, "err", err)
	}
}

// csvHeader is area latest in CSV: long form, one row per measurement (a sensor without
// measurements has one row with the measurement columns empty).
var csvHeader = []string{"sensor_id", "external_id", "name", "service_id", "latitude", "longitude", "timestamp", "age_seconds",
	"stale_after_seconds", "stale", "unavailable", "parameter", "value", "unit", "value_original", "unit_original"}

// encode writes ans in format f (not JSON).
func encode(w io.Writer, f string, ans Answer) error {
	switch f {
	case formats.NDJSON:
		n := formats.NewNDJSON(w)
		for i := range ans.Items {
			if err := n.Value(ans.Items[i]); err != nil {
				return err
			}
		}
		return n.Flush()
	case formats.CSV:
		cw, err := formats.NewCSV(w, csvHeader)
		if err != nil {
			return err
		}
		for _, it := range ans.Items {
			ts, age := "", ""
			if it.Timestamp != nil {
				ts = contract.FormatTime(it.Timestamp.Time)
			}
			if it.AgeSeconds != nil {
				age = strconv.FormatInt(*it.AgeSeconds, 10)
			}
			head := []string{it.SensorID, it.ExternalID, it.Name, it.ServiceID, formats.OptFloat(it.Latitude), formats.OptFloat(it.Longitude),
				ts, age, strconv.FormatInt(it.StaleAfterSeconds, 10), strconv.FormatBool(it.Stale), strconv.FormatBool(it.Unavailable)}
			ms := measurements(it.Measurements)
			if len(ms) == 0 {
				if err := cw.Row(append(head, "", "", "", "", "")); err != nil {
					return err
				}
			}
			for _, m := range ms {
				if err := cw.Row(append(head[:len(head):len(head)], m.Parameter, formats.Float(m.Value), m.Unit, formats.Float(m.ValueOriginal), m.UnitOriginal)); err != nil {
					return err
				}
			}
		}
		return cw.Flush()
	default: // GeoJSON: one Point Feature per sensor, its fields and one property per parameter
		g, err := formats.NewGeoJSON(w)
		if err != nil {
			return err
		}
		for _, it := range ans.Items {
			var ts any
			if it.Timestamp != nil {
				ts = contract.FormatTime(it.Timestamp.Time)
			}
			props := formats.ReadingProperties("", measurements(it.Measurements), map[string]any{
				"sensor_id": it.SensorID, "external_id": it.ExternalID, "name": it.Name, "service_id": it.ServiceID,
				"age_seconds": it.AgeSeconds, "expected_interval_seconds": it.ExpectedIntervalSeconds,
				"stale_after_seconds": it.StaleAfterSeconds, "stale": it.Stale, "unavailable": it.Unavailable})
			props["timestamp"] = ts
			if err := g.Feature(formats.Feature{ID: it.SensorID, Lon: it.Longitude, Lat: it.Latitude, Properties: props}); err != nil {
				return err
			}
		}
		return g.Close(map[string]any{"pagination": ans.Pagination, "warnings": ans.Warnings, "server_time": ans.ServerTime})
	}
}

func measurements(raw json.RawMessage) []canon.Measurement {
	var ms []canon.Measurement
	_ = json.Unmarshal(raw, &ms)
	return ms
}

// Answer selects the sensors of q's page, asks their services in parallel and merges.
// Exported for the MCP tool latest_in_area, which must give the same answer.
func (h *Handler) Answer(ctx context.Context, q Area) (Answer, error) {
	qctx, cancel := context.WithTimeout(ctx, h.o.QueryTimeout)
	sensors, total, err := Select(qctx, h.o.Store, q.Filter, (q.Page-1)*q.Limit, q.Limit)
	cancel()
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return Answer{}, ae
		}
		return Answer{}, err
	}
	ans := Answer{Items: make([]Item, len(sensors)), Warnings: []Warning{}, Pagination: contract.NewPagination(q.Page, q.Limit, total)}
	if q.Rule.HasMaxAge {
		s := int64(q.Rule.MaxAge / time.Second)
		ans.MaxAgeSeconds = &s
	}

	// One batched call per service, all at once.
	byService := map[string][]int{}
	for i, s := range sensors {
		byService[s.ServiceID] = append(byService[s.ServiceID], i)
	}
	type result struct {
		service string
		resp    contract.LatestBatchResponse
		err     error
	}
	results := make(chan result, len(byService))
	var wg sync.WaitGroup
	for svc, idx := range byService {
		client, ok := h.o.Services[svc]
		if !ok {
			results <- result{service: svc, err: errNotConfigured}
			continue
		}
		ids := make([]string, len(idx))
		for j, i := range idx {
			ids[j] = sensors[i].ExternalID
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, h.o.Timeout)
			defer cancel()
			resp, err := client.LatestBatch(cctx, ids, q.QC)
			if err != nil && ctx.Err() == nil && cctx.Err() != nil {
				err = fmt.Errorf("%w: %w", contract.ErrTimeout, err)
			}
			results <- result{service: svc, resp: resp, err: err}
		}()
	}
	wg.Wait()
	close(results)
	if err := ctx.Err(); err != nil {
		return Answer{}, err // the client is gone
	}

	now := h.o.Now()
	for r := range results {
		idx := byService[r.service]
		if r.err != nil {
			w := warning(r.service, r.err)
			h.o.Logger.WarnContext(ctx, "area latest: service unavailable", "service", r.service, "code", w.Code, "err", r.err)
			ans.Warnings = append(ans.Warnings, w)
			last := h.lastReadings(ctx, sensors, idx)
			for _, i := range idx {
				var ts *time.Time
				if t, ok := last[sensors[i].ID]; ok {
					ts = &t
				}
				ans.Items[i] = h.item(&sensors[i], ts, 0, nil, q, now)
				ans.Items[i].Unavailable = true
			}
			continue
		}
		got := make(map[string]*contract.LatestItem, len(r.resp.Items))
		for k := range r.resp.Items {
			it := &r.resp.Items[k]
			got[it.ExternalID] = it
		}
		for _, i := range idx {
			s := &sensors[i]
			it, ok := got[s.ExternalID]
			if !ok {
				// The catalog knows the sensor, its service no longer does: nothing reported.
				ans.Items[i] = h.item(s, nil, 0, json.RawMessage("[]"), q, now)
				continue
			}
			var ts *time.Time
			if it.Timestamp != nil {
				ts = &it.Timestamp.Time
			}
			ans.Items[i] = h.item(s, ts, it.ReportingIntervalS, keepParameters(it.Measurements, q.Parameters), q, now)
		}
	}
	sortWarnings(ans.Warnings)
	ans.ServerTime = contract.Time{Time: now}
	return ans, nil
}

var errNotConfigured = errors.New("service not configured on this gateway")

// lastReadings reads the catalog's last known reading times of sensors[idx], those of a
// service that did not answer (the selection does not carry them: it is cached per
// catalog generation, and a new last reading does not make a new generation). When the
// catalog cannot say either, the sensors have no timestamp (so they are stale).
func (h *Handler) lastReadings(ctx context.Context, sensors []catalog.Sensor, idx []int) map[uuid.UUID]time.Time {
	ids := make([]uuid.UUID, len(idx))
	for j, i := range idx {
		ids[j] = sensors[i].ID
	}
	qctx, cancel := context.WithTimeout(ctx, h.o.QueryTimeout)
	defer cancel()
	last, err := h.o.Store.LastReadingTimes(qctx, ids)
	if err != nil {
		h.o.Logger.WarnContext(ctx, "area latest: last reading times of unavailable sensors", "err", err)
	}
	return last
}

// item builds one answer item; intervalS from the service wins over the catalog's.
func (h *Handler) item(s *catalog.Sensor, ts *time.Time, intervalS int, meas json.RawMessage, q Area, now time.Time) Item {
	settings.Default(&intervalS, s.ReportingIntervalS)
	v := q.Rule.Assess(ts, intervalS, now)
	it := Item{SensorID: s.ID.String(), ExternalID: s.ExternalID, Name: s.Name, Latitude: s.Latitude, Longitude: s.Longitude,
		ServiceID: s.ServiceID, AgeSeconds: v.AgeSeconds, ExpectedIntervalSeconds: v.ExpectedIntervalSeconds,
		StaleAfterSeconds: v.StaleAfterSeconds, Stale: v.Stale, Measurements: meas}
	if ts != nil && !ts.IsZero() {
		it.Timestamp = &contract.Time{Time: *ts}
	}
	return it
}

// warning classifies a service failure.
func warning(service string, err error) Warning {
	switch {
	case errors.Is(err, errNotConfigured):
		return Warning{ServiceID: service, Code: apierr.UpstreamUnavailable, Message: "the service is not configured on this gateway"}
	case errors.Is(err, contract.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return Warning{ServiceID: service, Code: apierr.UpstreamTimeout, Message: "the service did not answer in time"}
	default:
		return Warning{ServiceID: service, Code: apierr.UpstreamUnavailable, Message: "the service could not be reached or failed"}
	}
}

// keepParameters reduces a measurements array to the parameters asked for (all when
// none), keeping each kept measurement's bytes as the service sent them.
func keepParameters(meas json.RawMessage, params []string) json.RawMessage {
	if len(params) == 0 || len(meas) == 0 {
		return meas
	}
	var items []json.RawMessage
	if json.Unmarshal(meas, &items) != nil {
		return meas
	}
	keep := items[:0]
	for _, m := range items {
		var p struct {
			Parameter string `json:"parameter"`
		}
		if json.Unmarshal(m, &p) != nil {
			continue
		}
		for _, want := range params {
			if p.Parameter == want {
				keep = append(keep, m)
				break
			}
		}
	}
	out, err := json.Marshal(keep)
	if err != nil {
		return meas
	}
	return out
}

func sortWarnings(ws []Warning) {
	slices.SortFunc(ws, func(a, b Warning) int { return strings.Compare(a.ServiceID, b.ServiceID) })
}
