// Package observation holds what a provider adapter produces from one native payload and
// what the service runtime stores: normalized observations with their raw fragment, station
// metadata, and the rows it rejected with a counted reason.
package observation

import (
	"encoding/json"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// Observation is one station's reading at one time, normalized.
type Observation struct {
	// StationID is the provider's id of the station in its canonical spelling (the
	// sensor's external_id).
	StationID    string
	Time         time.Time
	Measurements []canon.Measurement
	Lat, Lon     *float64
	// Raw is this observation's part of the source payload as clients see it with
	// data_format=raw: the JSON object for JSON sources, {"format", "header", "line"} for
	// text sources.
	Raw json.RawMessage
	// RawFormat names the source format, e.g. "ndbc.realtime2.stdmet" or "nws.observation".
	RawFormat string
}

// Rejection is a row or value that did not land, with a stable reason for counters.
type Rejection struct {
	StationID string
	Line      int    // 1-based line (text) or record index (JSON), 0 when unknown
	Field     string // source field, when one value was rejected and the rest landed
	Reason    string // e.g. out_of_range, unknown_unit, malformed_row, bad_timestamp
	Detail    string
}

// Batch is the result of parsing one payload.
type Batch struct {
	Provider     string
	Observations []Observation
	Stations     []contract.Station
	Rejections   []Rejection
}
