// Package store is a backing service's readings store: its stations and their normalized
// readings with the raw source fragment each was cut from, behind one interface with a
// PostgreSQL implementation (production; COPY bulk ingest, monthly partitions) and an
// embedded SQLite one (make run, tests without a server).
//
// Reading ids are UUIDv5 of (sensor, timestamp) and the table key is (station, timestamp),
// so ingesting the same payload twice stores every reading once.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/observation"
)

// Errors of the store; callers map them to API errors with errors.Is.
var (
	// ErrStationNotFound: no station with that external id.
	ErrStationNotFound = errors.New("station not found")
	// ErrNoReadings: the station exists but has no readings.
	ErrNoReadings = errors.New("station has no readings")
)

// Reading is one stored reading as the read API returns it.
type Reading struct {
	ID        uuid.UUID
	StationID string // external id, as the station spells it
	Time      time.Time
	FetchedAt time.Time
	Lat, Lon  *float64
	// Measurements is the JSON array of canon.Measurement exactly as served.
	Measurements json.RawMessage
	// Raw is the source fragment (JSON), filled only when asked for (data_format=raw) or
	// by LatestReading. RawFormat is its format, filled by Readings, Scan and
	// LatestReading whether or not Raw is (lineage names source fields by it).
	Raw       json.RawMessage
	RawFormat string
	Provider  string
	// Revisions are the reading's earlier values, oldest first; filled only when asked
	// for (revisions=true), empty when it has none.
	Revisions []Revision
}

// StationFilter selects stations. Zero fields do not filter.
type StationFilter struct {
	// UpdatedSince keeps stations whose metadata changed at or after this time.
	UpdatedSince time.Time
	Provider     string
	Feed         string
	// Page is 1-based; Limit 0 means all.
	Page, Limit int
}

// Batch is what one ingest writes, in one transaction: the stations a payload described
// and the observations cut from it.
type Batch struct {
	Provider string
	// Feed is the feed slug given to stations that do not name one.
	Feed      string
	FetchedAt time.Time
	// Source names the file or URL the batch was read from (revision history).
	Source string
	// Stations carry the payload's station metadata. Only a metadata document (a batch
	// with no observations, such as NDBC activestations.xml) overrides stored fields;
	// stations described beside observations (often a guess from the id alone) only fill
	// fields the stored station lacks.
	Stations []contract.Station
	// Observations whose station is not in Stations (nor already stored) create a
	// minimal station named by its id.
	Observations []observation.Observation
}

// IngestResult counts what a batch did.
type IngestResult struct {
	Inserted   int // new readings
	Duplicates int // readings already stored (same station and timestamp)
	Stations   int // stations created or changed
	// Revised counts stored readings superseded by this batch's better source.
	Revised int
}

// Reader is the read side, used by the internal API and the MCP tools.
type Reader interface {
	// Station returns one station by external id (case-insensitive), or ErrStationNotFound.
	Station(ctx context.Context, externalID string) (contract.Station, error)
	// Stations returns a page of stations ordered by external id, and the total matching.
	Stations(ctx context.Context, f StationFilter) ([]contract.Station, int, error)
	// LatestReading returns the newest reading of a station, raw included, or
	// ErrStationNotFound / ErrNoReadings.
	LatestReading(ctx context.Context, externalID string) (Reading, error)
	// LatestReadings returns each named station (exact ids; unknown ids are left
	// out) with its newest reading, in one query: the batched latest of the gateway's
	// area latest, with only what its answer needs (StationLatest). At most
	// MaxLatestBatch ids.
	LatestReadings(ctx context.Context, externalIDs []string) ([]StationLatest, error)
	// Readings returns one page of a station's readings in [q.Since, q.Until), newest first
	// unless q.Ascending, and the total in the range. Raw is filled when q.Format is raw.
	// q.Parameters is not applied here (the JSON is served as stored).
	Readings(ctx context.Context, externalID string, q contract.ReadingsQuery) ([]Reading, int, error)
	// Aggregate sums a station's values per parameter into the buckets of q.Bounds, from
	// the hourly rollups (one row per station-hour, summed in Go) or from the raw readings, or
	// ErrStationNotFound.
	Aggregate(ctx context.Context, externalID string, q AggregateQuery) (AggregateResult, error)
	// Scan calls fn with every reading of a station in [q.Since, q.Until) in time order
	// (zero times: unbounded), a chunk at a time, so memory stays flat whatever the range;
	// it stops at fn's first error or when ctx ends (a client that went away). The bulk
	// export streams through it.
	Scan(ctx context.Context, externalID string, q ScanQuery, fn func(Reading) error) error
}

// ScanQuery bounds a Scan to [Since, Until) (zero times: unbounded). SkipIDs leaves every
// Reading.ID zero: the id is derived per reading (a SHA-1, about a tenth of the store's
// work in a scan), for answers that show it; the CSV export does not.
type ScanQuery struct {
	Since, Until time.Time
	SkipIDs      bool
}

// Writer is the ingest side.
type Writer interface {
	// Ingest writes a batch in one transaction; readings already stored are skipped.
	Ingest(ctx context.Context, b Batch) (IngestResult, error)
}

// Store is a readings store.
type Store interface {
	Reader
	Writer
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Stats is cheap: counts for the service's metadata.
	Stats(ctx context.Context) (Stats, error)
	// Footprint counts every reading and measures the disk used; it scans, so it is
	// for benchmarks and operators, not for request paths.
	Footprint(ctx context.Context) (Footprint, error)
	// Prune removes the readings older than before (and the blocks that held them),
	// keeping the stations' counters and last reading times right, and returns how many
	// readings it removed. The retention job of the service calls it.
	Prune(ctx context.Context, before time.Time) (int64, error)
	Close() error
}

// Stats summarizes a store cheaply.
type Stats struct {
	Dialect     string
	Stations    int
	LastReading *time.Time
}

// Footprint is the size of the readings.
type Footprint struct {
	Readings int64
	// Bytes is tables + indexes (PostgreSQL) or the database file (SQLite).
	Bytes int64
	// RollupBytes is the hourly rollups' table + index (PostgreSQL; 0 on SQLite, whose
	// file size Bytes already includes them).
	RollupBytes int64
}
