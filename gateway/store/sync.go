package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/ids"
)

// SystemUserID owns the projects that catalog sync creates: a UUIDv5 in the ids namespace,
// the same in every environment.
var SystemUserID = uuid.NewSHA1(ids.Namespace, []byte("user:system"))

// SystemUserName is the display name of SystemUserID.
const SystemUserName = "sensorgate system"

// sensorBatchRows bounds the rows of one multi-row INSERT (24 parameters a row stays under
// both databases' parameter limits).
const sensorBatchRows = 500

// existingSensor is what Sync needs to know about a stored sensor to classify an incoming one.
type existingSensor struct {
	hash        string
	missing     bool
	lastReading string
}

// Sync applies one round of a service's catalog in one transaction: the service record,
// its providers and projects (owned by the system user, public), and its sensors, each
// inserted, updated or left alone by comparing a hash of its content. With b.Full, the
// service's sensors absent from the batch are marked missing (status inactive, never
// deleted); a sensor that comes back is unmarked. A change that can move a sensor in or
// out of a list, or within one, bumps the catalog generation, which invalidates every
// replica's cached totals and match lists; a new last_reading_at alone does not, so that
// services reporting fresh readings every round leave the caches warm.
func (s *Store) Sync(ctx context.Context, b catalog.SyncBatch) (catalog.SyncResult, error) {
	var res catalog.SyncResult
	if err := validateBatch(&b); err != nil {
		return res, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res = catalog.SyncResult{}
		if s.d.postgres {
			// Two replicas syncing the same service take turns instead of racing.
			h := fnv.New64a()
			h.Write([]byte("sync:" + b.Service.ID))
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", int64(h.Sum64())).Error; err != nil {
				return fmt.Errorf("store: sync %s: lock: %w", b.Service.ID, err)
			}
		}
		if err := ensureSystemUser(tx, now); err != nil {
			return err
		}
		if err := upsertService(tx, b.Service, now); err != nil {
			return err
		}
		providers, changedProviders, err := s.syncProviders(tx, b.Providers, now)
		if err != nil {
			return err
		}
		projects, changedProjects, err := s.syncProjects(tx, b.Service.ID, b.Projects, providers, now)
		if err != nil {
			return err
		}
		changed, refreshed := false, false
		if len(changedProviders)+len(changedProjects) > 0 {
			n, err := s.refreshDenormalized(tx, changedProviders, changedProjects, now)
			if err != nil {
				return err
			}
			changed, refreshed = n > 0, n > 0
		}
		listed, err := s.syncSensors(tx, b, providers, projects, now, &res)
		if err != nil {
			return err
		}
		changed = changed || listed
		if changed || len(b.Projects) > 0 {
			if err := updateCounts(tx, b.Service.ID); err != nil {
				return err
			}
		}
		if changed {
			// A rename may have changed the provider slug of other services' sensors.
			ids := []string{b.Service.ID}
			if refreshed {
				ids = nil
			}
			if err := s.d.rebuildFacets(tx, ids); err != nil {
				return err
			}
			if err := tx.Exec("UPDATE catalog_state SET generation = generation + 1 WHERE id = 1").Error; err != nil {
				return fmt.Errorf("store: bump catalog generation: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return catalog.SyncResult{}, err
	}
	return res, nil
}

// validateBatch fills derivable ids and rejects what the database would reject later with
// a less helpful message.
func validateBatch(b *catalog.SyncBatch) error {
	if b.Service.ID == "" {
		return errors.New("store: sync: batch has no service id")
	}
	// The ids filled in below must not leak into the caller's slices.
	b.Providers, b.Projects, b.Sensors = slices.Clone(b.Providers), slices.Clone(b.Projects), slices.Clone(b.Sensors)
	for i := range b.Providers {
		p := &b.Providers[i]
		if p.Slug == "" {
			return fmt.Errorf("store: sync %s: provider #%d has no slug", b.Service.ID, i)
		}
		if p.ID == uuid.Nil {
			p.ID = ids.Provider(p.Slug)
		}
	}
	for i := range b.Projects {
		p := &b.Projects[i]
		if p.Slug == "" {
			return fmt.Errorf("store: sync %s: project #%d has no slug", b.Service.ID, i)
		}
		if p.ID == uuid.Nil {
			p.ID = ids.Feed(p.Slug)
		}
		if p.ProviderID == nil && p.ProviderSlug != "" {
			id := ids.Provider(p.ProviderSlug)
			p.ProviderID = &id
		}
	}
	seen := make(map[uuid.UUID]string, len(b.Sensors))
	for i := range b.Sensors {
		sn := &b.Sensors[i]
		if sn.ExternalID == "" {
			return fmt.Errorf("store: sync %s: sensor #%d has no external id", b.Service.ID, i)
		}
		if sn.ServiceID == "" {
			sn.ServiceID = b.Service.ID
		}
		if sn.ServiceID != b.Service.ID {
			return fmt.Errorf("store: sync %s: sensor %q belongs to service %q", b.Service.ID, sn.ExternalID, sn.ServiceID)
		}
		if sn.ID == uuid.Nil {
			sn.ID = ids.Sensor(b.Service.ID, sn.ExternalID)
		}
		if prev, dup := seen[sn.ID]; dup {
			return fmt.Errorf("store: sync %s: sensor %q listed twice (also as %q)", b.Service.ID, sn.ExternalID, prev)
		}
		seen[sn.ID] = sn.ExternalID
		if sn.ProviderID == nil && sn.ProviderSlug != "" {
			id := ids.Provider(sn.ProviderSlug)
			sn.ProviderID = &id
		}
		if sn.FeedID == nil && sn.FeedSlug != "" {
			id := ids.Feed(sn.FeedSlug)
			sn.FeedID = &id
		}
		if sn.Status == "" {
			sn.Status = catalog.StatusActive
		}
		if (sn.Latitude == nil) != (sn.Longitude == nil) {
			return fmt.Errorf("store: sync %s: sensor %q has only one of latitude and longitude", b.Service.ID, sn.ExternalID)
		}
	}
	return nil
}

func ensureSystemUser(tx *gorm.DB, now time.Time) error {
	err := tx.Exec("INSERT INTO users (id, name, email, created_at) VALUES (?, ?, '', ?) ON CONFLICT (id) DO NOTHING",
		SystemUserID, SystemUserName, now).Error
	if err != nil {
		return fmt.Errorf("store: create system user: %w", err)
	}
	return nil
}

// upsertService writes what a service says about itself. Its status is taken only until
// the first health probe: from then on the prober owns it (SetServiceStatus), and a sync
// carrying the service's own opinion must not undo the last probe.
func upsertService(tx *gorm.DB, sv catalog.Service, now time.Time) error {
	status := sv.Status
	if status == "" {
		status = catalog.StatusActive
	}
	err := tx.Exec(`INSERT INTO services (id, name, description, domain, temporal_pattern, port, status, url,
		version, providers, feeds, tools, last_ingest_at, last_sync_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, description = excluded.description,
		domain = excluded.domain, temporal_pattern = excluded.temporal_pattern, port = excluded.port,
		status = CASE WHEN services.last_probe_at IS NULL THEN excluded.status ELSE services.status END,
		url = CASE WHEN excluded.url = '' THEN services.url ELSE excluded.url END,
		version = excluded.version, providers = excluded.providers, feeds = excluded.feeds, tools = excluded.tools,
		last_ingest_at = excluded.last_ingest_at, last_sync_at = excluded.last_sync_at`,
		sv.ID, sv.Name, sv.Description, sv.Domain, sv.TemporalPattern, sv.Port, status, sv.URL, sv.Version,
		jsonArray(sv.Providers), jsonArray(sv.Feeds), jsonArray(sv.Tools), sv.LastIngestAt, now).Error
	if err != nil {
		return fmt.Errorf("store: sync service %s: %w", sv.ID, err)
	}
	return nil
}

// syncProviders upserts the batch's providers and returns every provider the sensors may
// name (the batch's and the stored ones) and the ids of those whose name or slug changed.
func (s *Store) syncProviders(tx *gorm.DB, in []catalog.Provider, now time.Time) (map[uuid.UUID]catalog.Provider, []uuid.UUID, error) {
	all := map[uuid.UUID]catalog.Provider{}
	err := eachRow(tx.Raw("SELECT id, slug, name, description, url, license FROM providers"), func(r rowScanner) error {
		var p catalog.Provider
		if err := r.Scan(&p.ID, &p.Slug, &p.Name, &p.Description, &p.URL, &p.License); err != nil {
			return err
		}
		all[p.ID] = p
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: read providers: %w", err)
	}
	var renamed []uuid.UUID
	for _, p := range in {
		old, ok := all[p.ID]
		if ok && old == p {
			continue
		}
		if ok && (old.Name != p.Name || old.Slug != p.Slug) {
			renamed = append(renamed, p.ID)
		}
		err := tx.Exec(`INSERT INTO providers (id, slug, name, description, url, license, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET slug = excluded.slug, name = excluded.name,
			description = excluded.description, url = excluded.url, license = excluded.license,
			updated_at = excluded.updated_at`,
			p.ID, p.Slug, p.Name, p.Description, p.URL, p.License, now).Error
		if err != nil {
			return nil, nil, fmt.Errorf("store: sync provider %q: %w", p.Slug, err)
		}
		all[p.ID] = p
	}
	return all, renamed, nil
}

// syncProjects upserts the batch's projects (public, owned by the system user) and returns
// every project the sensors may name and the ids of those whose name or slug changed.
func (s *Store) syncProjects(tx *gorm.DB, serviceID string, in []catalog.Project, providers map[uuid.UUID]catalog.Provider, now time.Time) (map[uuid.UUID]catalog.Project, []uuid.UUID, error) {
	all := map[uuid.UUID]catalog.Project{}
	q := tx.Raw("SELECT id, slug, name, description, provider_id, domain, temporal_pattern, feed_type, service_id, owner_id, visibility FROM projects")
	err := eachRow(q, func(r rowScanner) error {
		var (
			p   catalog.Project
			pid uuid.NullUUID
		)
		if err := r.Scan(&p.ID, &p.Slug, &p.Name, &p.Description, &pid, &p.Domain, &p.TemporalPattern,
			&p.FeedType, &p.ServiceID, &p.OwnerID, &p.Visibility); err != nil {
			return err
		}
		if pid.Valid {
			p.ProviderID = &pid.UUID
		}
		all[p.ID] = p
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: read projects: %w", err)
	}
	var renamed []uuid.UUID
	for _, p := range in {
		if p.ProviderID != nil {
			if _, ok := providers[*p.ProviderID]; !ok {
				return nil, nil, fmt.Errorf("store: sync %s: project %q names unknown provider %s (%q)", serviceID, p.Slug, p.ProviderID, p.ProviderSlug)
			}
		}
		p.ServiceID = serviceID
		p.OwnerID = SystemUserID
		p.Visibility = catalog.VisibilityPublic
		old, ok := all[p.ID]
		if ok && sameProject(old, p) {
			continue
		}
		if ok && (old.Name != p.Name || old.Slug != p.Slug) {
			renamed = append(renamed, p.ID)
		}
		err := tx.Exec(`INSERT INTO projects (id, slug, name, description, provider_id, domain, temporal_pattern,
			feed_type, service_id, owner_id, visibility, search_text, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET slug = excluded.slug, name = excluded.name,
			description = excluded.description, provider_id = excluded.provider_id, domain = excluded.domain,
			temporal_pattern = excluded.temporal_pattern, feed_type = excluded.feed_type,
			service_id = excluded.service_id, owner_id = excluded.owner_id, visibility = excluded.visibility,
			search_text = excluded.search_text, updated_at = excluded.updated_at`,
			p.ID, p.Slug, p.Name, p.Description, p.ProviderID, p.Domain, p.TemporalPattern, p.FeedType,
			p.ServiceID, p.OwnerID, p.Visibility, projectSearchText(p), now, now).Error
		if err != nil {
			return nil, nil, fmt.Errorf("store: sync project %q: %w", p.Slug, err)
		}
		all[p.ID] = p
	}
	return all, renamed, nil
}

func sameProject(a, b catalog.Project) bool {
	return a.Slug == b.Slug && a.Name == b.Name && a.Description == b.Description &&
		uuidPtrEq(a.ProviderID, b.ProviderID) && a.Domain == b.Domain &&
		a.TemporalPattern == b.TemporalPattern && a.FeedType == b.FeedType &&
		a.ServiceID == b.ServiceID && a.OwnerID == b.OwnerID && a.Visibility == b.Visibility
}

func uuidPtrEq(a, b *uuid.UUID) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func projectSearchText(p catalog.Project) string {
	return strings.ToLower(p.Name + searchSep + p.Description + searchSep + p.Slug)
}

func sensorSearchText(sn catalog.Sensor) string {
	return strings.ToLower(sn.Name + searchSep + sn.Description + searchSep + sn.ExternalID + searchSep + sn.ProviderName)
}

// refreshDenormalized rewrites the provider and feed names copied into sensors after a
// provider or project was renamed, including sensors of other services.
func (s *Store) refreshDenormalized(tx *gorm.DB, providerIDs, projectIDs []uuid.UUID, now time.Time) (int, error) {
	type row struct {
		id                 uuid.UUID
		name, desc, extID  string
		providerID, feedID uuid.NullUUID
	}
	var conds []string
	var args []any
	if len(providerIDs) > 0 {
		conds = append(conds, "provider_id IN ?")
		args = append(args, providerIDs)
	}
	if len(projectIDs) > 0 {
		conds = append(conds, "feed_id IN ?")
		args = append(args, projectIDs)
	}
	q := tx.Raw("SELECT id, name, description, external_id, provider_id, feed_id FROM sensors WHERE "+strings.Join(conds, " OR "), args...)
	rs, err := queryRows(q, func(sc rowScanner) (row, error) {
		var r row
		err := sc.Scan(&r.id, &r.name, &r.desc, &r.extID, &r.providerID, &r.feedID)
		return r, err
	})
	if err != nil {
		return 0, fmt.Errorf("store: read renamed sensors: %w", err)
	}
	provs, err := loadSlugNames(tx, "providers")
	if err != nil {
		return 0, err
	}
	projs, err := loadSlugNames(tx, "projects")
	if err != nil {
		return 0, err
	}
	for _, r := range rs {
		sn := catalog.Sensor{Name: r.name, Description: r.desc, ExternalID: r.extID}
		if r.providerID.Valid {
			p := provs[r.providerID.UUID]
			sn.ProviderName, sn.ProviderSlug = p.name, p.slug
		}
		if r.feedID.Valid {
			p := projs[r.feedID.UUID]
			sn.FeedName, sn.FeedSlug = p.name, p.slug
		}
		err := tx.Exec("UPDATE sensors SET provider_name = ?, provider_slug = ?, feed_name = ?, feed_slug = ?, search_text = ?, updated_at = ? WHERE id = ?",
			sn.ProviderName, sn.ProviderSlug, sn.FeedName, sn.FeedSlug, sensorSearchText(sn), now, r.id).Error
		if err != nil {
			return 0, fmt.Errorf("store: refresh sensor %s: %w", r.id, err)
		}
	}
	return len(rs), nil
}

// slugName is the slug and name of a provider or project, which its sensors copy.
type slugName struct{ slug, name string }

// loadSlugNames reads the slug and name of every row of table (providers or projects), by id.
func loadSlugNames(tx *gorm.DB, table string) (map[uuid.UUID]slugName, error) {
	out := map[uuid.UUID]slugName{}
	err := eachRow(tx.Raw("SELECT id, slug, name FROM "+table), func(r rowScanner) error {
		var (
			id uuid.UUID
			n  slugName
		)
		if err := r.Scan(&id, &n.slug, &n.name); err != nil {
			return err
		}
		out[id] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", table, err)
	}
	return out, nil
}

// sensorHash covers every field Sync writes from the batch except last_reading_at, which
// is compared on its own because it changes nothing in a list; the denormalized names
// are kept right by refreshDenormalized instead.
func sensorHash(sn catalog.Sensor) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode([]any{sn.ServiceID, sn.ExternalID, sn.Name, sn.Description, sn.SensorType, sn.Status,
		sn.DataTypes, dateString(sn.DeploymentDate), dateString(sn.DecommissionedDate), sn.Latitude, sn.Longitude,
		sn.ProviderID, sn.FeedID, sn.ReportingIntervalS})
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func dateString(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.DateOnly)
	return &s
}

func timeString(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// syncSensors writes the batch's sensors and reports whether any change can affect a
// list (anything but last_reading_at).
func (s *Store) syncSensors(tx *gorm.DB, b catalog.SyncBatch, providers map[uuid.UUID]catalog.Provider, projects map[uuid.UUID]catalog.Project, now time.Time, res *catalog.SyncResult) (bool, error) {
	existing := map[uuid.UUID]existingSensor{}
	q := tx.Raw("SELECT id, content_hash, missing_since, last_reading_at FROM sensors WHERE service_id = ?", b.Service.ID)
	err := eachRow(q, func(r rowScanner) error {
		var (
			id               uuid.UUID
			h                string
			missing, reading sql.NullTime
		)
		if err := r.Scan(&id, &h, &missing, &reading); err != nil {
			return err
		}
		existing[id] = existingSensor{hash: h, missing: missing.Valid, lastReading: timeString(nullTime(reading))}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("store: read sensors of %s: %w", b.Service.ID, err)
	}

	listed := false
	var write []catalog.Sensor
	var hashes []string
	seen := make(map[uuid.UUID]bool, len(b.Sensors))
	for _, sn := range b.Sensors {
		seen[sn.ID] = true
		sn.ProviderName, sn.ProviderSlug, sn.FeedName, sn.FeedSlug = "", "", "", ""
		if sn.ProviderID != nil {
			p, ok := providers[*sn.ProviderID]
			if !ok {
				return false, fmt.Errorf("store: sync %s: sensor %q names unknown provider %s", b.Service.ID, sn.ExternalID, sn.ProviderID)
			}
			sn.ProviderName, sn.ProviderSlug = p.Name, p.Slug
		}
		if sn.FeedID != nil {
			p, ok := projects[*sn.FeedID]
			if !ok {
				return false, fmt.Errorf("store: sync %s: sensor %q names unknown feed %s", b.Service.ID, sn.ExternalID, sn.FeedID)
			}
			sn.FeedName, sn.FeedSlug = p.Name, p.Slug
		}
		h := sensorHash(sn)
		old, ok := existing[sn.ID]
		switch {
		case !ok:
			res.Inserted++
			listed = true
		case old.hash != h || old.missing:
			res.Updated++
			listed = true
		case old.lastReading != timeString(utcPtr(sn.LastReadingAt)):
			res.Updated++
		default:
			res.Unchanged++
			continue
		}
		write = append(write, sn)
		hashes = append(hashes, h)
	}
	for i := 0; i < len(write); i += sensorBatchRows {
		j := min(i+sensorBatchRows, len(write))
		if err := s.upsertSensors(tx, write[i:j], hashes[i:j], now); err != nil {
			return false, err
		}
	}
	if !b.Full {
		return listed, nil
	}
	var gone []uuid.UUID
	for id, e := range existing {
		if !seen[id] && !e.missing {
			gone = append(gone, id)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].String() < gone[j].String() })
	for i := 0; i < len(gone); i += 1000 {
		j := min(i+1000, len(gone))
		err := tx.Exec("UPDATE sensors SET missing_since = ?, status = ?, updated_at = ? WHERE id IN ?",
			now, catalog.StatusInactive, now, gone[i:j]).Error
		if err != nil {
			return false, fmt.Errorf("store: mark missing sensors of %s: %w", b.Service.ID, err)
		}
	}
	res.MarkedMissing = len(gone)
	return listed || len(gone) > 0, nil
}

var sensorInsertColumns = []string{"id", "service_id", "external_id", "ext_key", "name", "description", "sensor_type",
	"status", "data_types", "deployment_date", "decommissioned_date", "latitude", "longitude", "provider_id",
	"provider_name", "provider_slug", "feed_id", "feed_name", "feed_slug", "reporting_interval_s",
	"last_reading_at", "missing_since", "updated_at", "search_text", "content_hash"}

func (s *Store) upsertSensors(tx *gorm.DB, sns []catalog.Sensor, hashes []string, now time.Time) error {
	placeholders := make([]string, len(sensorInsertColumns))
	for i := range placeholders {
		placeholders[i] = "?"
	}
	placeholders[8] = s.d.arrayParam()
	rowSQL := "(" + strings.Join(placeholders, ", ") + ")"
	var sb strings.Builder
	sb.WriteString("INSERT INTO sensors (" + strings.Join(sensorInsertColumns, ", ") + ") VALUES ")
	args := make([]any, 0, len(sns)*len(sensorInsertColumns))
	for i, sn := range sns {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(rowSQL)
		dt := sn.DataTypes
		if dt == nil {
			dt = []string{}
		}
		args = append(args, sn.ID, sn.ServiceID, sn.ExternalID, sn.ExternalID, sn.Name,
			sn.Description, sn.SensorType, sn.Status, s.d.arrayValue(dt), dateString(sn.DeploymentDate),
			dateString(sn.DecommissionedDate), sn.Latitude, sn.Longitude, sn.ProviderID, sn.ProviderName,
			sn.ProviderSlug, sn.FeedID, sn.FeedName, sn.FeedSlug, sn.ReportingIntervalS, utcPtr(sn.LastReadingAt),
			nil, now, sensorSearchText(sn), hashes[i])
	}
	sb.WriteString(" ON CONFLICT (id) DO UPDATE SET ")
	var sets []string
	for _, c := range sensorInsertColumns[1:] {
		sets = append(sets, c+" = excluded."+c)
	}
	sb.WriteString(strings.Join(sets, ", "))
	if err := tx.Exec(sb.String(), args...).Error; err != nil {
		return fmt.Errorf("store: write %d sensors (first %q): %w", len(sns), sns[0].ExternalID, err)
	}
	return nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// updateCounts recomputes the sensor counts of the service and its projects; sensors
// marked missing do not count.
func updateCounts(tx *gorm.DB, serviceID string) error {
	err := tx.Exec(`UPDATE projects SET sensor_count = (SELECT count(*) FROM sensors s
		WHERE s.feed_id = projects.id AND s.missing_since IS NULL)
		WHERE service_id = ? OR id IN (SELECT DISTINCT feed_id FROM sensors WHERE service_id = ? AND feed_id IS NOT NULL)`,
		serviceID, serviceID).Error
	if err != nil {
		return fmt.Errorf("store: count sensors of projects of %s: %w", serviceID, err)
	}
	err = tx.Exec(`UPDATE services SET sensor_count = (SELECT count(*) FROM sensors s
		WHERE s.service_id = services.id AND s.missing_since IS NULL) WHERE id = ?`, serviceID).Error
	if err != nil {
		return fmt.Errorf("store: count sensors of %s: %w", serviceID, err)
	}
	return nil
}
