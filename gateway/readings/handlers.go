// Package readings answers a sensor's readings for REST and MCP alike: GET
// /sensors/:id/readings/latest, /readings and /readings/aggregate through one path (Answer)
// that resolves the sensor, asks its service through its contract.Client, keeps the
// answer a short while (Cache) and coalesces identical misses; and /services/:id/health.
// The service's JSON is passed through unchanged.
package readings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/etag"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// ResolveFunc finds the sensor a path :id names (a UUID or an external id), returning
// *apierr.Error for a malformed id (400) or an unknown sensor (404 sensor_not_found);
// the gateway passes its one cached, coalescing resolver (catalog.Resolver.Resolve).
type ResolveFunc func(ctx context.Context, ref string) (catalog.Sensor, error)

// ErrorFunc renders an error on a Gin request and aborts it.
type ErrorFunc func(c *gin.Context, err error)

// Handlers answer the proxied endpoints.
type Handlers struct {
	clients map[string]*contract.Client
	cache   *Cache
	resolve ResolveFunc
	fail    ErrorFunc
	log     *slog.Logger
	now     func() time.Time
	// cacheControlV is the Cache-Control of a 200, computed once from the TTL.
	cacheControlV []string
	// noStoreV is the Cache-Control of answers that are not to be kept; both are set as
	// ready slices, without canonicalizing the header name on every request.
	noStoreV []string
}

// HandlerOptions configure Handlers; only Clients, Cache and Resolve are required.
type HandlerOptions struct {
	// Clients are the clients of the services, by id.
	Clients map[string]*contract.Client
	Cache   *Cache
	Resolve ResolveFunc
	// Error renders failures; the default writes the apierr JSON shape and logs internal
	// errors. The gateway passes its one error renderer.
	Error  ErrorFunc
	Logger *slog.Logger
	Now    func() time.Time
}

// NewHandlers returns the handlers.
func NewHandlers(o HandlerOptions) (*Handlers, error) {
	if o.Clients == nil || o.Cache == nil || o.Resolve == nil {
		return nil, errors.New("readings: NewHandlers needs Clients, Cache and Resolve")
	}
	h := &Handlers{clients: o.Clients, cache: o.Cache, resolve: o.Resolve, fail: o.Error, log: o.Logger, now: o.Now}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.fail == nil {
		h.fail = h.writeError
	}
	// Answers are per caller (every request carries an API key), so only the client's
	// own cache may keep them, and only for as long as the gateway would.
	h.noStoreV = []string{"no-store"}
	h.cacheControlV = []string{"private, max-age=" + strconv.Itoa(int(o.Cache.TTL()/time.Second))}
	if o.Cache.TTL() < time.Second {
		h.cacheControlV = []string{"private, no-cache"}
	}
	return h, nil
}

// Query parameters passed to the service, all others dropped.
var (
	latestParams   = []string{"data_format", "lineage", "parameter", "qc"}
	readingsParams = []string{"data_format", "days", "limit", "lineage", "page", "parameter", "qc", "revisions", "since", "sort", "until"}
	// aggregateParams leaves out the service's internal source switch.
	aggregateParams = []string{"days", "interval", "lineage", "parameter", "qc", "since", "stats", "tz", "until"}
)

// Route is one of the readings routes: contract.RouteLatest, RouteReadings or
// RouteAggregate.
type Route = contract.Route

// readingsRoute is what differs between the readings routes.
type readingsRoute struct {
	prefix   string   // of its cache keys
	params   []string // query parameters passed to the service, all others dropped
	validate func(url.Values, time.Time) error
	call     func(c *contract.Client, ctx context.Context, externalID, query string) (*contract.Response, error)
}

var readingsRoutes = [...]*readingsRoute{
	contract.RouteLatest: {prefix: contract.RouteLatest.String() + "\x00", params: latestParams,
		validate: func(v url.Values, now time.Time) error { _, err := contract.ParseLatestQuery(v, now); return err },
		call:     (*contract.Client).Latest},
	contract.RouteReadings: {prefix: contract.RouteReadings.String() + "\x00", params: readingsParams,
		validate: func(v url.Values, now time.Time) error { _, err := contract.ParseReadingsQuery(v, now); return err },
		call:     (*contract.Client).Readings},
	contract.RouteAggregate: {prefix: contract.RouteAggregate.String() + "\x00", params: aggregateParams,
		validate: func(v url.Values, now time.Time) error { _, err := contract.ParseAggregateQuery(v, now); return err },
		call:     (*contract.Client).Aggregate},
}

