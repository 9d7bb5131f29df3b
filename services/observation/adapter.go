package observation

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// ParseFunc reads one payload of one format. A payload that is not of its format at all
// (not JSON, an error document, no header) is an error; bad rows and values inside a
// readable payload are Rejections in the Batch, and the rest still lands.
type ParseFunc func(p Payload) (Batch, error)

// Adapter declares what one provider's adapter package reads: the provider, its feeds, a
// parser per payload format and, when it has one, its simulator. Each adapter package
// returns one (ndbc.Adapter(), nws.Adapter(), ...) as data, so choosing the parser of a
// payload and refusing an unknown format are written once, here.
type Adapter struct {
	// Name prefixes the adapter's errors (its package name, e.g. "ndbc").
	Name string
	// Provider describes the organisation whose data the adapter reads.
	Provider contract.Provider
	// Feeds are the feeds (projects) of the provider that the adapter serves.
	Feeds []contract.Feed
	// Parsers maps each Payload.Format the adapter accepts to its parser.
	Parsers map[string]ParseFunc
	// Simulator writes the provider's native format for synthetic stations; nil when the
	// adapter has no simulate mode.
	Simulator Simulator
}

// Formats lists the Payload.Format values Parse accepts, sorted.
func (a Adapter) Formats() []string {
	out := make([]string, 0, len(a.Parsers))
	for f := range a.Parsers {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// Parse reads one payload with the parser of its format; a format the adapter does not
// declare is an error naming the formats it does.
func (a Adapter) Parse(p Payload) (Batch, error) {
	if parse, ok := a.Parsers[p.Format]; ok {
		return parse(p)
	}
	fs := a.Formats()
	if len(fs) == 1 {
		return Batch{}, fmt.Errorf("%s: unknown payload format %q (want %s)", a.Name, p.Format, fs[0])
	}
	return Batch{}, fmt.Errorf("%s: unknown payload format %q (want one of %s)", a.Name, p.Format, strings.Join(fs, ", "))
}

// BodyParser is the ParseFunc of a format whose document names everything the parser needs.
func BodyParser(parse func(body []byte) (Batch, error)) ParseFunc {
	return func(p Payload) (Batch, error) { return parse(p.Body) }
}

// StationParser is the ParseFunc of a format whose document does not name its station:
// Payload.StationID does.
func StationParser(parse func(stationID string, body []byte) (Batch, error)) ParseFunc {
	return func(p Payload) (Batch, error) { return parse(p.StationID, p.Body) }
}

// catalog is an adapter's catalog.json: its name and what it tells the catalogue about its
// provider. Those are text for people (names, descriptions, licences), so adapters keep
// them as data beside their code instead of as struct literals of one shape in every
// package.
type catalog struct {
	Adapter  string            `json:"adapter"`
	Provider contract.Provider `json:"provider"`
	Feeds    []contract.Feed   `json:"feeds"`
}

// Declare is the Adapter of a catalog document (an adapter package's embedded
// catalog.json: {"adapter": name, "provider": {...}, "feeds": [...]}, every feed the
// provider's), its parser per payload format and its simulator (nil when it has none).
// A document that does not read is a bug of the adapter package, which its first test
// finds: Declare panics.
func Declare(doc []byte, parsers map[string]ParseFunc, sim Simulator) Adapter {
	var c catalog
	if err := json.Unmarshal(doc, &c); err != nil {
		panic(fmt.Sprintf("observation: adapter catalog: %v", err))
	}
	if c.Adapter == "" || c.Provider.Slug == "" || len(c.Feeds) == 0 {
		panic(fmt.Sprintf("observation: adapter catalog %q names no adapter, provider slug or feed", c.Adapter))
	}
	for i := range c.Feeds {
		c.Feeds[i].ProviderSlug = c.Provider.Slug
	}
	return Adapter{Name: c.Adapter, Provider: c.Provider, Feeds: c.Feeds, Parsers: parsers, Simulator: sim}
}
