package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/services/runtime/mcpserver"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// Keys of params._meta the gateway injects at sensor and project scope (docs/api-decisions.md "MCP").
const (
	MetaSensorID         = mcpserver.MetaSensorID
	MetaSensorExternalID = mcpserver.MetaSensorExternalID
	MetaFeedSlug         = mcpserver.MetaFeedSlug
)

// userError is a tool failure whose message is meant for the caller as is, with the API
// error code (pkg/apierr) of the one error shape every MCP scope answers with.
type userError struct{ msg, code string }

func (e *userError) Error() string { return e.msg }

// userErrorf is a bad-argument failure (invalid_parameter).
func userErrorf(format string, args ...any) error {
	return &userError{msg: fmt.Sprintf(format, args...), code: apierr.InvalidParameter}
}

// codedErrorf is a failure with another API error code (sensor_not_found, no_readings).
func codedErrorf(code, format string, args ...any) error {
	return &userError{msg: fmt.Sprintf(format, args...), code: code}
}

// Target names the station a tool acts on: sensor_id (the vocabulary of every MCP scope
// and of REST), or the deprecated station_id, which keeps working for one release.
type Target struct {
	SensorID  string `json:"sensor_id,omitempty"`
	StationID string `json:"station_id,omitempty"`
}

// arg returns the station argument the caller gave and its name ("" when none).
func (t Target) arg() (string, string, error) {
	s, st := strings.TrimSpace(t.SensorID), strings.TrimSpace(t.StationID)
	switch {
	case s != "" && st != "" && s != st:
		return "", "", userErrorf("station_id is the deprecated name of sensor_id; give one of them")
	case s != "":
		return s, "sensor_id", nil
	case st != "":
		return st, "station_id", nil
	}
	return "", "", nil
}

// clientError turns a handler error into the message of an isError result: user errors
// verbatim, a deadline as a timeout, anything else logged and reported without internals.
func (ts *toolset) clientError(ctx context.Context, tool string, err error) error {
	var ue *userError
	switch {
	case errors.As(err, &ue):
		return ue
	case errors.Is(err, context.DeadlineExceeded):
		ts.log.WarnContext(ctx, "mcp tool timed out", "tool", tool, "err", err)
		return codedErrorf(apierr.UpstreamTimeout, "%s timed out after %s reading the readings store; try again or ask for less data", tool, ts.timeout)
	case errors.Is(err, context.Canceled):
		return codedErrorf(apierr.UpstreamUnavailable, "%s was cancelled", tool)
	default:
		ts.log.ErrorContext(ctx, "mcp tool failed", "tool", tool, "err", err)
		return codedErrorf(apierr.Internal, "%s failed: the readings store of service %q did not answer; try again", tool, ts.service)
	}
}

// metaString returns params._meta[key] when it is a non-empty string.
func metaString(req *mcp.CallToolRequest, key string) string {
	if req == nil || req.Params == nil || req.Params.Meta == nil {
		return ""
	}
	s, _ := req.Params.Meta[key].(string)
	return strings.TrimSpace(s)
}

// stationRef names the station argument of a call and where it came from, so an error can
// say which input was wrong.
type stationRef struct {
	id   string
	from string
}

// pickStation chooses the station of a call: the argument, else the sensor context the
// gateway injected in params._meta.
func pickStation(req *mcp.CallToolRequest, t Target) (stationRef, error) {
	arg, name, err := t.arg()
	if err != nil {
		return stationRef{}, err
	}
	if arg != "" {
		return stationRef{arg, name}, nil
	}
	if s := metaString(req, MetaSensorExternalID); s != "" {
		return stationRef{s, "params._meta." + MetaSensorExternalID}, nil
	}
	if s := metaString(req, MetaSensorID); s != "" {
		return stationRef{s, "params._meta." + MetaSensorID}, nil
	}
	return stationRef{}, userErrorf("no station given: pass sensor_id (a sensor UUID or an external id such as those listed by the list_stations tool), or call through the gateway's sensor endpoint, which sets params._meta.%s", MetaSensorExternalID)
}

// station resolves the station of a call: by external id, or by sensor UUID
// (ids.Sensor(service, external id)) when the value is one.
func (ts *toolset) station(ctx context.Context, req *mcp.CallToolRequest, arg Target) (contract.Station, error) {
	ref, err := pickStation(req, arg)
	if err != nil {
		return contract.Station{}, err
	}
	return ts.lookup(ctx, ref)
}

func (ts *toolset) lookup(ctx context.Context, ref stationRef) (contract.Station, error) {
	if err := contract.ValidExternalID(ref.id); err != nil {
		return contract.Station{}, userErrorf("%s %q is not a valid station id: %v", ref.from, apierr.Clip(ref.id, 80), err)
	}
	st, err := ts.store.Station(ctx, ref.id)
	if err == nil {
		return st, nil
	}
	if !errors.Is(err, store.ErrStationNotFound) {
		return contract.Station{}, fmt.Errorf("station %q: %w", ref.id, err)
	}
	if u, perr := uuid.Parse(ref.id); perr == nil {
		st, ok, err := ts.bySensorID(ctx, u)
		if err != nil {
			return contract.Station{}, err
		}
		if ok {
			return st, nil
		}
	}
	return contract.Station{}, codedErrorf(apierr.SensorNotFound, "station %q (from %s) not found in service %q; use %s to find station ids", apierr.Clip(ref.id, 80), ref.from, ts.service, ts.name(ToolListStations))
}

// bySensorID finds the station whose sensor id is u. Stations are few per service (tens
// to thousands), so a scan is cheaper than keeping a second index in the store.
func (ts *toolset) bySensorID(ctx context.Context, u uuid.UUID) (contract.Station, bool, error) {
	all, _, err := ts.store.Stations(ctx, store.StationFilter{})
	if err != nil {
		return contract.Station{}, false, fmt.Errorf("list stations: %w", err)
	}
	for _, st := range all {
		if ids.Sensor(ts.service, st.ExternalID) == u {
			return st, true, nil
		}
	}
	return contract.Station{}, false, nil
}
