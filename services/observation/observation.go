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
	// Source is the document this reading came from and how authoritative it is, so that
	// the store can rank two readings of one station and time (a quality-controlled NDBC
	// historical file supersedes the realtime file).
	Source Source
}

// Station statuses the services set. A station known from metadata (NDBC's
// activestations.xml, a locations list) that has never had a reading stored is
// never_reported, not active: it is kept out of "active" filters, and becomes active with
// its first stored reading. Simulated stations that stop reporting stay active (staleness
// says so); a source mode's stations are kept apart by its own store (docs/adapters.md).
const (
	StatusActive        = "active"
	StatusNeverReported = "never_reported"
)

// Source ranks of readings: of two readings of one station and time, the higher rank
// supersedes the lower; equal ranks keep the first stored.
const (
	// RankSimulated readings come from a simulator.
	RankSimulated = 0
	// RankPreliminary readings are as the provider first publishes them, before quality
	// control (NDBC realtime2 and latest_obs, NWS, METAR, OpenAQ, AirNow, station APIs).
	RankPreliminary = 1
	// RankQualityControlled readings come from a provider's quality-controlled archive
	// (NDBC historical monthly and annual stdmet files).
	RankQualityControlled = 2
)

// Source says where a reading came from.
type Source struct {
	// Kind names the kind of document, e.g. "ndbc.realtime2", "ndbc.historical",
	// "ndbc.latest_obs", "airnow.data"; set by the adapter.
	Kind string `json:"kind"`
	// Rank is one of the Rank constants; set by the adapter (RankPreliminary unless it
	// knows better). The runtime sets RankSimulated for simulated payloads.
	Rank int `json:"rank"`
	// Document is the recorded file (path relative to the source folder) or URL (without
	// its query) of the payload; set by the ingest runtime, empty in adapter tests.
	Document string `json:"document,omitempty"`
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
	Provider string
	// Records is how many rows or records the payload held (data rows of a text file,
	// records of a JSON array), for the ingest report.
	Records int
	// MissingValues counts values the source marked missing (NDBC MM and fill values, NWS
	// null) that were skipped without a Rejection each.
	MissingValues int
	Observations  []Observation
	Stations      []contract.Station
	Rejections    []Rejection
}

// Reject records a row or value that did not land. Parsers that build their station records
// themselves (station metadata documents) reject through it; observation parsers go
// through their batch.Builder, which does too.
func (b *Batch) Reject(station string, line int, field, reason, detail string) {
	b.Rejections = append(b.Rejections, Rejection{StationID: station, Line: line, Field: field, Reason: reason, Detail: detail})
}
