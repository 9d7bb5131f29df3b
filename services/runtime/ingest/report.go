package ingest

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// PathReport is the service route of the ingest report (token-protected like every
// route but the probes).
const PathReport = "/internal/v1/ingest/report"

// Drop reasons of the report beside the adapters' rejection reasons.
const (
	// DropMissingMarker counts values the source marked missing (NDBC MM and fill values,
	// NWS null) that were skipped without a rejection of their own.
	DropMissingMarker = "missing_marker"
	// DropUnreadable counts payloads that could not be parsed at all.
	DropUnreadable = "unreadable_payload"
)

// DocumentReport is what one ingest of one document (recorded file, fetched URL or
// simulated payload) did. Users debug their data with it: how many records the document
// held, how many readings it added, what was dropped and why, and the time span it covered.
type DocumentReport struct {
	Provider string `json:"provider"`
	Mode     string `json:"mode"`
	// Document is the recorded file (relative to SOURCE_DIR), the URL without its query,
	// or "simulator <station>".
	Document string `json:"document"`
	Format   string `json:"format"`
	// IngestedAt is when this ingest ran (the latest one of the document).
	IngestedAt contract.Time `json:"ingested_at"`
	// RecordsRead is the rows (text) or records (JSON) the document held.
	RecordsRead int `json:"records_read"`
	// Observations is the readings the adapter made of them; ReadingsStored those new to
	// the store, Duplicates those it already held.
	Observations   int `json:"observations"`
	ReadingsStored int `json:"readings_stored"`
	Duplicates     int `json:"duplicates"`
	Stations       int `json:"stations"`
	// Dropped counts rows and values left out, by reason (missing_marker, out_of_range,
	// bad_number, malformed_row, bad_timestamp, quality_control, unsupported_parameter, ...).
	Dropped map[string]int `json:"dropped"`
	// FirstTimestamp and LastTimestamp span the document's readings (null without any).
	FirstTimestamp *contract.Time `json:"first_timestamp"`
	LastTimestamp  *contract.Time `json:"last_timestamp"`
	// Error is why the document was not (fully) ingested, if it was not.
	Error string `json:"error,omitempty"`
}

// Report is the ingest report answer.
type Report struct {
	Documents []DocumentReport `json:"documents"`
}

// maxReported bounds the documents the report keeps (the latest ingest of each, the
// oldest forgotten first): a simulator or live poller makes one document a tick.
const maxReported = 1000

type reportLog struct {
	mu    sync.Mutex
	byKey map[string]DocumentReport
	seq   map[string]uint64
	next  uint64
}

func newReportLog() *reportLog {
	return &reportLog{byKey: map[string]DocumentReport{}, seq: map[string]uint64{}}
}

func (l *reportLog) add(r DocumentReport) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := r.Provider + "\x00" + r.Document
	l.next++
	l.byKey[k], l.seq[k] = r, l.next
	if len(l.byKey) > maxReported {
		oldest, ok := "", false
		var min uint64
		for key, s := range l.seq {
			if !ok || s < min {
				oldest, min, ok = key, s, true
			}
		}
		delete(l.byKey, oldest)
		delete(l.seq, oldest)
	}
}

// snapshot returns the reports by provider, then document.
func (l *reportLog) snapshot() Report {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := slices.Sorted(maps.Keys(l.byKey))
	out := Report{Documents: make([]DocumentReport, 0, len(keys))}
	for _, k := range keys {
		r := l.byKey[k]
		r.Dropped = maps.Clone(r.Dropped)
		out.Documents = append(out.Documents, r)
	}
	return out
}

func timePtr(t time.Time) *contract.Time {
	if t.IsZero() {
		return nil
	}
	return &contract.Time{Time: t.UTC()}
}