// Latest answers GET /sensors/:id/readings/latest in JSON; readings pages and aggregates
// have more formats, which package render writes from the same Answer.
func (h *Handlers) Latest() gin.HandlerFunc {
	return func(c *gin.Context) {
		route := contract.RouteLatest
		resp, err := h.Answer(c.Request.Context(), route, c.Param("id"), c.Request.URL.RawQuery)
		if err != nil {
			h.fail(c, err)
			return
		}
		status, body := h.Reply(ginHeader(c.Writer.Header()), resp, c.GetHeader("If-None-Match"))
		c.Writer.WriteHeader(status)
		if body != nil {
			_, _ = c.Writer.Write(body)
		}
	}
}

// Answer is the readings answer of route (latest, readings or aggregate) for the sensor
// ref (a path's :id as the client wrote it) and the raw query: from the cache within the
// freshness bound, else from the sensor's service, concurrent identical misses sharing one
// call. REST and MCP both answer through it. Errors are *apierr.Error (400 for a bad id or
// query, 404, 502, 504), or ctx's own when the caller went away.
func (h *Handlers) Answer(ctx context.Context, route Route, ref, rawQuery string) (*contract.Response, error) {
	var rr *readingsRoute
	if route >= 0 && int(route) < len(readingsRoutes) {
		rr = readingsRoutes[route]
	}
	if rr == nil {
		return nil, fmt.Errorf("readings: Answer of route %s, not a readings route", route)
	}
	if !isUUID(ref) {
		if err := contract.ValidExternalID(ref); err != nil {
			return nil, apierr.Invalid("id", "want a sensor UUID or a provider's external id: %v", err)
		}
	}
	// A request repeated byte for byte (the hot case) is answered without parsing its
	// query again: the raw form is only ever stored after it validated once.
	rawKey := rr.prefix + ref + "\x00?" + rawQuery
	if resp, ok := h.cache.Get(rawKey); ok {
		h.cache.hits.Inc()
		return resp, nil
	}
	// As url.URL.Query does, a malformed pair is dropped; the parameters that did parse
	// are validated.
	v, _ := url.ParseQuery(rawQuery)
	if err := rr.validate(v, h.now()); err != nil {
		return nil, err
	}
	fwd := forward(v, rr.params)
	// The key is the id as the client wrote it: a hot sensor is answered without a
	// catalog lookup, within the freshness bound.
	key := rr.prefix + ref + "\x00?" + fwd
	resp, err := h.cache.Do(ctx, key, func(ctx context.Context) (*contract.Response, error) {
		sn, err := h.resolve(ctx, ref)
		if err != nil {
			return nil, err
		}
		if sn.FeedID == nil {
			return nil, apierr.New(apierr.NoFeed, "sensor %q has no feed, so it has no readings", ref)
		}
		sc, ok := h.clients[sn.ServiceID]
		if !ok {
			return nil, apierr.New(apierr.UpstreamUnavailable, "service %q is not configured on this gateway", sn.ServiceID)
		}
		return rr.call(sc, ctx, sn.ExternalID, fwd)
	})
	if err != nil {
		return nil, err
	}
	if rawKey != key {
		h.cache.put(rawKey, resp) // the client's spelling of the query, for its next request
	}
	return resp, nil
}

// isUUID reports the dashed UUID form of a sensor id (docs/spec.md 4); anything else must be a
// valid external id before it goes near an upstream URL.
func isUUID(ref string) bool {
	if len(ref) != 36 {
		return false
	}
	_, err := uuid.Parse(ref)
	return err == nil
}

// forward re-encodes the known parameters in a canonical order, so equal queries share a
// cache entry and nothing else reaches the service. params is sorted, so writing them in
// its order gives url.Values.Encode's output without its map and sort.
func forward(v url.Values, params []string) string {
	var b strings.Builder
	for _, p := range params {
		s := v.Get(p)
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(p))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(s))
	}
	return b.String()
}

// HeaderSetter sets one response header to a ready-made value slice (name in canonical
// form), so that Reply serves both Gin's http.Header and other servers' header types.
type HeaderSetter interface {
	SetHeader(name string, value []string)
}

type ginHeader http.Header

func (g ginHeader) SetHeader(name string, value []string) { g[name] = value }

