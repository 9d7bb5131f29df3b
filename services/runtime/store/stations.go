package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/observation"
)

// stationKey is the identity of a station within its service: the provider's external id,
// byte for byte. Ids are never case-folded: OpenAQ has two locations "21 de Mayo" and
// "21 de mayo", which are two stations; each adapter spells its provider's ids canonically
// (NDBC upper-case) before they get here. The column is stations.external_key.
func stationKey(externalID string) string { return externalID }

// mergeStations combines the batch's station metadata with what its observations show
// (parameters, location) into the stations to upsert.
func (s *sqlStore) mergeStations(ctx context.Context, b Batch) ([]contract.Station, error) {
	byKey := map[string]*contract.Station{}
	var order []string
	add := func(st contract.Station) *contract.Station {
		u := stationKey(st.ExternalID)
		if cur, ok := byKey[u]; ok {
			return cur
		}
		c := st
		byKey[u] = &c
		order = append(order, u)
		return &c
	}
	for _, st := range b.Stations {
		if err := contract.ValidExternalID(st.ExternalID); err != nil {
			return nil, fmt.Errorf("ingest: station %q: %w", st.ExternalID, err)
		}
		add(st)
	}
	stored, err := s.storedStations(ctx, b, byKey)
	if err != nil {
		return nil, err
	}
	for _, o := range b.Observations {
		if err := contract.ValidExternalID(o.StationID); err != nil {
			return nil, fmt.Errorf("ingest: observation station %q: %w", o.StationID, err)
		}
		if o.Time.IsZero() {
			return nil, fmt.Errorf("ingest: observation of %q has no time", o.StationID)
		}
		u := stationKey(o.StationID)
		st, ok := byKey[u]
		if !ok {
			if cur, found := stored[u]; found {
				st = add(cur.Station)
			} else {
				st = add(contract.Station{ExternalID: o.StationID, Name: o.StationID})
			}
		}
		if st.Status == observation.StatusNeverReported {
			st.Status = observation.StatusActive // reports in this batch
		}
		for _, m := range o.Measurements {
			if !contains(st.DataTypes, m.Parameter) {
				st.DataTypes = append(st.DataTypes, m.Parameter)
			}
		}
		if st.Latitude == nil && o.Lat != nil && o.Lon != nil {
			st.Latitude, st.Longitude = o.Lat, o.Lon
		}
	}
	sort.Strings(order) // the lock order of upsertStation
	out := make([]contract.Station, 0, len(order))
	for _, u := range order {
		st := *byKey[u]
		st.ProviderSlug = cmp.Or(st.ProviderSlug, b.Provider)
		st.FeedSlug = cmp.Or(st.FeedSlug, b.Feed, b.Provider)
		st.Name = cmp.Or(st.Name, st.ExternalID)
		st.Status = cmp.Or(st.Status, "active")
		out = append(out, st)
	}
	return out, nil
}

// storedStations reads, in one query per 500, the stored rows of the stations that the
// batch's observations name and its station list does not.
func (s *sqlStore) storedStations(ctx context.Context, b Batch, listed map[string]*contract.Station) (map[string]stationRec, error) {
	var extKeys []any
	seen := map[string]bool{}
	for _, o := range b.Observations {
		u := stationKey(o.StationID)
		if listed[u] == nil && !seen[u] {
			seen[u] = true
			extKeys = append(extKeys, u)
		}
	}
	return s.stationsByKey(ctx, s.d.query, extKeys, "")
}

