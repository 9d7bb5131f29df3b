package httpapi

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// aggregate answers GET /v1/sensors/{id}/readings/aggregate: the station's values per
// bucket of the zone's local clock (docs/api-decisions.md "Wave 2", docs/services.md
// "Aggregates"). The store sums the values into cells; the statistics are finished here,
// the same way whichever source the cells came from.
func (s *Server) aggregate() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := s.stationID(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		v := r.URL.Query()
		q, err := contract.ParseAggregateQuery(v, s.d.Now())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		src := v.Get("source") // internal: tests compare the two ways
		if src != store.SourceAuto && src != store.SourceRollups && src != store.SourceRaw {
			s.fail(w, r, apierr.Invalid("source", "want %s or %s, got %q", store.SourceRollups, store.SourceRaw, src))
			return
		}
		res, err := s.d.Store.Aggregate(r.Context(), id, store.AggregateQuery{Bounds: q.Bounds, Parameters: q.Parameters, Source: src, QC: q.QC})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out := aggregateResponse(s.d.Meta.ID, q, res)
		if q.Lineage {
			if out.Lineage, err = s.aggregateLineage(r.Context(), id, q, res.Parameters); err != nil {
				s.fail(w, r, err)
				return
			}
		}
		// Encoded directly (contract.AppendAggregate): encoding/json cost three
		// quarters of a 1000-bucket request (docs/services.md, "Aggregates").
		b, err := contract.AppendAggregate(make([]byte, 0, 512+len(out.Buckets)*(128+96*len(out.Parameters))), &out)
		if err != nil {
			s.fail(w, r, fmt.Errorf("encode aggregate: %w", err))
			return
		}
		writeBytes(w, http.StatusOK, b)
	}
}

// aggregateLineage gives each parameter's conversion once (lineage=true): rule, formula,
// source field and unit from canon's one conversion table, as the newest reading of the
// range that holds the parameter was converted (else the oldest; a station's source
// does not change units within a feed). A parameter held by neither end of the range is
// absent. Two readings are read, whatever the range.
func (s *Server) aggregateLineage(ctx context.Context, id string, q contract.AggregateQuery, params []string) (map[string]contract.AggregateLineage, error) {
	out := make(map[string]contract.AggregateLineage, len(params))
	dec := store.NewMeasDecoder()
	for _, asc := range []bool{false, true} {
		rs, _, err := s.d.Store.Readings(ctx, id, contract.ReadingsQuery{Since: q.Bounds[0], Until: q.Bounds[len(q.Bounds)-1],
			Limit: 1, Page: 1, Format: contract.FormatCleaned, Ascending: asc})
		if err != nil {
			return nil, err
		}
		for _, rd := range rs {
			ms, err := dec.Decode(nil, rd.Measurements)
			if err != nil {
				return nil, fmt.Errorf("lineage of %s: %w", id, err)
			}
			for i, c := range canon.Lineage(ms, rd.RawFormat) {
				p := ms[i].Parameter
				if _, done := out[p]; done || !slices.Contains(params, p) {
					continue
				}
				out[p] = contract.AggregateLineage{Rule: c.Rule, Formula: c.Formula, SourceField: c.SourceField, SourceUnit: c.SourceUnit}
			}
		}
	}
	return out, nil
}

// aggregateResponse finishes the cells into the public answer.
func aggregateResponse(serviceID string, q contract.AggregateQuery, res store.AggregateResult) contract.AggregateResponse {
	st := res.Station
	out := contract.AggregateResponse{
		SensorID: ids.Sensor(serviceID, st.ExternalID).String(), ExternalID: st.ExternalID, Name: st.Name, ServiceID: serviceID,
		Interval: q.Interval.Name, TZ: q.TZ, Stats: q.Stats, Parameters: res.Parameters, Source: res.Source,
		Since: contract.Time{Time: q.Bounds[0]}, Until: contract.Time{Time: q.Bounds[len(q.Bounds)-1]},
		Buckets:    make([]contract.AggregateBucket, len(q.Bounds)-1),
		Provenance: provenance(serviceID, st, nil),
	}
	if out.Parameters == nil {
		out.Parameters = []string{}
	}
	if st.ReportingIntervalS > 0 {
		n := st.ReportingIntervalS
		out.ExpectedIntervalSeconds = &n
	}
	for i := range out.Buckets {
		start, end := q.Bounds[i], q.Bounds[i+1]
		b := contract.AggregateBucket{Start: contract.Time{Time: start}, End: contract.Time{Time: end},
			StartLocal: start.In(q.Zone).Format(contract.LocalLayout), Values: make(map[string]contract.AggregateStat, len(res.Parameters))}
		for _, p := range res.Parameters {
			v := finish(res.Cells[p][i], store.Circular(p), q.Stats, end.Sub(start).Seconds(), st.ReportingIntervalS)
			if xs := res.Excluded[p]; xs != nil {
				v.Excluded = xs[i]
			}
			b.Values[p] = v
		}
		out.Buckets[i] = b
	}
	return out
}

// finish turns a cell into the statistics asked for, and coverage: count over the
// readings expected in the bucket at the sensor's reporting interval (null when that is
// unknown). Directions get the circular mean: the direction of the sum of unit vectors,
// null when they cancel out.
func finish(c store.Cell, circular bool, stats []string, seconds float64, intervalS int) contract.AggregateStat {
	out := contract.AggregateStat{Stats: stats, Count: c.N}
	if intervalS > 0 {
		cov := round6(float64(c.N) / (seconds / float64(intervalS)))
		out.Coverage = &cov
	}
	if c.N == 0 {
		return out
	}
	lo, hi := c.Min, c.Max
	out.Min, out.Max = &lo, &hi
	if !circular {
		m := round6(c.Sum / float64(c.N))
		out.Mean = &m
		return out
	}
	if math.Hypot(c.SumSin, c.SumCos) < 1e-9*float64(c.N) {
		return out
	}
	deg := round6(math.Atan2(c.SumSin, c.SumCos) * 180 / math.Pi)
	if deg < 0 {
		deg = round6(deg + 360)
	}
	if deg >= 360 {
		deg = 0
	}
	out.Mean = &deg
	return out
}

// round6 keeps six decimals: the stored values have at most four, and the sums of two
// ways of computing a mean differ far below that.
func round6(v float64) float64 {
	r := math.Round(v*1e6) / 1e6
	if r == 0 {
		return 0 // no -0
	}
	return r
}
