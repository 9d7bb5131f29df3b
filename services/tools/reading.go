package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/freshness"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// DefaultReportingInterval is assumed for a station that does not state its own.
const DefaultReportingInterval = freshness.DefaultInterval

// StationRef identifies the station a result is about.
type StationRef struct {
	SensorID   string `json:"sensor_id" jsonschema:"gateway sensor UUID (UUIDv5 of service id and external id)"`
	ExternalID string `json:"external_id" jsonschema:"the provider's station id"`
	Name       string `json:"name"`
	ServiceID  string `json:"service_id"`
}

// Provenance says where a value comes from (docs/spec.md 2.5 plus provider and fetched_at).
type Provenance struct {
	SensorID  string `json:"sensor_id"`
	ServiceID string `json:"service_id"`
	SourceID  string `json:"source_id" jsonschema:"the provider's identifier of the station"`
	Provider  string `json:"provider" jsonschema:"provider slug"`
	FetchedAt string `json:"fetched_at,omitempty" jsonschema:"when the service fetched the source payload (ISO 8601 UTC, ms)"`
}

// Freshness is the age of a reading against its station's reporting interval.
type Freshness struct {
	Timestamp          string `json:"timestamp" jsonschema:"observation time, ISO 8601 UTC with milliseconds"`
	AgeSeconds         int64  `json:"age_seconds" jsonschema:"seconds between the observation time and now"`
	Stale              bool   `json:"stale" jsonschema:"true when age_seconds exceeds stale_after_s"`
	ReportingIntervalS int    `json:"reporting_interval_s" jsonschema:"how often the station is expected to report, seconds"`
	StaleAfterS        int    `json:"stale_after_s" jsonschema:"age beyond which a reading counts as stale: twice the reporting interval (3600 s assumed when unknown)"`
}

// Measurement is one canonical value with its unit and the source's own value and unit.
type Measurement struct {
	Parameter     string  `json:"parameter" jsonschema:"canonical parameter id"`
	Value         float64 `json:"value"`
	Unit          string  `json:"unit" jsonschema:"canonical unit"`
	UnitOriginal  string  `json:"unit_original" jsonschema:"unit the source reported"`
	ValueOriginal float64 `json:"value_original" jsonschema:"value as the source reported it"`
	Meaning       string  `json:"meaning,omitempty"`
	// QC is the value's quality as stored (the readings JSON's qc).
	QC *canon.QC `json:"qc,omitempty" jsonschema:"QARTOD quality: flag 1 pass, 2 not evaluated, 3 suspect, 4 fail, 9 missing; failed names the tests or provider marks that set it"`
}

// Location is a station or reading position in decimal degrees (WGS 84).
type Location struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
}

// Quantity is one parameter's most recent value with its own observation time, since
// stations report some parameters less often than others (NDBC buoys: waves hourly, wind
// every 10 minutes).
type Quantity struct {
	Value      float64 `json:"value"`
	Unit       string  `json:"unit"`
	ObservedAt string  `json:"observed_at" jsonschema:"ISO 8601 UTC with milliseconds"`
	AgeSeconds int64   `json:"age_seconds"`
	Stale      bool    `json:"stale"`
}

func (ts *toolset) ref(st contract.Station) StationRef {
	return StationRef{SensorID: ids.Sensor(ts.service, st.ExternalID).String(), ExternalID: st.ExternalID, Name: st.Name, ServiceID: ts.service}
}

func (ts *toolset) provenance(st contract.Station, r *store.Reading) Provenance {
	p := Provenance{SensorID: ids.Sensor(ts.service, st.ExternalID).String(), ServiceID: ts.service, SourceID: st.ExternalID, Provider: st.ProviderSlug}
	if r != nil {
		if r.Provider != "" {
			p.Provider = r.Provider
		}
		if !r.FetchedAt.IsZero() {
			p.FetchedAt = contract.FormatTime(r.FetchedAt)
		}
	}
	return p
}

func interval(st contract.Station) time.Duration {
	return freshness.ExpectedInterval(st.ReportingIntervalS)
}

// staleAfter is the one staleness rule of sensorgate (pkg/freshness, docs/api-decisions.md
// "Area latest with staleness"), the same in REST and every MCP tool family: stale when
// the age exceeds twice the station's expected reporting interval (3600 s when unknown).
func staleAfter(st contract.Station) time.Duration {
	return time.Duration(freshness.Rule{}.StaleAfter(st.ReportingIntervalS)) * time.Second
}

// age is whole seconds from t to now; a timestamp in the future (a clock ahead of ours)
// is age 0 rather than negative.
func age(now, t time.Time) int64 {
	d := now.Sub(t)
	if d < 0 {
		return 0
	}
	return int64(d / time.Second)
}

func (ts *toolset) freshness(st contract.Station, t time.Time) Freshness {
	a := age(ts.now(), t)
	sa := staleAfter(st)
	return Freshness{
		Timestamp:          contract.FormatTime(t),
		AgeSeconds:         a,
		Stale:              time.Duration(a)*time.Second > sa,
		ReportingIntervalS: int(interval(st) / time.Second),
		StaleAfterS:        int(sa / time.Second),
	}
}

