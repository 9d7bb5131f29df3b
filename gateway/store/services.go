package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sensorgate/sensorgate/gateway/catalog"
)

const serviceColumns = `id, name, description, domain, temporal_pattern, port, status, url, version,
	providers, feeds, tools, sensor_count, last_ingest_at, last_probe_at, last_sync_at`

func scanService(r rowScanner) (catalog.Service, error) {
	var (
		sv                        catalog.Service
		providers, feeds, tools   string
		lastIngest, probe, synced sql.NullTime
	)
	err := r.Scan(&sv.ID, &sv.Name, &sv.Description, &sv.Domain, &sv.TemporalPattern, &sv.Port, &sv.Status,
		&sv.URL, &sv.Version, &providers, &feeds, &tools, &sv.SensorCount, &lastIngest, &probe, &synced)
	if err != nil {
		return sv, fmt.Errorf("store: scan service: %w", err)
	}
	for _, f := range []struct {
		raw string
		dst *[]string
	}{{providers, &sv.Providers}, {feeds, &sv.Feeds}, {tools, &sv.Tools}} {
		if err := json.Unmarshal([]byte(f.raw), f.dst); err != nil {
			return sv, fmt.Errorf("store: service %s: list %q: %w", sv.ID, f.raw, err)
		}
		if *f.dst == nil {
			*f.dst = []string{}
		}
	}
	sv.LastIngestAt = nullTime(lastIngest)
	sv.LastProbeAt = nullTime(probe)
	sv.LastSyncAt = nullTime(synced)
	return sv, nil
}

// Services lists the known services ordered by id.
func (s *Store) Services(ctx context.Context) ([]catalog.Service, error) {
	out, err := queryRows(s.db.WithContext(ctx).Raw("SELECT "+serviceColumns+" FROM services ORDER BY id"), scanService)
	if err != nil {
		return nil, fmt.Errorf("store: list services: %w", err)
	}
	return out, nil
}

// Service returns one service by id.
func (s *Store) Service(ctx context.Context, id string) (catalog.Service, error) {
	if err := checkText("id", id); err != nil {
		return catalog.Service{}, err
	}
	sv, err := scanService(s.db.WithContext(ctx).Raw("SELECT "+serviceColumns+" FROM services WHERE id = ?", id).Row())
	if errors.Is(err, sql.ErrNoRows) {
		return sv, fmt.Errorf("service %q: %w", id, catalog.ErrNotFound)
	}
	return sv, err
}

// SetServiceStatus records the result of a health probe.
func (s *Store) SetServiceStatus(ctx context.Context, id, status string, at time.Time) error {
	if status == "" {
		return errors.New("store: set status of service: empty status")
	}
	res := s.db.WithContext(ctx).Exec("UPDATE services SET status = ?, last_probe_at = ? WHERE id = ?", status, at.UTC(), id)
	if res.Error != nil {
		return fmt.Errorf("store: set status of service %q: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("service %q: %w", id, catalog.ErrNotFound)
	}
	return nil
}

// UpsertService records a configured service before its first sync, so that it is listed
// (status down) even when it has never answered. The fields of a later Sync win.
func (s *Store) UpsertService(ctx context.Context, sv catalog.Service) error {
	if sv.ID == "" {
		return errors.New("store: upsert service: empty id")
	}
	status := sv.Status
	if status == "" {
		status = "down"
	}
	err := s.db.WithContext(ctx).Exec(`INSERT INTO services (id, name, description, domain, temporal_pattern, port, status, url)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET url = excluded.url`,
		sv.ID, sv.Name, sv.Description, sv.Domain, sv.TemporalPattern, sv.Port, status, sv.URL).Error
	if err != nil {
		return fmt.Errorf("store: upsert service %q: %w", sv.ID, err)
	}
	return nil
}

func jsonArray(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v) // a []string always marshals
	return string(b)
}