// stationsByKey reads the stored stations whose external ids are extKeys with
// query, 500 ids a statement (PostgreSQL and SQLite bound the parameters of one), suffix
// ending each statement (an ORDER BY and a lock).
func (s *sqlStore) stationsByKey(ctx context.Context, query func(context.Context, string, ...any) (rowsIter, error), extKeys []any, suffix string) (map[string]stationRec, error) {
	out := make(map[string]stationRec, len(extKeys))
	const chunk = 500
	for start := 0; start < len(extKeys); start += chunk {
		part := extKeys[start:min(start+chunk, len(extKeys))]
		rows, err := query(ctx, s.q(`SELECT `+stationCols+` FROM stations WHERE external_key IN (?`+
			strings.Repeat(", ?", len(part)-1)+`)`+suffix), part...)
		if err != nil {
			return nil, fmt.Errorf("ingest: read stations: %w", err)
		}
		for rows.Next() {
			r, err := scanStation(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("ingest: read stations: %w", err)
			}
			out[stationKey(r.ExternalID)] = r
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("ingest: read stations: %w", err)
		}
	}
	return out, nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// fillGaps adds the data types of o that st lacks and takes o's position, description,
// sensor type, deployment date and reporting interval where st has none.
func fillGaps(st *contract.Station, o contract.Station) {
	for _, p := range o.DataTypes {
		if !contains(st.DataTypes, p) {
			st.DataTypes = append(st.DataTypes, p)
		}
	}
	if st.Latitude == nil {
		st.Latitude, st.Longitude = o.Latitude, o.Longitude
	}
	st.Description = cmp.Or(st.Description, o.Description)
	st.SensorType = cmp.Or(st.SensorType, o.SensorType)
	st.DeploymentDate = cmp.Or(st.DeploymentDate, o.DeploymentDate)
	st.ReportingIntervalS = cmp.Or(st.ReportingIntervalS, o.ReportingIntervalS)
}

// lockStations reads and locks the stored rows of stations in one query. Rows are locked
// before any reading is written, and batches lock their stations in one order (by id,
// as are the inserts of new ones that follow), so replicas writing the same stations
// queue up instead of deadlocking on each other's readings.
func (s *sqlStore) lockStations(ctx context.Context, tx txn, stations []contract.Station) (map[string]stationRec, error) {
	extKeys := make([]any, len(stations))
	for i, st := range stations {
		extKeys[i] = stationKey(st.ExternalID)
	}
	return s.stationsByKey(ctx, tx.query, extKeys, ` ORDER BY external_key`+s.d.forUpdate)
}

// upsertStation writes st unless the stored row already says the same, keeping the stored
// data types that st lacks (a station never forgets a parameter it reported). It returns
// the station key and whether anything changed (which moves updated_at, the cursor of the
// gateway's incremental sync).
func (s *sqlStore) upsertStation(ctx context.Context, tx txn, st contract.Station, cur stationRec, exists, authoritative bool) (int32, contract.Station, bool, error) {
	extKey := stationKey(st.ExternalID)
	if exists && !authoritative {
		in := st
		st = cur.Station
		st.DataTypes = append([]string(nil), cur.DataTypes...)
		fillGaps(&st, in)
		if st.Name == "" || st.Name == st.ExternalID {
			st.Name = in.Name
		}
		if st.Status == "" || (st.Status == observation.StatusNeverReported && in.Status == observation.StatusActive) {
			st.Status = in.Status // first reading of a station known from metadata
		}
	}
	if exists {
		fillGaps(&st, cur.Station)
		if st.Name == st.ExternalID && cur.Name != "" {
			st.Name = cur.Name
		}
	}
	// A station with a reading, stored or in this batch, has reported: metadata that calls
	// it never_reported (every metadata-only payload does) does not take that back.
	if st.Status == observation.StatusNeverReported && (st.LastReadingAt != nil || (exists && cur.LastReadingAt != nil)) {
		st.Status = observation.StatusActive
	}
	sort.Strings(st.DataTypes)
	if st.DataTypes == nil {
		st.DataTypes = []string{}
	}
	if exists && sameStation(cur.Station, st) {
		return cur.key, st, false, nil
	}
	dt, _ := json.Marshal(st.DataTypes)
	var lat, lon any
	if st.Latitude != nil && st.Longitude != nil {
		lat, lon = *st.Latitude, *st.Longitude
	}
	var decom any
	if st.DecommissionedDate != nil {
		decom = *st.DecommissionedDate
	}
	args := []any{st.ExternalID, extKey, st.ProviderSlug, st.FeedSlug, st.Name, st.Description, st.SensorType, st.Status,
		string(dt), st.DeploymentDate, decom, lat, lon, st.ReportingIntervalS, s.now().UnixMilli()}
	var key int32
	err := tx.queryRow(ctx, s.q(`INSERT INTO stations (external_id, external_key, provider, feed, name, description, sensor_type,
		status, data_types, deployment_date, decommissioned_date, latitude, longitude, reporting_interval_s, updated_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (external_key) DO UPDATE SET external_id = excluded.external_id, provider = excluded.provider,
		feed = excluded.feed, name = excluded.name, description = excluded.description, sensor_type = excluded.sensor_type,
		status = excluded.status, data_types = excluded.data_types, deployment_date = excluded.deployment_date,
		decommissioned_date = excluded.decommissioned_date, latitude = excluded.latitude, longitude = excluded.longitude,
		reporting_interval_s = excluded.reporting_interval_s, updated_ms = excluded.updated_ms
		RETURNING skey`), args...).Scan(&key)
	if err != nil {
		return 0, st, false, fmt.Errorf("ingest: upsert station %q: %w", st.ExternalID, err)
	}
	return key, st, true, nil
}

func sameStation(a, b contract.Station) bool {
	eqf := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqs := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	if len(a.DataTypes) != len(b.DataTypes) {
		return false
	}
	for i := range a.DataTypes {
		if a.DataTypes[i] != b.DataTypes[i] {
			return false
		}
	}
	return a.ExternalID == b.ExternalID && a.ProviderSlug == b.ProviderSlug && a.FeedSlug == b.FeedSlug &&
		a.Name == b.Name && a.Description == b.Description && a.SensorType == b.SensorType && a.Status == b.Status &&
		a.DeploymentDate == b.DeploymentDate && eqs(a.DecommissionedDate, b.DecommissionedDate) &&
		eqf(a.Latitude, b.Latitude) && eqf(a.Longitude, b.Longitude) && a.ReportingIntervalS == b.ReportingIntervalS
}
