package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/canon"
)

// Resource URIs of the catalog scope: an agent can read the vocabulary (the canonical
// parameters with their units) and a sensor's metadata without spending a tool call, and
// a client can pin them into the model's context.
const (
	ParametersURI     = "sensorgate://parameters"
	SensorURITemplate = "sensorgate://sensors/{sensor_id}"
	sensorURIPrefix   = "sensorgate://sensors/"
)

// sensorResource is the metadata a sensor resource holds: the record, its parameters with
// units, and its freshness from the catalog (no live call to the service).
type sensorResource struct {
	Sensor     sensorRecord    `json:"sensor"`
	Parameters []parameterInfo `json:"parameters"`
	Freshness  freshness       `json:"freshness"`
}

func (h *Handler) addCatalogResources(ts *toolSet) {
	ts.resources = true
	ts.srv.AddResource(&sdk.Resource{
		URI:         ParametersURI,
		Name:        "parameters",
		Title:       "Canonical parameters",
		Description: "Every canonical parameter id with its unit and meaning: the vocabulary of parameters, data_types and every measurement.",
		MIMEType:    "application/json",
	}, func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		out := []parameterInfo{}
		for _, p := range canon.Parameters() {
			out = append(out, parameterInfo{ID: p.ID, Unit: p.Unit, Meaning: p.Meaning})
		}
		return jsonResource(ParametersURI, out)
	})
	ts.srv.AddResourceTemplate(&sdk.ResourceTemplate{
		URITemplate: SensorURITemplate,
		Name:        "sensor",
		Title:       "Sensor metadata",
		Description: "One sensor's record, the parameters it measures with their units, and the freshness of its newest reading; {sensor_id} is the UUID or the provider's external id.",
		MIMEType:    "application/json",
	}, func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		uri := req.Params.URI
		cc, ok := callCtxOf(ctx)
		if !ok {
			return nil, errors.New("no call context")
		}
		id, _ := strings.CutPrefix(uri, sensorURIPrefix)
		s, err := cc.h.resolveSensor(ctx, "resources/read", "sensor_id", id)
		if err != nil {
			if errors.Is(err, catalog.ErrNotFound) || strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "not a sensor id") || strings.Contains(err.Error(), "is required") {
				return nil, sdk.ResourceNotFoundError(uri)
			}
			cc.h.log.ErrorContext(ctx, "mcp resource failed", "uri", uri, "err", err)
			return nil, errors.New("internal error while reading the sensor")
		}
		out := sensorResource{Sensor: recordOf(s), Parameters: []parameterInfo{}, Freshness: newFreshness(s.LastReadingAt, s.ReportingIntervalS, cc.now)}
		for _, d := range s.DataTypes {
			if p, ok := canon.Lookup(d); ok {
				out.Parameters = append(out.Parameters, parameterInfo{ID: p.ID, Unit: p.Unit, Meaning: p.Meaning})
			}
		}
		return jsonResource(uri, out)
	})
}

func jsonResource(uri string, v any) (*sdk.ReadResourceResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}
