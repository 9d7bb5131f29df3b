// Package storemetrics times and traces every call of the gateway's catalog store
// (sensorgate_store_query_duration_seconds, spans); its tests also keep the Grafana
// dashboard and alert rules in deploy/ to the metrics the binaries register. The request
// metrics, logs and tracing themselves are pkg/obs.
package storemetrics

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	shared "github.com/sensorgate/sensorgate/pkg/obs"
)

// Instrument returns s with every call timed in sensorgate_store_query_duration_seconds
// (store "catalog", op the method) and traced as a child span of the request in its
// context. Not found and already exists are answers, not failures: they count as ok.
// m nil returns s unchanged.
func Instrument(s catalog.Store, m *shared.Metrics) catalog.Store {
	if m == nil {
		return s
	}
	return &instrumentedStore{s: s, m: m}
}

type instrumentedStore struct {
	s catalog.Store
	m *shared.Metrics
}

var _ catalog.Store = (*instrumentedStore)(nil)

// failure hides the expected answers from the error series.
func failure(err error) error {
	if errors.Is(err, catalog.ErrNotFound) || errors.Is(err, catalog.ErrConflict) {
		return nil
	}
	return err
}

// Close implements catalog.Store.
func (i *instrumentedStore) Close() error { return i.s.Close() }

// Ping implements catalog.Store.
func (i *instrumentedStore) Ping(ctx context.Context) error {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "ping")
	err := i.s.Ping(ctx)
	done(failure(err))
	return err
}

// ListSensors implements catalog.Store.
func (i *instrumentedStore) ListSensors(ctx context.Context, f catalog.SensorFilter) (catalog.SensorPage, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "list_sensors")
	v, err := i.s.ListSensors(ctx, f)
	done(failure(err))
	return v, err
}

// AreaSensors implements catalog.Store.
func (i *instrumentedStore) AreaSensors(ctx context.Context, f catalog.SensorFilter) (catalog.SensorPage, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "area_sensors")
	v, err := i.s.AreaSensors(ctx, f)
	done(failure(err))
	return v, err
}

// LastReadingTimes implements catalog.Store.
func (i *instrumentedStore) LastReadingTimes(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]time.Time, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "last_reading_times")
	v, err := i.s.LastReadingTimes(ctx, ids)
	done(failure(err))
	return v, err
}

// SensorTypes implements catalog.Store.
func (i *instrumentedStore) SensorTypes(ctx context.Context) ([]string, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "sensor_types")
	v, err := i.s.SensorTypes(ctx)
	done(failure(err))
	return v, err
}

// SensorStatuses implements catalog.Store.
func (i *instrumentedStore) SensorStatuses(ctx context.Context) ([]string, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "sensor_statuses")
	v, err := i.s.SensorStatuses(ctx)
	done(failure(err))
	return v, err
}

// Sensor implements catalog.Store.
func (i *instrumentedStore) Sensor(ctx context.Context, id uuid.UUID) (catalog.Sensor, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "sensor")
	v, err := i.s.Sensor(ctx, id)
	done(failure(err))
	return v, err
}

// SensorByExternalID implements catalog.Store.
func (i *instrumentedStore) SensorByExternalID(ctx context.Context, externalID string) (catalog.Sensor, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "sensor_by_external_id")
	v, err := i.s.SensorByExternalID(ctx, externalID)
	done(failure(err))
	return v, err
}

// Services implements catalog.Store.
func (i *instrumentedStore) Services(ctx context.Context) ([]catalog.Service, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "services")
	v, err := i.s.Services(ctx)
	done(failure(err))
	return v, err
}

// Service implements catalog.Store.
func (i *instrumentedStore) Service(ctx context.Context, id string) (catalog.Service, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "service")
	v, err := i.s.Service(ctx, id)
	done(failure(err))
	return v, err
}

// SetServiceStatus implements catalog.Store.
func (i *instrumentedStore) SetServiceStatus(ctx context.Context, id, status string, at time.Time) error {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "set_service_status")
	err := i.s.SetServiceStatus(ctx, id, status, at)
	done(failure(err))
	return err
}

// ListProjects implements catalog.Store.
func (i *instrumentedStore) ListProjects(ctx context.Context, f catalog.ProjectFilter) ([]catalog.Project, int, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "list_projects")
	v, n, err := i.s.ListProjects(ctx, f)
	done(failure(err))
	return v, n, err
}

// Project implements catalog.Store.
func (i *instrumentedStore) Project(ctx context.Context, idOrSlug string) (catalog.Project, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "project")
	v, err := i.s.Project(ctx, idOrSlug)
	done(failure(err))
	return v, err
}

// Sync implements catalog.Store.
func (i *instrumentedStore) Sync(ctx context.Context, b catalog.SyncBatch) (catalog.SyncResult, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "sync")
	v, err := i.s.Sync(ctx, b)
	done(failure(err))
	return v, err
}

// CreateUser implements catalog.Store.
func (i *instrumentedStore) CreateUser(ctx context.Context, u catalog.User) (catalog.User, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "create_user")
	v, err := i.s.CreateUser(ctx, u)
	done(failure(err))
	return v, err
}

// User implements catalog.Store.
func (i *instrumentedStore) User(ctx context.Context, id uuid.UUID) (catalog.User, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "user")
	v, err := i.s.User(ctx, id)
	done(failure(err))
	return v, err
}

// CreateProject implements catalog.Store.
func (i *instrumentedStore) CreateProject(ctx context.Context, p catalog.Project) (catalog.Project, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "create_project")
	v, err := i.s.CreateProject(ctx, p)
	done(failure(err))
	return v, err
}

// CreateKey implements catalog.Store.
func (i *instrumentedStore) CreateKey(ctx context.Context, k catalog.APIKey) (catalog.APIKey, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "create_key")
	v, err := i.s.CreateKey(ctx, k)
	done(failure(err))
	return v, err
}

// KeyByHash implements catalog.Store.
func (i *instrumentedStore) KeyByHash(ctx context.Context, hash []byte) (catalog.APIKey, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "key_by_hash")
	v, err := i.s.KeyByHash(ctx, hash)
	done(failure(err))
	return v, err
}

// Keys implements catalog.Store.
func (i *instrumentedStore) Keys(ctx context.Context) ([]catalog.APIKey, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "keys")
	v, err := i.s.Keys(ctx)
	done(failure(err))
	return v, err
}

// RevokeKey implements catalog.Store.
func (i *instrumentedStore) RevokeKey(ctx context.Context, idOrPrefix string, at time.Time) (catalog.APIKey, error) {
	ctx, done := i.m.StoreQuery(ctx, "catalog", "revoke_key")
	v, err := i.s.RevokeKey(ctx, idOrPrefix, at)
	done(failure(err))
	return v, err
}
