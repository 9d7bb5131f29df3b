package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// MaxLatestBatch bounds the stations of one LatestReadings call (the gateway's area latest
// asks for at most one answer page, 5,000 sensors, per service).
const MaxLatestBatch = 5000

// StationLatest is a station and its newest reading (nil when it never reported), as the
// batch answer needs them: the station's ExternalID, ProviderSlug, ReportingIntervalS and
// LastReadingAt only, the reading without its ID and Raw.
type StationLatest struct {
	Station contract.Station
	Reading *Reading
}

// LatestReadings implements Reader: one query joins each named station to the reading at
// its last_reading_ms (which ingest and prune keep equal to its newest stored reading), so
// N stations cost one statement of N primary-key probes, not N round trips. Readings whose
// values sit in blocks are then filled with one more query for all their blocks.
func (s *sqlStore) LatestReadings(ctx context.Context, externalIDs []string) ([]StationLatest, error) {
	if len(externalIDs) == 0 {
		return []StationLatest{}, nil
	}
	if len(externalIDs) > MaxLatestBatch {
		return nil, fmt.Errorf("latest readings: %d stations asked, at most %d", len(externalIDs), MaxLatestBatch)
	}
	keys := make([]string, 0, len(externalIDs))
	seen := make(map[string]bool, len(externalIDs))
	for _, id := range externalIDs {
		u := stationKey(id)
		if !seen[u] {
			seen[u] = true
			keys = append(keys, u)
		}
	}
	// Only the station columns the batch answer uses (4 of stationCols' 17: the whole
	// station row was a third of the call, docs/live.md "Area latest").
	const cols = `SELECT stations.external_id, stations.provider, stations.reporting_interval_s, stations.last_reading_ms,
	r.ts, r.fetched_ms, r.lat, r.lon, r.measurements
	FROM stations LEFT JOIN readings r ON r.station = stations.skey AND r.ts = stations.last_reading_ms WHERE `
	var (
		rows rowsIter
		err  error
	)
	if s.d.name == "postgres" {
		rows, err = s.d.query(ctx, s.q(cols+`stations.external_key = ANY(?) ORDER BY stations.external_key`), keys)
	} else {
		list, jerr := json.Marshal(keys)
		if jerr != nil {
			return nil, fmt.Errorf("latest readings: %w", jerr)
		}
		rows, err = s.d.query(ctx, cols+`stations.external_key IN (SELECT value FROM json_each(?)) ORDER BY stations.external_key`, string(list))
	}
	if err != nil {
		return nil, fmt.Errorf("latest readings: %w", err)
	}
	defer rows.Close()
	out := make([]StationLatest, 0, len(keys))
	var (
		refs    []int64 // block reference of out[i]'s reading, 0 when inline or none
		missing []int   // stations whose last_reading_ms names no stored row
	)
	for rows.Next() {
		var (
			st          contract.Station
			last        sql.NullInt64
			ts, fetched sql.NullInt64
			lat, lon    sql.NullFloat64
			m           []byte
		)
		if err := rows.Scan(&st.ExternalID, &st.ProviderSlug, &st.ReportingIntervalS, &last, &ts, &fetched, &lat, &lon, &m); err != nil {
			return nil, fmt.Errorf("latest readings: %w", err)
		}
		if last.Valid {
			st.LastReadingAt = &contract.Time{Time: time.UnixMilli(last.Int64).UTC()}
		}
		sl := StationLatest{Station: st}
		refs = append(refs, 0)
		if !ts.Valid {
			if st.LastReadingAt != nil {
				missing = append(missing, len(out))
			}
			out = append(out, sl)
			continue
		}
		t := time.UnixMilli(ts.Int64).UTC()
		r := &Reading{StationID: st.ExternalID, Time: t, FetchedAt: time.UnixMilli(fetched.Int64).UTC(), Provider: st.ProviderSlug}
		if lat.Valid && lon.Valid {
			r.Lat, r.Lon = &lat.Float64, &lon.Float64
		}
		if ref, inBlock := parseBlockRef(m); inBlock {
			refs[len(refs)-1] = ref
		} else if err := s.fillInline(ctx, r, m, nil, nil, false); err != nil {
			return nil, fmt.Errorf("latest reading of %q: %w", st.ExternalID, err)
		}
		sl.Reading = r
		out = append(out, sl)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("latest readings: %w", err)
	}
	rows.Close()
	if err := s.fillLatestBlocks(ctx, out, refs); err != nil {
		return nil, err
	}
	// A counter ahead of the rows (a prune racing this read) falls back to the one-station
	// path, which reads the newest stored row whatever the counter says.
	for _, i := range missing {
		r, err := s.LatestReading(ctx, out[i].Station.ExternalID)
		switch {
		case err == nil:
			r.ID, r.Raw, r.RawFormat = uuid.UUID{}, nil, ""
			out[i].Reading = &r
		case !isMiss(err):
			return nil, err
		}
	}
	return out, nil
}

func isMiss(err error) bool {
	return errors.Is(err, ErrNoReadings) || errors.Is(err, ErrStationNotFound)
}

// fillLatestBlocks reads every block that the readings of out point into with one query.
func (s *sqlStore) fillLatestBlocks(ctx context.Context, out []StationLatest, refs []int64) error {
	blocks, err := s.readBlocks(ctx, refs, func(i int) time.Time { return out[i].Reading.Time }, false)
	if err != nil {
		return fmt.Errorf("latest readings: %w", err)
	}
	for i, ref := range refs {
		if ref == 0 {
			continue
		}
		b, idx, err := blockAt(blocks, ref)
		if err != nil {
			return fmt.Errorf("latest reading of %q: %w", out[i].Station.ExternalID, err)
		}
		out[i].Reading.Measurements = withQC(b.measurements[idx])
	}
	return nil
}