// Reply sets the headers of an upstream answer (its Content-Type, a validator and, for a
// 200, the freshness the gateway itself applies) and returns the status and body to send:
// the answer as it came, or 304 with no body when ifNoneMatch matches its ETag.
func (h *Handlers) Reply(hd HeaderSetter, r *contract.Response, ifNoneMatch string) (status int, body []byte) {
	hd.SetHeader("Content-Type", r.ContentTypeValue())
	if r.Status != http.StatusOK {
		hd.SetHeader("Cache-Control", h.noStoreV)
		hd.SetHeader("Content-Length", r.ContentLengthValue())
		return r.Status, r.Body
	}
	hd.SetHeader("Cache-Control", h.cacheControlV)
	hd.SetHeader("Etag", r.ETagValue())
	if age := h.now().Sub(r.FetchedAt); age >= time.Second {
		hd.SetHeader("Age", ageValue(int(age/time.Second)))
	}
	if etag.Match(ifNoneMatch, r.ETag) {
		return http.StatusNotModified, nil
	}
	// The length up front: without it net/http sends an answer over 2 KiB chunked, which
	// costs both ends the framing and tells the client less (gzhttp drops it when it
	// compresses).
	hd.SetHeader("Content-Length", r.ContentLengthValue())
	return http.StatusOK, r.Body
}

// ageValues are the Age header values of the freshness bounds the cache allows (at most a
// minute), made once.
var ageValues = func() [][]string {
	v := make([][]string, int(MaxCacheTTL/time.Second)+1)
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}
	}
	return v
}()

func ageValue(s int) []string {
	if s >= 0 && s < len(ageValues) {
		return ageValues[s]
	}
	return []string{strconv.Itoa(s)}
}

// ServiceHealth answers GET /services/:id/health: the service's own health, fetched live,
// or, when it does not answer, 200 with status down from the gateway's probe (docs/api-decisions.md).
func (h *Handlers) ServiceHealth() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.Param("id")
		sc, ok := h.clients[id]
		if !ok {
			h.fail(c, apierr.New(apierr.NotFound, "service %q not found", id))
			return
		}
		c.Header("Cache-Control", "no-store")
		resp, err := sc.HealthAnswer(c.Request.Context())
		if err == nil && resp.Status == http.StatusOK {
			var probe struct {
				ServiceID string `json:"service_id"`
				Status    string `json:"status"`
			}
			if json.Unmarshal(resp.Body, &probe) == nil && probe.Status != "" {
				c.Writer.Header()["Content-Length"] = resp.ContentLengthValue()
				c.Data(http.StatusOK, resp.ContentType, resp.Body)
				return
			}
			err = apierr.New(apierr.UpstreamUnavailable, "service %q answered a health document the gateway cannot read", id)
		}
		if c.Request.Context().Err() != nil {
			c.AbortWithStatus(499)
			return
		}
		detail := "the service did not answer"
		var ae *apierr.Error
		if errors.As(err, &ae) {
			detail = ae.Message
		} else if resp != nil {
			detail = "the service answered HTTP " + strconv.Itoa(resp.Status)
		}
		c.JSON(http.StatusOK, DownHealth(id, h.now(), detail))
	}
}

// ProbeHealth is a Health the gateway writes itself when a service does not answer.
type ProbeHealth struct {
	contract.Health
	// Detail says why the gateway judged the service down.
	Detail string `json:"detail"`
	// Source is "gateway" on a probe the gateway made, to tell it from a service's own.
	Source string `json:"source"`
}

// DownHealth is the health of a service that does not answer.
func DownHealth(serviceID string, at time.Time, detail string) ProbeHealth {
	return ProbeHealth{
		Health: contract.Health{
			ServiceID: serviceID,
			Status:    contract.StatusDown,
			CheckedAt: contract.Time{Time: at.UTC()},
			Store:     contract.StoreHealth{Reachable: false, Error: "unknown: the service did not answer"},
			Providers: []contract.ProviderHealth{},
		},
		Detail: detail,
		Source: "gateway",
	}
}

// writeError is the default ErrorFunc: the apierr shape, internal details to the log only,
// nothing for a client that is gone.
func (h *Handlers) writeError(c *gin.Context, err error) {
	if errors.Is(err, context.Canceled) && c.Request.Context().Err() != nil {
		c.AbortWithStatus(499)
		return
	}
	e := apierr.From(err)
	if e.Code == apierr.Internal {
		h.log.ErrorContext(c.Request.Context(), "internal error", "route", c.FullPath(), "err", err)
	}
	c.Abort()
	apierr.Write(c.Writer, e)
}
