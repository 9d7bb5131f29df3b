package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	sdkrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/latest"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
)

// Resource URIs of the catalog scope: an agent can read the vocabulary (the canonical
// parameters with their units) and a sensor's metadata without spending a tool call, and
// a client can pin them into the model's context.
//
// The latest readings of a sensor and of an area, and the key's alert events, are
// resources that a 2026-07-28 client can subscribe to (listen.go).
const (
	ParametersURI           = "sensorgate://parameters"
	SensorURITemplate       = "sensorgate://sensors/{sensor_id}"
	SensorLatestURITemplate = "sensorgate://sensors/{sensor_id}/latest"
	AreaLatestURI           = "sensorgate://readings/latest"
	// AreaLatestURITemplate takes the query of GET /api/v1/readings/latest.
	AreaLatestURITemplate = AreaLatestURI + "{?min_lat,min_lon,max_lat,max_lon,lat,lon,radius_km,provider,service,sensor_type,data_types,sensor_ids,parameter,max_age,qc,search,limit,page}"
	AlertEventsURI        = "sensorgate://alerts/events"
	sensorURIPrefix       = "sensorgate://sensors/"
	latestSuffix          = "/latest"
	// recentAlertEvents is how many events the alert events resource holds.
	recentAlertEvents = 50
)

// sensorResource is the metadata a sensor resource holds: the record, its parameters with
// units, and its freshness from the catalog (no live call to the service).
type sensorResource struct {
	Sensor     sensorRecord    `json:"sensor"`
	Parameters []parameterInfo `json:"parameters"`
	Freshness  freshness       `json:"freshness"`
}

func (h *Handler) addCatalogResources(ts *toolSet) {
	ts.addResource(&sdk.Resource{
		URI:         ParametersURI,
		Name:        "parameters",
		Title:       "Canonical parameters",
		Description: "Every canonical parameter id with its unit and meaning: the vocabulary of parameters, data_types and every measurement.",
		MIMEType:    "application/json",
	}, func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		out := []parameterInfo{}
		for _, p := range canon.Parameters() {
			out = append(out, infoOf(p))
		}
		return jsonResource(ParametersURI, out)
	})
	ts.addTemplate(&sdk.ResourceTemplate{
		URITemplate: SensorURITemplate,
		Name:        "sensor",
		Title:       "Sensor metadata",
		Description: "One sensor's record, the parameters it measures with their units, and the freshness of its newest reading; {sensor_id} is the UUID or the provider's external id.",
		MIMEType:    "application/json",
	}, sensorURIPrefix, readSensor)
}

// readSensor serves both sensor templates, the metadata and the latest reading: both
// begin with sensorURIPrefix, so the first template matches a .../{sensor_id}/latest URI.
func readSensor(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	cc, ok := callCtxOf(ctx)
	if !ok {
		return nil, errors.New("no call context")
	}
	id, _ := strings.CutPrefix(uri, sensorURIPrefix)
	id, isLatest := strings.CutSuffix(id, latestSuffix)
	s, err := cc.h.resolveSensor(ctx, "resources/read", "sensor_id", id)
	if err != nil {
		if errors.Is(err, catalog.ErrNotFound) || strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "not a sensor id") || strings.Contains(err.Error(), "is required") {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		cc.h.log.ErrorContext(ctx, "mcp resource failed", "uri", uri, "err", err)
		return nil, errors.New("internal error while reading the sensor")
	}
	if isLatest {
		return cc.h.readLatest(ctx, uri, s)
	}
	out := sensorResource{Sensor: recordOf(s), Parameters: parametersOf(s), Freshness: newFreshness(s.LastReadingAt, s.ReportingIntervalS, cc.now)}
	return jsonResource(uri, out)
}

