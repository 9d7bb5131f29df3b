package contract

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Internal paths of the live features (docs/live.md).
const (
	// PathLatestBatch (POST, LatestBatchRequest): the newest reading of many stations in
	// one call, for the gateway's area latest.
	PathLatestBatch = "/v1/readings/latest"
	// PathEvents (GET ?after=&limit=&wait=): the service's log of stored readings, which
	// each gateway follows once (long poll) and replays from for Last-Event-ID.
	PathEvents = "/v1/events"
)

// MaxLatestBatch bounds the stations of one batched latest call: one area-latest page.
const MaxLatestBatch = 5000

// Events paging bounds of PathEvents.
const (
	DefaultEventsLimit = 500
	MaxEventsLimit     = 5000
	// MaxEventsWait bounds the long poll of PathEvents.
	MaxEventsWait = 30 * time.Second
)

// LatestBatchRequest is the body of POST PathLatestBatch.
type LatestBatchRequest struct {
	ExternalIDs []string `json:"external_ids"`
	// QC is the area's qc= filter as spelled there ("" or all: every measurement).
	QC string `json:"qc,omitempty"`
}

// LatestItem is one station's newest reading; Timestamp is nil when it never reported
// (Measurements is then an empty array).
type LatestItem struct {
	ExternalID         string          `json:"external_id"`
	ReportingIntervalS int             `json:"reporting_interval_s"`
	Timestamp          *Time           `json:"timestamp"`
	FetchedAt          *Time           `json:"fetched_at"`
	Measurements       json.RawMessage `json:"measurements"`
}

// LatestBatchResponse answers PathLatestBatch: the known stations among those asked, in
// no particular order (unknown ids are left out).
type LatestBatchResponse struct {
	ServiceID  string       `json:"service_id"`
	ServerTime Time         `json:"server_time"`
	Items      []LatestItem `json:"items"`
}

// Event is one stored reading in a service's event log. Reading is the object of a
// readings page item (id, timestamp, measurements, location).
type Event struct {
	Pos        string          `json:"pos"`
	SensorID   string          `json:"sensor_id"`
	ExternalID string          `json:"external_id"`
	Reading    json.RawMessage `json:"reading"`
}

// EventsPage answers PathEvents: the events after the asked position, oldest first.
// Last is the position of the newest event in the log when the answer was made (the
// caller's next after when Events is empty); Oldest that of the oldest retained event
// ("" when the log is empty), so a caller resuming from before it knows it missed some.
type EventsPage struct {
	Events []Event `json:"events"`
	Last   string  `json:"last"`
	Oldest string  `json:"oldest"`
}

// Position orders the entries of one service's event log: milliseconds of the log's
// clock, then a sequence within the millisecond. It is a Redis Stream entry id, and the
// in-process log makes its own the same way, so one cursor form serves both.
type Position struct{ MS, Seq uint64 }

// ParsePosition reads "ms-seq" (or "ms", sequence 0).
func ParsePosition(s string) (Position, error) {
	msText, seqText, hasSeq := strings.Cut(s, "-")
	ms, err := strconv.ParseUint(msText, 10, 64)
	if err != nil {
		return Position{}, fmt.Errorf("position %q: want ms-seq", s)
	}
	var seq uint64
	if hasSeq {
		if seq, err = strconv.ParseUint(seqText, 10, 64); err != nil {
			return Position{}, fmt.Errorf("position %q: want ms-seq", s)
		}
	}
	return Position{ms, seq}, nil
}

func (p Position) String() string {
	return strconv.FormatUint(p.MS, 10) + "-" + strconv.FormatUint(p.Seq, 10)
}

// Compare is -1, 0 or +1 as p is before, at or after q.
func (p Position) Compare(q Position) int {
	switch {
	case p.MS < q.MS:
		return -1
	case p.MS > q.MS:
		return 1
	case p.Seq < q.Seq:
		return -1
	case p.Seq > q.Seq:
		return 1
	}
	return 0
}
