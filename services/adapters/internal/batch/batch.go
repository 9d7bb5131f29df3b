// Package batch assembles an observation.Batch while an adapter walks a payload: it runs
// every value through canon.Normalize, turns failures into counted rejections, and keeps
// per-station facts (data types seen, position) for the station records.
package batch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"sort"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/observation"
)

// Stable rejection reasons used by the adapters beside canon.Reason's.
const (
	ReasonMalformedRow       = "malformed_row"
	ReasonBadTimestamp       = "bad_timestamp"
	ReasonBadNumber          = "bad_number"
	ReasonMissingSentinel    = "missing_sentinel"
	ReasonNegative           = "negative_value"
	ReasonUnsupportedParam   = "unsupported_parameter"
	ReasonQualityControl     = "quality_control"
	ReasonMissingStation     = "missing_station"
	ReasonBadCoordinates     = "bad_coordinates"
	ReasonDuplicate          = "duplicate"
	ReasonNoMeasurements     = "no_measurements"
	ReasonBadStationMetadata = "bad_station_metadata"
)

// Observation times outside [MinUnix, MaxUnix) seconds are bad_timestamp rejections: no
// provider has sensor readings from before 1900, and year 1 or 9999 means a broken
// timestamp.
const (
	MinUnix = -2208988800 // 1900-01-01T00:00:00Z
	MaxUnix = 7258118400  // 2200-01-01T00:00:00Z
)

// Builder collects observations, rejections and station facts for one payload.
type Builder struct {
	provider string
	batch    observation.Batch
	stations map[string]*stationFacts
	order    []string
	emitted  map[obsKey]bool
	rank     int
	qc       *canon.QC // MarkAll's marks, nil when none
}

type obsKey struct {
	station string
	t       int64
}

type stationFacts struct {
	types    map[string]bool
	lat, lon *float64
	last     time.Time
}

// New starts a batch for provider (its slug).
func New(provider string) *Builder {
	return &Builder{provider: provider, batch: observation.Batch{Provider: provider}, stations: map[string]*stationFacts{}, emitted: map[obsKey]bool{},
		rank: observation.RankPreliminary}
}

// SetRecords records how many rows or records the payload held (for the ingest report's
// records_read); adapters call it with the length of what they walk.
func (b *Builder) SetRecords(n int) { b.batch.Records = n }

// Missing counts one value the source marked missing (see observation.Batch.MissingValues).
func (b *Builder) Missing() { b.batch.MissingValues++ }

// SetRank sets the source rank of the observations emitted from now on (default
// observation.RankPreliminary); NDBC's quality-controlled historical files rank higher.
func (b *Builder) SetRank(rank int) { b.rank = rank }

// Measurements accumulates the canonical values of one observation.
type Measurements struct {
	b       *Builder
	station string
	line    int
	list    []canon.Measurement
	qc      *canon.QC // this record's provider marks (Mark), nil when none
}

// Mark records the provider's own quality of this record (a CO-OPS range flag, an
// OpenAQ flag): every measurement of the observation carries it, and the ingest's
// QARTOD tests add theirs (the value's flag is the worst).
func (m *Measurements) Mark(flag int, name string) {
	if m.qc == nil {
		m.qc = m.b.markedQC()
	}
	markQC(m.qc, flag, name)
}

// MarkAll records a provider's quality of every value of the payload (provider_preliminary
// of a realtime file that a quality-controlled one supersedes later).
func (b *Builder) MarkAll(flag int, name string) {
	if b.qc == nil {
		b.qc = &canon.QC{Flag: canon.FlagPass, Failed: []string{}}
	}
	markQC(b.qc, flag, name)
}

// markedQC is a record's starting quality: the payload's marks, copied.
func (b *Builder) markedQC() *canon.QC {
	if b.qc == nil {
		return &canon.QC{Flag: canon.FlagPass, Failed: []string{}}
	}
	return &canon.QC{Flag: b.qc.Flag, Failed: append([]string{}, b.qc.Failed...)}
}

func markQC(q *canon.QC, flag int, name string) {
	m := canon.Measurement{QC: q}
	m.Mark(flag, name)
}

// Start begins the measurements of station's row or record at line (1-based; 0 unknown).
func (b *Builder) Start(station string, line int) *Measurements {
	return &Measurements{b: b, station: station, line: line}
}

// Add normalizes value of source field (reported in unit) into parameter; a value that
// cannot be normalized becomes a rejection naming the field, and the row goes on.
func (m *Measurements) Add(field, parameter string, value float64, unit string) {
	got, err := canon.Normalize(parameter, value, unit)
	if err != nil {
		m.b.Reject(m.station, m.line, field, canon.Reason(err), err.Error())
		return
	}
	got.SourceField = field
	m.list = append(m.list, got)
}

