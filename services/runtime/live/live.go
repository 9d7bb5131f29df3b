// Package live is a backing service's log of stored readings (docs/live.md): ingest
// appends each newly stored reading once, after its batch committed; every gateway follows
// the log over GET /v1/events (one long poll per gateway and service, not one per client)
// and fans the readings out to its streams; a client's Last-Event-ID is a position in this
// log, so any gateway replica resumes it from here without a gap or a duplicate.
//
// Two implementations share one position form (contract.Position, a Redis Stream entry
// id): a Redis Stream per service when REDIS_URL is set (shared by every replica of the
// service, surviving restarts) and an in-process log otherwise (make run; one replica).
// Both keep entries for Retention.
package live

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// Retention is how long an entry stays in the log: a client may resume (Last-Event-ID)
// from any position this recent. docs/live.md promises at least one hour.
const Retention = 2 * time.Hour

// MaxLag: a reading observed longer ago than this when it is stored (a backfill, the 45
// days of an NDBC file, the simulated history at start) is history, not news, and is not
// put in the log; it is still stored and served by readings pages.
const MaxLag = 6 * time.Hour

// Entry is one reading as the log holds it: Body is the JSON of a contract.Event without
// its position ({"sensor_id","external_id","reading"}).
type Entry struct {
	Body []byte
}

// Page is what Read returns: entries after the position asked for, oldest first, with
// their positions; Last and Oldest as in contract.EventsPage.
type Page struct {
	Positions []contract.Position
	Entries   []Entry
	Last      contract.Position
	Oldest    *contract.Position
}

// Log is a service's log of stored readings.
type Log interface {
	// Append adds entries in order.
	Append(ctx context.Context, entries []Entry) error
	// Read returns up to limit entries after after (nil: none, only the head); with wait
	// > 0 and nothing after after, it waits up to wait for an entry.
	Read(ctx context.Context, after *contract.Position, limit int, wait time.Duration) (Page, error)
	// Backend names the implementation for logs and health ("memory" or "redis").
	Backend() string
	Close() error
}

// entryBody is the JSON of an Entry.
type entryBody struct {
	SensorID   string          `json:"sensor_id"`
	ExternalID string          `json:"external_id"`
	Reading    json.RawMessage `json:"reading"`
}

// Publisher turns committed readings into log entries; Committed is the store's
// Options.Committed hook.
type Publisher struct {
	ServiceID string
	Log       Log
	// Encode writes a reading as a readings page item (httpapi.ReadingJSON).
	Encode func(st contract.Station, r store.Reading) ([]byte, error)
	// Now is the clock for MaxLag (default time.Now).
	Now func() time.Time
	// Failed is told about an append that did not land (logged and counted by the app).
	Failed func(err error, n int)
}

// Committed appends the batch's readings to the log. A failed append loses those readings
// for the streams only (they are stored, and readings pages serve them); it is reported
// through Failed and never fails the ingest.
func (p *Publisher) Committed(ctx context.Context, rs []store.Committed) {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	cut := now().Add(-MaxLag)
	entries := make([]Entry, 0, len(rs))
	for _, c := range rs {
		if c.Reading.Time.Before(cut) {
			continue
		}
		reading, err := p.Encode(c.Station, c.Reading)
		if err != nil {
			p.fail(fmt.Errorf("live: encode reading of %s: %w", c.Station.ExternalID, err), 1)
			continue
		}
		body, err := json.Marshal(entryBody{SensorID: ids.Sensor(p.ServiceID, c.Station.ExternalID).String(),
			ExternalID: c.Station.ExternalID, Reading: reading})
		if err != nil {
			p.fail(fmt.Errorf("live: encode entry: %w", err), 1)
			continue
		}
		entries = append(entries, Entry{Body: body})
	}
	if len(entries) == 0 {
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := p.Log.Append(actx, entries); err != nil {
		p.fail(fmt.Errorf("live: append %d readings: %w", len(entries), err), len(entries))
	}
}

func (p *Publisher) fail(err error, n int) {
	if p.Failed != nil {
		p.Failed(err, n)
	}
}

// EventsPage renders a Page as the answer of GET /v1/events.
func EventsPage(p Page) contract.EventsPage {
	out := contract.EventsPage{Events: make([]contract.Event, 0, len(p.Entries)), Last: p.Last.String()}
	if p.Oldest != nil {
		out.Oldest = p.Oldest.String()
	}
	for i, e := range p.Entries {
		var b entryBody
		if json.Unmarshal(e.Body, &b) != nil {
			continue // cannot happen: Publisher wrote it
		}
		out.Events = append(out.Events, contract.Event{Pos: p.Positions[i].String(), SensorID: b.SensorID, ExternalID: b.ExternalID, Reading: b.Reading})
	}
	return out
}
