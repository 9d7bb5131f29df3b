package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
)

// loadDicts reads every dictionary into the codec.
func (s *sqlStore) loadDicts(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, content FROM dicts`)
	if err != nil {
		return fmt.Errorf("load dictionaries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      int64
			name    string
			content []byte
		)
		if err := rows.Scan(&id, &name, &content); err != nil {
			return fmt.Errorf("load dictionaries: %w", err)
		}
		if err := s.codec.add(uint32(id), append([]byte(nil), content...)); err != nil {
			return err
		}
		s.mu.Lock()
		s.dicts[name] = uint32(id)
		s.mu.Unlock()
	}
	return rows.Err()
}

// dict returns the id of the dictionary name, creating it from samples when new.
func (s *sqlStore) dict(ctx context.Context, name string, samples [][]byte) (uint32, error) {
	s.mu.Lock()
	id, ok := s.dicts[name]
	s.mu.Unlock()
	if ok {
		return id, nil
	}
	content := dictContent(samples)
	if len(content) == 0 {
		return 0, nil
	}
	var id64 int64
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO dicts (name, content) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`), name, content); err != nil {
		return 0, fmt.Errorf("create dictionary %s: %w", name, err)
	}
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT id, content FROM dicts WHERE name = ?`), name).Scan(&id64, &content); err != nil {
		return 0, fmt.Errorf("read dictionary %s: %w", name, err)
	}
	if err := s.codec.add(uint32(id64), append([]byte(nil), content...)); err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.dicts[name] = uint32(id64)
	s.mu.Unlock()
	return uint32(id64), nil
}

// dictContent joins samples (most useful last, as zstd prefers recent history) up to a
// size where encoders stay cheap.
func dictContent(samples [][]byte) []byte {
	const maxDict = 16 << 10
	var out []byte
	for i := len(samples) - 1; i >= 0; i-- {
		if len(out)+len(samples[i]) > maxDict {
			break
		}
		out = append(append([]byte(nil), samples[i]...), out...)
	}
	return out
}

// Ingest implements Writer.
func (s *sqlStore) Ingest(ctx context.Context, b Batch) (IngestResult, error) {
	var res IngestResult
	if b.Provider == "" {
		return res, fmt.Errorf("ingest: batch has no provider")
	}
	if b.FetchedAt.IsZero() {
		b.FetchedAt = s.now()
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	ph := s.phases.start()
	var stored []row // the readings new to the store, once the transaction is done
	stations, err := s.mergeStations(ctx, b)
	if err != nil {
		return res, err
	}
	rows, extKeys, err := s.prepareRows(ctx, b)
	if err != nil {
		return res, err
	}
	if err := s.d.prepare(ctx, rows); err != nil {
		return res, err
	}
	if err := s.ensureRollupParams(ctx, rows); err != nil {
		return res, err
	}
	ph.done(phasePrepare)
	var (
		revised map[int32][]int64
		tracks  []keptTracks
	)
	err = s.d.inTx(ctx, func(tx txn) error {
		changed, last, err := s.writeStations(ctx, tx, stations, rows, extKeys, len(b.Observations) == 0)
		if err != nil {
			return err
		}
		ph.done(phaseStations)
		if !s.qcOff {
			if tracks, err = s.assess(ctx, tx, rows, last); err != nil {
				return err
			}
			ph.done(phaseQuality)
		}
		fresh, added, err := s.writeReadings(ctx, tx, rows, &ph)
		if err != nil {
			return err
		}
		stored = fresh
		res = IngestResult{Stations: changed}
		for _, n := range added {
			res.Inserted += int(n)
		}
		res.Duplicates = len(b.Observations) - res.Inserted
		if err := s.countReadings(ctx, tx, fresh, added); err != nil {
			return err
		}
		// The new readings' values, summed into their hours (docs/services.md "Aggregates").
		sums := rollupSums{}
		for i := range fresh {
			sums.add(fresh[i].station, fresh[i].ts, fresh[i].meas, fresh[i].verdicts, s.rollupParamID)
		}
		if err := s.addRollups(ctx, tx, sums); err != nil {
			return err
		}
		if err := s.recordFetch(ctx, tx, b.FetchedAt.UnixMilli(), b.Source); err != nil {
			return err
		}
		if revised, err = s.reviseDuplicates(ctx, tx, rows, fresh, b.Source); err != nil {
			return err
		}
		for _, hs := range revised {
			res.Revised += len(hs)
		}
		ph.done(phaseCounters)
		return nil
	})
	if err != nil {
		return IngestResult{}, err
	}
	ph.done(phaseCommit)
	s.keepTracks(tracks)
	// A revised reading's hours are summed again from the stored readings (a minimum or
	// maximum cannot be taken back).
	for key, hours := range revised {
		if err := s.recomputeHours(ctx, stationRec{key: key}, hours); err != nil {
			return res, fmt.Errorf("ingest: rollups of revised readings: %w", err)
		}
	}
	if s.committed != nil && len(stored) > 0 {
		s.committed(ctx, s.committedReadings(stations, rows, extKeys, stored))
	}
	return res, nil
}

// Committed is a reading stored for the first time, with its station, as Options.Committed
// receives it. Reading.Measurements are the bytes a readings page serves.
type Committed struct {
	Station contract.Station
	Reading Reading
}

// committedReadings describes the rows a batch stored, in time order per station.
func (s *sqlStore) committedReadings(stations []contract.Station, rows []row, extKeys []string, stored []row) []Committed {
	byExt := make(map[string]*contract.Station, len(stations))
	for i := range stations {
		byExt[stationKey(stations[i].ExternalID)] = &stations[i]
	}
	byKey := make(map[int32]*contract.Station, len(stations))
	for i := range rows {
		if _, ok := byKey[rows[i].station]; !ok {
			byKey[rows[i].station] = byExt[extKeys[i]]
		}
	}
	enc := newMeasEncoder()
	out := make([]Committed, 0, len(stored))
	for _, r := range stored {
		st := byKey[r.station]
		if st == nil {
			continue
		}
		m, err := enc.encode(nil, r.meas, r.verdicts)
		if err != nil {
			continue // cannot happen: the same encoder stored these values
		}
		t := time.UnixMilli(r.ts).UTC()
		out = append(out, Committed{Station: *st, Reading: Reading{
			ID: ids.Reading(ids.Sensor(s.serviceID, st.ExternalID), t), StationID: st.ExternalID, Time: t,
			FetchedAt: time.UnixMilli(r.fetched).UTC(), Lat: r.lat, Lon: r.lon, Measurements: m, Provider: st.ProviderSlug,
		}})
	}
	slices.SortStableFunc(out, func(a, b Committed) int {
		if c := cmp.Compare(a.Station.ExternalID, b.Station.ExternalID); c != 0 {
			return c
		}
		return a.Reading.Time.Compare(b.Reading.Time)
	})
	return out
}

// writeStations locks and upserts the batch's stations, gives every row its station
// key, and returns how many stations changed and the newest stored reading (epoch ms)
// of those that had one.
func (s *sqlStore) writeStations(ctx context.Context, tx txn, stations []contract.Station, rows []row, extKeys []string, authoritative bool) (int, map[int32]int64, error) {
	stored, err := s.lockStations(ctx, tx, stations)
	if err != nil {
		return 0, nil, err
	}
	last := map[int32]int64{}
	keys := make(map[string]int32, len(stations))
	changed := 0
	for i, st := range stations {
		extKey := stationKey(st.ExternalID)
		cur, exists := stored[extKey]
		key, merged, ch, err := s.upsertStation(ctx, tx, st, cur, exists, authoritative)
		// The station as stored from now on (the batch's merged with the stored one, say
		// an observation-only batch without coordinates): the committed readings, and so
		// the live log's events, carry the same location as a readings page.
		stations[i] = merged
		if err != nil {
			return 0, nil, err
		}
		keys[extKey] = key
		if exists && cur.LastReadingAt != nil {
			last[key] = cur.LastReadingAt.UnixMilli()
		}
		if ch {
			changed++
		}
	}
	for i := range rows {
		k, ok := keys[extKeys[i]]
		if !ok {
			return 0, nil, fmt.Errorf("ingest: observation of unknown station %q", extKeys[i])
		}
		rows[i].station = k
	}
	return changed, last, nil
}

// writeReadings writes the rows not stored yet (returned) and their blocks, and returns
// how many readings each station gained.
func (s *sqlStore) writeReadings(ctx context.Context, tx txn, rows []row, ph *phaseClock) ([]row, map[int32]int64, error) {
	fresh, err := tx.unstored(ctx, rows)
	if err != nil {
		return nil, nil, err
	}
	ph.done(phaseLookup)
	// The blocks get their ids first, so that the readings (which only point at them)
	// are written while the blocks are still being compressed: PostgreSQL's insert and
	// index work and Go's compression overlap on the two cores.
	blocks, inline := groupBlocks(fresh)
	if err := tx.blockIDs(ctx, blocks); err != nil {
		return nil, nil, err
	}
	setBlockRefs(blocks, fresh)
	if err := s.packInline(fresh, inline); err != nil {
		return nil, nil, err
	}
	ph.done(phaseCompress)
	packed := s.packBlocks(blocks, fresh)
	if !overlapPack {
		if err := packed(); err != nil {
			return nil, nil, err
		}
		packed = func() error { return nil }
	}
	added, err := tx.insertReadings(ctx, fresh)
	if perr := packed(); err == nil {
		err = perr
	}
	if err != nil {
		return nil, nil, err
	}
	ph.done(phaseReadings)
	if err := tx.insertBlocks(ctx, blocks); err != nil {
		return nil, nil, err
	}
	ph.done(phaseBlocks)
	return fresh, added, nil
}

// countReadings moves the counters of the stations that gained readings. A station that
// gained none is not written: a replay (the NDBC 45-day file polled again) updates no row.
func (s *sqlStore) countReadings(ctx context.Context, tx txn, fresh []row, added map[int32]int64) error {
	last := map[int32]int64{}
	for _, r := range fresh {
		if r.ts > last[r.station] || last[r.station] == 0 {
			last[r.station] = r.ts
		}
	}
	var counts []stationCount
	for k, ts := range last {
		if added[k] > 0 {
			counts = append(counts, stationCount{k, ts, added[k]})
		}
	}
	slices.SortFunc(counts, func(a, b stationCount) int { return cmp.Compare(a.key, b.key) })
	if err := tx.addCounts(ctx, counts); err != nil {
		return fmt.Errorf("ingest: station counters: %w", err)
	}
	return nil
}

// stationCount is what a batch adds to a station's counters.
type stationCount struct {
	key      int32
	last     int64 // newest reading's time
	readings int64
}

// packInline encodes and compresses the rows that keep their values (the indexes
// inline), on every CPU. Only readings not stored yet are encoded: a replay encodes
// nothing.
func (s *sqlStore) packInline(rows []row, inline []int) error {
	return parallelMin(len(inline), 64, func(lo, hi int) error {
		p := newPacker(s.codec)
		for _, i := range inline[lo:hi] {
			if err := p.inline(&rows[i]); err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
		}
		return nil
	})
}

// packBlocks encodes and compresses blocks in the background, on every CPU (one
// dictionary encode per block instead of two per reading), and returns the wait for it.
func (s *sqlStore) packBlocks(blocks []block, rows []row) (wait func() error) {
	done := make(chan error, 1)
	go func() {
		done <- parallelMin(len(blocks), 16, func(lo, hi int) error {
			p := newPacker(s.codec)
			for i := lo; i < hi; i++ {
				if err := p.block(&blocks[i], rows); err != nil {
					return fmt.Errorf("ingest: %w", err)
				}
			}
			return nil
		})
	}()
	return func() error { return <-done }
}

// prepareRows turns the observations into rows (outside the transaction), makes the
// dictionaries of formats not seen before, and drops repeats of one (station, time)
// within the batch, keeping the last. Encoding and compression wait until the
// transaction knows which readings are new (packInline, packBlocks).
func (s *sqlStore) prepareRows(ctx context.Context, b Batch) ([]row, []string, error) {
	n := len(b.Observations)
	fetched := b.FetchedAt.UnixMilli()
	horizon := s.horizon.Load()
	// One row per (station, time): the last observation wins. Readings older than what
	// retention already removed are not stored again (a source that repeats 45 days would
	// otherwise bring them back every poll). Stations are numbered first so that the
	// repeat check hashes two integers, not a string, per reading.
	type rowKey struct {
		station int32
		ts      int64
	}
	stationIdx := map[string]int32{}
	index := make(map[rowKey]int, n)
	out := make([]row, 0, n)
	extKeys := make([]string, 0, n)
	for i := range b.Observations {
		o := &b.Observations[i]
		ts := o.Time.UTC().Truncate(time.Millisecond).UnixMilli()
		if horizon != 0 && ts < horizon {
			continue
		}
		extKey := stationKey(o.StationID)
		si, ok := stationIdx[extKey]
		if !ok {
			si = int32(len(stationIdx))
			stationIdx[extKey] = si
		}
		r := row{ts: ts, fetched: fetched, lat: o.Lat, lon: o.Lon, format: o.RawFormat, meas: o.Measurements, rawPlain: o.Raw}
		if r.format == "" {
			r.format = b.Provider
		}
		k := rowKey{si, ts}
		if j, ok := index[k]; ok {
			out[j] = r
			continue
		}
		index[k] = len(out)
		out = append(out, r)
		extKeys = append(extKeys, extKey)
	}
	if err := s.setDicts(ctx, out, extKeys); err != nil {
		return nil, nil, err
	}
	return out, extKeys, nil
}

// setDicts gives every row its dictionaries, creating those of formats not seen before
// from up to 8 samples of different stations (what varies between stations is what the
// dictionary must cover).
func (s *sqlStore) setDicts(ctx context.Context, rows []row, extKeys []string) error {
	mDict, rawDict := map[string]uint32{}, map[string]uint32{}
	mSamples, rawSamples := map[string][][]canon.Measurement{}, map[string][][]byte{}
	mJSON := map[string][][]byte{}
	type seenKey struct{ format, station string }
	mSeen, rawSeen := map[seenKey]bool{}, map[seenKey]bool{}
	s.mu.Lock()
	for i := range rows {
		f := rows[i].format
		if _, ok := mDict[f]; ok {
			continue
		}
		mID, mOK := s.dicts["m:"+f]
		rawID, rawOK := s.dicts["raw:"+f]
		if mOK && rawOK {
			mDict[f], rawDict[f] = mID, rawID
		}
	}
	s.mu.Unlock()
	for i := range rows {
		f := rows[i].format
		if _, known := rawDict[f]; known {
			continue
		}
		if k := (seenKey{f, extKeys[i]}); !mSeen[k] && len(mSamples[f]) < 8 {
			mSeen[k] = true
			mSamples[f] = append(mSamples[f], rows[i].meas)
		}
		if k := (seenKey{f, extKeys[i]}); len(rows[i].rawPlain) > 0 && !rawSeen[k] && len(rawSamples[f]) < 8 {
			rawSeen[k] = true
			rawSamples[f] = append(rawSamples[f], rows[i].rawPlain)
		}
	}
	me := newMeasEncoder()
	for f, samples := range mSamples {
		for _, ms := range samples {
			// The samples are taken before the QARTOD tests run: they get the quality
			// most values will have, so that the dictionary holds its bytes too.
			ms = slices.Clone(ms)
			for i := range ms {
				if ms[i].QC == nil {
					ms[i].QC = &canon.QC{Flag: canon.FlagPass, Failed: []string{}}
				}
			}
			j, err := me.encode(nil, ms, nil)
			if err != nil {
				return fmt.Errorf("ingest: measurements of format %s: %w", f, err)
			}
			mJSON[f] = append(mJSON[f], j)
		}
	}
	var err error
	for f, samples := range mJSON {
		if mDict[f], err = s.dict(ctx, "m:"+f, samples); err != nil {
			return err
		}
	}
	for f, samples := range rawSamples {
		if rawDict[f], err = s.dict(ctx, "raw:"+f, samples); err != nil {
			return err
		}
	}
	for i := range rows {
		r := &rows[i]
		r.mDict = mDict[r.format]
		if len(r.rawPlain) > 0 {
			if r.rawDict = rawDict[r.format]; r.rawDict == 0 {
				return fmt.Errorf("ingest: raw format %s of %s has no dictionary entry", r.format, extKeys[i])
			}
		}
	}
	return nil
}

// parallelMin runs fn over [0, n) in contiguous chunks on every CPU once n reaches least
// (units of work worth a goroutine); smaller inputs run inline.
func parallelMin(n, least int, fn func(lo, hi int) error) error {
	workers := runtime.GOMAXPROCS(0)
	if n < least || workers < 2 {
		return fn(0, n)
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	chunk := (n + workers - 1) / workers
	for w := 0; w < workers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, n)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = fn(lo, hi)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// tsSpan is the range of timestamps a batch holds for one station.
type tsSpan struct{ lo, hi int64 }

// stationSpans gives each station of rows the range of its rows' timestamps: the stored-key
// lookups of both dialects read only those ranges.
func stationSpans(rows []row) map[int32]tsSpan {
	spans := map[int32]tsSpan{}
	for _, r := range rows {
		sp, ok := spans[r.station]
		if !ok {
			sp = tsSpan{r.ts, r.ts}
		}
		sp.lo, sp.hi = min(sp.lo, r.ts), max(sp.hi, r.ts)
		spans[r.station] = sp
	}
	return spans
}