func (ts *toolset) value(st contract.Station, v float64, unit string, t time.Time) *Quantity {
	f := ts.freshness(st, t)
	return &Quantity{Value: v, Unit: unit, ObservedAt: f.Timestamp, AgeSeconds: f.AgeSeconds, Stale: f.Stale}
}

// decodeMeasurements reads the stored measurements JSON, keeping only params when given;
// withMeaning adds each parameter's meaning (left out of long series, where the units map
// and describe_station say it once).
func decodeMeasurements(raw json.RawMessage, params []string, qc contract.QCFilter, withMeaning bool) ([]Measurement, error) {
	var ms []canon.Measurement
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &ms); err != nil {
			return nil, fmt.Errorf("decode stored measurements: %w", err)
		}
	}
	keep := map[string]bool{}
	for _, p := range params {
		keep[p] = true
	}
	out := make([]Measurement, 0, len(ms))
	for _, m := range ms {
		if len(keep) > 0 && !keep[m.Parameter] || !qc.Keep(m.Quality().Flag) {
			continue
		}
		mm := Measurement{Parameter: m.Parameter, Value: m.Value, Unit: m.Unit, UnitOriginal: m.UnitOriginal, ValueOriginal: m.ValueOriginal, QC: m.QC}
		if p, ok := canon.Lookup(m.Parameter); ok && withMeaning {
			mm.Meaning = p.Meaning
		}
		out = append(out, mm)
	}
	return out, nil
}

// sample is one decoded reading of a window: its time and its values by parameter.
type sample struct {
	t      time.Time
	values map[string]canon.Measurement
}

// maxWindowRows bounds how many readings a domain tool reads for one summary.
const maxWindowRows = 4 * contract.MaxReadingsLimit

// window returns the readings of a station in [since, until], newest first, decoded.
func (ts *toolset) window(ctx context.Context, st contract.Station, since, until time.Time) ([]sample, error) {
	var out []sample
	for page := 1; len(out) < maxWindowRows; page++ {
		q := contract.ReadingsQuery{Since: since, Until: until.Add(time.Millisecond), Limit: contract.MaxReadingsLimit, Page: page, Format: contract.FormatCleaned}
		rs, total, err := ts.store.Readings(ctx, st.ExternalID, q)
		if err != nil {
			return nil, fmt.Errorf("readings of %q: %w", st.ExternalID, err)
		}
		for _, r := range rs {
			var ms []canon.Measurement
			if err := json.Unmarshal(r.Measurements, &ms); err != nil {
				return nil, fmt.Errorf("decode stored measurements of %q at %s: %w", st.ExternalID, r.Time, err)
			}
			s := sample{t: r.Time, values: make(map[string]canon.Measurement, len(ms))}
			for _, m := range ms {
				s.values[m.Parameter] = m
			}
			out = append(out, s)
		}
		if len(rs) == 0 || page*contract.MaxReadingsLimit >= total {
			break
		}
	}
	return out, nil
}

// latestOf returns the newest value of parameter p in a newest-first window.
func latestOf(w []sample, p string) (canon.Measurement, time.Time, bool) {
	for _, s := range w {
		if m, ok := s.values[p]; ok && !math.IsNaN(m.Value) {
			return m, s.t, true
		}
	}
	return canon.Measurement{}, time.Time{}, false
}

// PressureTrend is the change of air pressure over about three hours.
type PressureTrend struct {
	Tendency     string  `json:"tendency" jsonschema:"steady, rising_slowly, rising, rising_quickly, rising_very_rapidly, or the falling forms (Met Office wording)"`
	Change3hHPa  float64 `json:"change_3h_hpa" jsonschema:"pressure change scaled to three hours, hPa"`
	SpanMinutes  int     `json:"span_minutes" jsonschema:"minutes between the two readings compared"`
	ComparedWith string  `json:"compared_with" jsonschema:"timestamp of the older reading, ISO 8601 UTC with milliseconds"`
}

// pressureTrend compares the newest pressure with the reading closest to three hours
// before it, within two to four hours, and scales the change to three hours.
func pressureTrend(w []sample, tendency func(float64) string) *PressureTrend {
	m, t, ok := latestOf(w, canon.AirPressureHPa)
	if !ok {
		return nil
	}
	target := t.Add(-3 * time.Hour)
	var best *sample
	var bestV float64
	for i := range w {
		s := &w[i]
		d := t.Sub(s.t)
		if d < 2*time.Hour || d > 4*time.Hour {
			continue
		}
		old, ok := s.values[canon.AirPressureHPa]
		if !ok {
			continue
		}
		if best == nil || absDur(s.t.Sub(target)) < absDur(best.t.Sub(target)) {
			best, bestV = s, old.Value
		}
	}
	if best == nil {
		return nil
	}
	span := t.Sub(best.t)
	change := (m.Value - bestV) * float64(3*time.Hour) / float64(span)
	change = math.Round(change*10) / 10
	return &PressureTrend{Tendency: tendency(change), Change3hHPa: change, SpanMinutes: int(span / time.Minute), ComparedWith: contract.FormatTime(best.t)}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