// AddMeasurement appends an already normalized measurement (e.g. a computed AQI).
func (m *Measurements) AddMeasurement(ms canon.Measurement) { m.list = append(m.list, ms) }

// Len is the number of measurements so far.
func (m *Measurements) Len() int { return len(m.list) }

// List returns the measurements so far.
func (m *Measurements) List() []canon.Measurement { return m.list }

// Reject records a rejection.
func (b *Builder) Reject(station string, line int, field, reason, detail string) {
	b.batch.Reject(station, line, field, reason, detail)
}

// Emit stores the observation built in m at time t with its raw fragment. A row without
// any canonical value is a no_measurements rejection rather than an empty reading, and a
// second row of the same station and time is a duplicate rejection (the first one wins).
func (m *Measurements) Emit(t time.Time, lat, lon *float64, raw json.RawMessage, rawFormat string) {
	b := m.b
	if u := t.Unix(); u < MinUnix || u >= MaxUnix {
		b.Reject(m.station, m.line, "", ReasonBadTimestamp, fmt.Sprintf("time %s is outside 1900..2199", t.UTC().Format(time.RFC3339)))
		return
	}
	if len(m.list) == 0 {
		b.Reject(m.station, m.line, "", ReasonNoMeasurements, "row has no usable canonical value")
		return
	}
	k := obsKey{m.station, t.UnixNano()}
	if b.emitted[k] {
		b.Reject(m.station, m.line, "", ReasonDuplicate, "a reading of this station at "+t.UTC().Format(time.RFC3339)+" is already in the payload")
		return
	}
	b.emitted[k] = true
	// Provider marks: one QC value per record (or per payload), shared by its
	// measurements; the store copies it before adding the tests' flags.
	if q := m.qc; q != nil || b.qc != nil {
		if q == nil {
			q = b.qc
		}
		for i := range m.list {
			m.list[i].QC = q
		}
	}
	b.batch.Observations = append(b.batch.Observations, observation.Observation{
		StationID: m.station, Time: t.UTC(), Measurements: m.list, Lat: lat, Lon: lon,
		Raw: raw, RawFormat: rawFormat, Source: observation.Source{Kind: rawFormat, Rank: b.rank},
	})
	f := b.facts(m.station)
	for _, ms := range m.list {
		f.types[ms.Parameter] = true
	}
	if lat != nil && lon != nil {
		f.lat, f.lon = lat, lon
	}
	if t.After(f.last) {
		f.last = t.UTC()
	}
}

func (b *Builder) facts(station string) *stationFacts {
	f, ok := b.stations[station]
	if !ok {
		f = &stationFacts{types: map[string]bool{}}
		b.stations[station] = f
		b.order = append(b.order, station)
	}
	return f
}

// Note records a station without an observation (so it still gets a station record).
func (b *Builder) Note(station string, lat, lon *float64) {
	f := b.facts(station)
	if lat != nil && lon != nil {
		f.lat, f.lon = lat, lon
	}
}

// Seen lists the stations of the batch in first-seen order.
func (b *Builder) Seen() []string { return append([]string(nil), b.order...) }

// Rejections returns the rejections so far.
func (b *Builder) Rejections() []observation.Rejection { return b.batch.Rejections }