// addLiveResources adds the subscribable readings resources: a sensor's latest reading
// and an area's latest readings.
func (h *Handler) addLiveResources(ts *toolSet) {
	ts.addTemplate(&sdk.ResourceTemplate{
		URITemplate: SensorLatestURITemplate,
		Name:        "sensor-latest",
		Title:       "Latest reading of a sensor",
		Description: "The sensor's newest reading as GET /api/v1/sensors/{id}/readings/latest answers it; subscribe (subscriptions/listen) to be told when a new one is stored.",
		MIMEType:    "application/json",
	}, sensorURIPrefix, readSensor)
	if h.area != nil {
		read := func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return h.readArea(ctx, req.Params.URI)
		}
		ts.addResource(&sdk.Resource{
			URI:         AreaLatestURI,
			Name:        "area-latest",
			Title:       "Latest readings of every sensor",
			Description: "The newest reading of every sensor, as GET /api/v1/readings/latest answers it; the template narrows it to an area. Subscribe to be told when a sensor of it stores a reading.",
			MIMEType:    "application/json",
		}, read)
		ts.addTemplate(&sdk.ResourceTemplate{
			URITemplate: AreaLatestURITemplate,
			Name:        "area-latest-query",
			Title:       "Latest readings in an area",
			Description: "The newest reading of every sensor the query selects: the query parameters and rules of GET /api/v1/readings/latest (bbox as min_lat..max_lon, a radius as lat, lon, radius_km). Subscribe to be told when one of those sensors stores a reading.",
			MIMEType:    "application/json",
		}, AreaLatestURI+"?", read)
	}
}

// readLatest is the sensor-latest resource: the readings path's answer as REST gives it.
func (h *Handler) readLatest(ctx context.Context, uri string, s catalog.Sensor) (*sdk.ReadResourceResult, error) {
	resp, err := h.readings.Answer(ctx, contract.RouteLatest, s.ID.String(), "")
	if err != nil {
		return nil, h.resourceError(ctx, uri, err)
	}
	if resp.Status != http.StatusOK {
		var e apierr.Error
		if json.Unmarshal(resp.Body, &e) != nil || e.Code == "" {
			return nil, h.resourceError(ctx, uri, apierr.New(apierr.UpstreamBadResponse, "service %s gave an answer the gateway does not pass on", s.ServiceID))
		}
		return nil, h.resourceError(ctx, uri, &e)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(resp.Body)}}}, nil
}

// readArea is the area-latest resource: area latest's answer for the URI's query.
func (h *Handler) readArea(ctx context.Context, uri string) (*sdk.ReadResourceResult, error) {
	rest, _ := strings.CutPrefix(uri, AreaLatestURI)
	if rest != "" && rest[0] != '?' {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	v, err := url.ParseQuery(strings.TrimPrefix(rest, "?"))
	if err != nil {
		return nil, h.resourceError(ctx, uri, apierr.Invalid("uri", "the query is not a URL query: %v", err))
	}
	q, err := latest.ParseArea(v, latest.MaxLimit)
	if err != nil {
		return nil, h.resourceError(ctx, uri, err)
	}
	ans, err := h.area.Answer(ctx, q)
	if err != nil {
		return nil, h.resourceError(ctx, uri, err)
	}
	return jsonResource(uri, ans)
}

// readAlertEvents is the alert events resource: the caller's key's newest events.
func (h *Handler) readAlertEvents(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	id, ok := auth.FromContext(ctx)
	if !ok {
		return nil, h.resourceError(ctx, req.Params.URI, apierr.New(apierr.MissingAPIKey, "the alert events belong to an API key: send x-api-key"))
	}
	evs, err := h.alerts.Store.Recent(ctx, id.KeyIDText, recentAlertEvents)
	if err != nil {
		return nil, h.resourceError(ctx, req.Params.URI, err)
	}
	return jsonResource(req.Params.URI, map[string]any{"events": evs})
}

// resourceError is a failed read as the client sees it: the API error's message and
// code (an internal one logged and not shown).
func (h *Handler) resourceError(ctx context.Context, uri string, err error) error {
	e := apierr.From(asAPIError(err))
	if e.Code == apierr.Internal {
		h.log.ErrorContext(ctx, "mcp resource failed", "uri", clip(uri, 200), "err", err)
	}
	data, _ := json.Marshal(e) // two strings: it cannot fail
	return &sdkrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Message + " (" + e.Code + ")", Data: data}
}

func jsonResource(uri string, v any) (*sdk.ReadResourceResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}
