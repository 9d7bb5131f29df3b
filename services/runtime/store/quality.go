package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/runtime/qc"
)

// stationTracks is what the QARTOD tests remember of one station (package qc): each
// parameter's track as of lastMs, the station's newest stored reading when the batch
// that left them committed.
type stationTracks struct {
	lastMs int64
	params map[string]*qc.Track
}

// maxTracked bounds the tracks kept between batches (about 50 bytes a parameter): past
// it the cache starts again, and the next batch of each station reads its context from
// the store once.
const maxTracked = 200_000

// trackCache keeps the stations' tracks between ingest batches, so that a live poll (one
// new reading a station) reads no stored reading for its tests. Guarded by the store's
// writeMu: only Ingest touches it.
type trackCache map[int32]*stationTracks

// assess runs the QARTOD tests on the rows a batch may store: those newer than their
// station's newest stored reading (last, by station key), and those of a better source
// that may revise a stored value. Each station's series continues from its cached tracks
// when they end at its newest stored reading, else from the stored readings of the
// lookback before the batch (one read per station, in tx). Flags are marked on copies of
// the rows' measurements (the caller's observations are not changed). It returns the
// tracks to cache once the batch commits.
func (s *sqlStore) assess(ctx context.Context, tx txn, rows []row, last map[int32]int64) (map[int32]*stationTracks, error) {
	byStation := map[int32][]int{}
	for i := range rows {
		byStation[rows[i].station] = append(byStation[rows[i].station], i)
	}
	lookback := qc.Lookback().Milliseconds()
	out := make(map[int32]*stationTracks, len(byStation))
	for key, idx := range byStation {
		slices.SortFunc(idx, func(a, b int) int { return int(rows[a].ts - rows[b].ts) })
		stored := last[key]
		neededFrom := int64(-1)
		for _, i := range idx {
			if rows[i].ts > stored || SourceRank(rows[i].format) > 1 {
				neededFrom = rows[i].ts
				break
			}
		}
		if neededFrom < 0 {
			continue // a replay: nothing of it is stored or revised
		}
		first, lastTs := rows[idx[0]].ts, rows[idx[len(idx)-1]].ts
		var tracks map[string]*qc.Track
		if c := s.tracks[key]; c != nil && c.lastMs == stored && stored != 0 && first > stored {
			tracks = make(map[string]*qc.Track, len(c.params))
			for p, tr := range c.params {
				cp := *tr
				tracks[p] = &cp
			}
		} else {
			tracks = map[string]*qc.Track{}
			if stored != 0 && stored >= first-lookback && neededFrom-lookback < first {
				if err := s.storedContext(ctx, tx, key, first-lookback, first, tracks); err != nil {
					return nil, fmt.Errorf("ingest: quality context of station %d: %w", key, err)
				}
			}
		}
		series := map[string][]qc.Point{}
		for _, i := range idx {
			r := &rows[i]
			r.meas = slices.Clone(r.meas)
			for j := range r.meas {
				m := &r.meas[j]
				if m.QC != nil { // a provider's mark: copied, the tests add to it
					q := *m.QC
					q.Failed = slices.Clone(q.Failed)
					m.QC = &q
				}
				series[m.Parameter] = append(series[m.Parameter], qc.Point{Ms: r.ts, Value: m.Value, M: m})
			}
		}
		for p, pts := range series {
			tr := tracks[p]
			if tr == nil {
				tr = &qc.Track{}
				tracks[p] = tr
			}
			qc.Assess(p, tr, pts)
		}
		for _, i := range idx {
			for j := range rows[i].meas {
				if m := &rows[i].meas[j]; m.QC == nil {
					m.Mark(canon.FlagNotEvaluated, "")
				}
			}
		}
		if lastTs >= stored {
			out[key] = &stationTracks{lastMs: lastTs, params: tracks}
		}
	}
	return out, nil
}

// storedContext feeds the tracks with a station's stored values in [lo, hi).
func (s *sqlStore) storedContext(ctx context.Context, tx txn, key int32, lo, hi int64, tracks map[string]*qc.Track) error {
	dec := NewMeasDecoder()
	series := map[string][]qc.Point{}
	var ms []canon.Measurement
	err := s.scanRangeTx(ctx, tx, stationRec{key: key}, lo, hi, func(r Reading) error {
		var err error
		if ms, err = dec.Decode(ms, r.Measurements); err != nil {
			return fmt.Errorf("reading %s: %w", r.Time.Format(time.RFC3339), err)
		}
		for _, m := range ms {
			series[m.Parameter] = append(series[m.Parameter], qc.Point{Ms: r.Time.UnixMilli(), Value: m.Value})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for p, pts := range series {
		tr := &qc.Track{}
		qc.Assess(p, tr, pts)
		tracks[p] = tr
	}
	return nil
}

// keepTracks caches a committed batch's tracks.
func (s *sqlStore) keepTracks(t map[int32]*stationTracks) {
	if len(s.tracks)+len(t) > maxTracked {
		s.tracks = trackCache{}
	}
	for k, v := range t {
		s.tracks[k] = v
	}
}
