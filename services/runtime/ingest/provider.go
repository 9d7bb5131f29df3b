// Package ingest feeds a service's readings store from its providers: one loop per
// provider that takes native payloads from a source (live HTTP polling, a folder of
// recorded files, or a deterministic simulator), parses them with the provider's adapter,
// writes each payload's batch in one transaction, and keeps per-provider health counters.
package ingest

import (
	"net/http"
	"time"

	"github.com/sensorgate/sensorgate/services/observation"
)

// Source modes.
const (
	ModeSimulate = "simulate"
	ModeFiles    = "files"
	ModeLive     = "live"
	// ModeOff marks a provider that has no source in the configured mode.
	ModeOff = "off"
)

// Provider is everything the runtime needs to feed one provider.
type Provider struct {
	// Adapter declares the provider, its feeds and parsers, and its simulator; a nil
	// Adapter.Simulator means the provider has no simulate mode (it is then skipped in
	// that mode).
	Adapter observation.Adapter
	// Cadence is how often the provider publishes new readings: the simulator's tick and
	// the default live poll interval.
	Cadence time.Duration
	// Live says how to poll the real API.
	Live LiveSpec
	// Classify tells whether a recorded file (path relative to the source folder, and its
	// bytes) is this provider's, and as which payload. Nil: no files mode.
	Classify func(rel string, body []byte) (observation.Payload, bool)
}

// LiveSpec describes the provider's live API.
type LiveSpec struct {
	// DefaultBaseURL is the API root, overridable per deployment (and by tests).
	DefaultBaseURL string
	// DefaultStations are polled when the deployment names none.
	DefaultStations []string
	// NeedsAPIKey: without a key the provider is skipped in live mode, with a health error.
	NeedsAPIKey bool
	// Targets lists the documents to poll for the given stations. The runtime trims the
	// base URL's trailing slashes once, so every provider can append its paths to it.
	Targets func(baseURL string, stations []string, apiKey string) []Target
}

// Target is one document polled live.
type Target struct {
	URL    string
	Header http.Header
	// Format and StationID become the Payload's.
	Format    string
	StationID string
	// MetadataOnly documents (station lists) are polled at most once an hour.
	MetadataOnly bool
}

// Slug is the provider's slug.
func (p Provider) Slug() string { return p.Adapter.Provider.Slug }

// Feed is the provider's first feed slug, given to stations that name none.
func (p Provider) Feed() string {
	if fs := p.Adapter.Feeds; len(fs) > 0 {
		return fs[0].Slug
	}
	return p.Slug()
}
