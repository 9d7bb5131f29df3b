package observation

import "time"

// Payload is one native document as a provider serves it (fetched live, read from a
// recorded file, or written by a simulator), with what the parser must know that the
// document does not say itself.
type Payload struct {
	// Format names the document's format, one of the adapter's Formats(), e.g.
	// "ndbc.stdmet" or "nws.observations".
	Format string
	// StationID is the provider's station id for formats that do not name their station
	// inside the document (an NDBC realtime2 file is named by its URL, an Ambient device
	// record by the device MAC of the request). Empty when the document names its stations.
	StationID string
	Body      []byte
	// Reference is when the document was fetched, or for a recorded file the date in its
	// name. Formats whose rows carry no year and month (raw METAR text: day, hour and minute
	// only) date their rows by it; the others ignore it.
	Reference time.Time
	// Path is the document's request path (live) or recorded file path (files mode), for
	// formats named by their request: an OpenAQ /v3/parameters/{id}/latest page names its
	// parameter only there. Adapters of other formats ignore it.
	Path string
}

// SimConfig configures a deterministic simulator. The same config and window always give
// the same bytes, and overlapping windows give the same rows, so re-simulating a window on
// every tick is idempotent downstream.
type SimConfig struct {
	// Seed selects the synthetic world: station positions, phases, noise.
	Seed int64
	// Stations is how many synthetic stations to generate (default 12 when zero).
	Stations int
	// QuietFraction of the stations go quiet: they report nothing at or after QuietAfter
	// (or at all when QuietAfter is zero), so staleness and 404s can be exercised.
	QuietFraction float64
	QuietAfter    time.Time
	// GapRate is the probability that a whole row/record is absent (default 0.02 when
	// zero; negative means none).
	GapRate float64
	// MissingRate is the probability that one value is the provider's missing marker
	// (NDBC MM, NWS null, ...; default 0.03 when zero; negative means none).
	MissingRate float64
}

// Simulator writes a provider's native format for synthetic stations.
type Simulator interface {
	// SimStations returns the station metadata payload(s) of the synthetic stations in the
	// provider's own metadata format (e.g. an activestations.xml), ready for Parse.
	SimStations(cfg SimConfig) ([]Payload, error)
	// Simulate returns the native payloads holding every synthetic reading with a
	// timestamp in [from, to), at the provider's cadence.
	Simulate(cfg SimConfig, from, to time.Time) ([]Payload, error)
}
