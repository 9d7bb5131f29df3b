package store

import (
	"cmp"
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
	params []paramTrack
}

// paramTrack is one parameter's track in its station's list, with the parameter's
// thresholds (nil: it has none; its values are marked not evaluated). A station reports
// a handful of parameters, so a list searched in order costs less than a map, and a
// batch's copy of a station's cached tracks is one allocation, not one per parameter.
type paramTrack struct {
	param string
	lim   *qc.Limits
	tr    qc.Track
}

// track returns the entry of param, adding it when new. hint is where it probably is:
// the measurement's index in its reading, since a station's readings list their
// parameters in the same order.
func (t *stationTracks) track(param string, hint int) *paramTrack {
	if hint < len(t.params) && t.params[hint].param == param {
		return &t.params[hint]
	}
	for i := range t.params {
		if t.params[i].param == param {
			return &t.params[i]
		}
	}
	t.params = append(t.params, paramTrack{param: param, lim: qc.Of(param)})
	return &t.params[len(t.params)-1]
}

// keptTracks is a station's tracks to cache once its batch commits.
type keptTracks struct {
	key int32
	stationTracks
}

// maxTracked bounds the stations whose tracks are kept between batches (about 80 bytes
// a parameter): past it the cache starts again, and the next batch of each station reads
// its context from the store once.
const maxTracked = 200_000

// trackCache keeps the stations' tracks between ingest batches, so that a live poll (one
// new reading a station) reads no stored reading for its tests. Guarded by the store's
// writeMu: only Ingest touches it. A batch works on copies of its stations' lists, so
// that a batch that does not commit leaves the cache as it was.
type trackCache map[int32]stationTracks

// assess runs the QARTOD tests on the rows a batch may store: those newer than their
// station's newest stored reading (last, by station key), and those of a better source
// that may revise a stored value. Each station's series continues from its cached tracks
// when they end at its newest stored reading, else from the stored readings of the
// lookback before the batch (one read per station, in tx). It gives each such row its
// verdicts (row.verdicts, one per measurement), which the encoder and the rollups read
// beside the measurements: the caller's observations are not changed, and nothing is
// copied. It returns the tracks to cache once the batch commits.
//
// It runs for every stored value, so it allocates per batch rather than per value: the
// rows are grouped by one sorted index, the verdicts are cut from one slice of two bytes
// a value, and each measurement steps its parameter's track in time order
// (qc.Limits.Step) instead of being gathered into a series first.
func (s *sqlStore) assess(ctx context.Context, tx txn, rows []row, last map[int32]int64) ([]keptTracks, error) {
	order := make([]int, len(rows)) // the rows by station, then time
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(rows[a].station, rows[b].station); c != 0 {
			return c
		}
		return cmp.Compare(rows[a].ts, rows[b].ts)
	})
	// The stations with rows to assess (in a replay, none), and how many measurements
	// those rows hold.
	type station struct {
		idx        []int // its rows, by time
		neededFrom int64 // the first row stored or revised
	}
	var todo []station
	n := 0
	for lo := 0; lo < len(order); {
		key := rows[order[lo]].station
		hi := lo + 1
		for hi < len(order) && rows[order[hi]].station == key {
			hi++
		}
		idx := order[lo:hi]
		lo = hi
		stored := last[key]
		for _, i := range idx {
			if rows[i].ts > stored || SourceRank(rows[i].format) > 1 {
				todo = append(todo, station{idx: idx, neededFrom: rows[i].ts})
				for _, i := range idx {
					n += len(rows[i].meas)
				}
				break
			}
		}
	}
	verdicts := make([]qc.Verdict, n)
	lookback := qc.Lookback().Milliseconds()
	out := make([]keptTracks, 0, len(todo))
	for _, st := range todo {
		key := rows[st.idx[0]].station
		stored := last[key]
		first, lastTs := rows[st.idx[0]].ts, rows[st.idx[len(st.idx)-1]].ts
		var tracks stationTracks
		if c, ok := s.tracks[key]; ok && c.lastMs == stored && stored != 0 && first > stored {
			tracks.params = slices.Clone(c.params)
		} else if stored != 0 && stored >= first-lookback && st.neededFrom-lookback < first {
			if err := s.storedContext(ctx, tx, key, first-lookback, first, &tracks); err != nil {
				return nil, fmt.Errorf("ingest: quality context of station %d: %w", key, err)
			}
		}
		for _, i := range st.idx {
			r := &rows[i]
			k := len(r.meas)
			r.verdicts, verdicts = verdicts[:k:k], verdicts[k:]
			for j := range r.meas {
				if pt := tracks.track(r.meas[j].Parameter, j); pt.lim != nil {
					r.verdicts[j] = pt.lim.Step(&pt.tr, r.ts, r.meas[j].Value)
				}
			}
		}
		if lastTs >= stored {
			tracks.lastMs = lastTs
			out = append(out, keptTracks{key: key, stationTracks: tracks})
		}
	}
	return out, nil
}

// quality is measurement m's flag once the tests gave it verdict d (its row's; the zero
// Verdict when none ran): the worse of the provider's mark (a pass without one) and the
// tests', or, when no test ran, the provider's mark, else not evaluated. It is the flag
// canon.Measurement.Mark would have left on m.
func quality(m *canon.Measurement, d qc.Verdict) int {
	switch {
	case m.QC == nil && d.Flag == 0:
		return canon.FlagNotEvaluated
	case m.QC == nil:
		return int(d.Flag)
	case d.Flag != 0 && canon.Worse(int(d.Flag), m.QC.Flag):
		return int(d.Flag)
	}
	return m.QC.Flag
}

// storedContext feeds tracks with a station's stored values in [lo, hi).
func (s *sqlStore) storedContext(ctx context.Context, tx txn, key int32, lo, hi int64, tracks *stationTracks) error {
	dec := NewMeasDecoder()
	var ms []canon.Measurement
	return s.scanRangeTx(ctx, tx, stationRec{key: key}, lo, hi, func(r Reading) error {
		var err error
		if ms, err = dec.Decode(ms, r.Measurements); err != nil {
			return fmt.Errorf("reading %s: %w", r.Time.Format(time.RFC3339), err)
		}
		for j := range ms {
			if pt := tracks.track(ms[j].Parameter, j); pt.lim != nil {
				pt.lim.Step(&pt.tr, r.Time.UnixMilli(), ms[j].Value)
			}
		}
		return nil
	})
}

// keepTracks caches a committed batch's tracks.
func (s *sqlStore) keepTracks(t []keptTracks) {
	if len(s.tracks)+len(t) > maxTracked {
		s.tracks = trackCache{}
	}
	for _, k := range t {
		s.tracks[k.key] = k.stationTracks
	}
}