// Finish returns the batch. For every station seen, base(id) gives its record (name,
// type, feed, ...), which Finish completes with the data types seen, the position when
// base has none, and the last reading time.
func (b *Builder) Finish(base func(id string) contract.Station) observation.Batch {
	out := b.batch
	for _, id := range b.order {
		f := b.stations[id]
		st := base(id)
		if st.ExternalID == "" {
			st.ExternalID = id
		}
		st.DataTypes = MergeTypes(st.DataTypes, keys(f.types))
		if st.Latitude == nil && f.lat != nil {
			st.Latitude, st.Longitude = f.lat, f.lon
		}
		if !f.last.IsZero() {
			st.LastReadingAt = &contract.Time{Time: f.last}
		}
		switch {
		case f.last.IsZero() && st.LastReadingAt == nil && (st.Status == "" || st.Status == observation.StatusActive):
			// Known from metadata only: the store makes it active with its first reading.
			st.Status = observation.StatusNeverReported
		case st.Status == "":
			st.Status = observation.StatusActive
		}
		out.Stations = append(out.Stations, st)
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// MergeTypes returns the union of a and b in the canonical table's order.
func MergeTypes(a, b []string) []string {
	set := map[string]bool{}
	for _, s := range a {
		set[s] = true
	}
	for _, s := range b {
		set[s] = true
	}
	out := make([]string, 0, len(set))
	for _, p := range canon.Parameters() {
		if set[p.ID] {
			out = append(out, p.ID)
		}
	}
	return out
}

// Coord returns a pointer to a valid latitude/longitude pair, or nils when either is
// missing, not finite or out of range (OpenAQ has a longitude of 185.2).
func Coord(lat, lon float64) (*float64, *float64, bool) {
	if math.IsNaN(lat) || math.IsNaN(lon) || math.IsInf(lat, 0) || math.IsInf(lon, 0) ||
		lat < -90 || lat > 90 || lon < -180 || lon > 180 {
		return nil, nil, false
	}
	return &lat, &lon, true
}

// Interval estimates a reporting interval in seconds from observation times: the median
// spacing, rounded to a minute, or fallback when there are fewer than two times.
func Interval(times []time.Time, fallback int) int {
	if len(times) < 2 {
		return fallback
	}
	ts := append([]time.Time(nil), times...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	var d []float64
	for i := 1; i < len(ts); i++ {
		if s := ts[i].Sub(ts[i-1]).Seconds(); s > 0 {
			d = append(d, s)
		}
	}
	if len(d) == 0 {
		return fallback
	}
	sort.Float64s(d)
	med := d[len(d)/2]
	r := int(math.Round(med/60)) * 60
	if r <= 0 {
		return fallback
	}
	return r
}

// CompactRaw returns raw without insignificant whitespace, as json.Compact does, but
// returns raw itself (no copy, no validation pass) when it has none, which is the common
// case for machine-written payloads. raw must be valid JSON: a json.RawMessage out of a
// document that json.Unmarshal accepted.
func CompactRaw(raw json.RawMessage) (json.RawMessage, error) {
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			var buf bytes.Buffer
			buf.Grow(len(raw))
			if err := json.Compact(&buf, raw); err != nil {
				return nil, err
			}
			return buf.Bytes(), nil
		}
	}
	return raw, nil
}

// Truncate cuts s to n bytes and marks the cut with "...", so that a provider's value
// quoted in a rejection or an error stays short however long the payload made it.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Results is the raw fragment of an observation grouped from several records of a JSON
// results page (OpenAQ, AirNow): {"results":[...]} holding each record's own fragment.
func Results(raws [][]byte) json.RawMessage {
	raw := append([]byte(`{"results":[`), bytes.Join(raws, []byte(","))...)
	return append(raw, "]}"...)
}

// Record is one record of a JSON array payload: its 1-based number, the Line of its
// rejections, and its bytes, for its raw fragment.
type Record struct {
	N   int
	Raw json.RawMessage
}

// Records decodes the records of a JSON array payload one by one into T, for a range loop
// over the record and its value. It counts them for the ingest report (SetRecords); a record
// that does not decode is a malformed_row rejection of station (empty when the record itself
// would name it), detailed as "<noun> <n>: <error>", and the loop goes on without it.
func Records[T any](b *Builder, station, noun string, raws []json.RawMessage) iter.Seq2[Record, T] {
	b.SetRecords(len(raws))
	return func(yield func(Record, T) bool) {
		for i, raw := range raws {
			n := i + 1
			var v T
			if err := json.Unmarshal(raw, &v); err != nil {
				b.Reject(station, n, "", ReasonMalformedRow, fmt.Sprintf("%s %d: %v", noun, n, err))
				continue
			}
			if !yield(Record{N: n, Raw: raw}, v) {
				return
			}
		}
	}
}

// StationRecords decodes the records of a station metadata payload one by one into T, for
// a range loop over the record's 1-based number and its value. A record that does not
// decode is a bad_station_metadata rejection in out, detailed as "<noun> <n>: <error>",
// and the loop goes on without it.
func StationRecords[T any](out *observation.Batch, noun string, raws []json.RawMessage) iter.Seq2[int, T] {
	return func(yield func(int, T) bool) {
		for i, raw := range raws {
			n := i + 1
			var v T
			if err := json.Unmarshal(raw, &v); err != nil {
				out.Reject("", n, "", ReasonBadStationMetadata, fmt.Sprintf("%s %d: %v", noun, n, err))
				continue
			}
			if !yield(n, v) {
				return
			}
		}
	}
}

// IsDigits reports whether s is one or more ASCII digits (an all-digit station id).
func IsDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
