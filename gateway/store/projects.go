package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
)

const projectSelect = `SELECT p.id, p.slug, p.name, p.description, p.provider_id, COALESCE(pr.slug, ''),
	COALESCE(pr.name, ''), p.domain, p.temporal_pattern, p.feed_type, p.service_id, p.sensor_count,
	p.owner_id, p.visibility, p.created_at
	FROM projects p LEFT JOIN providers pr ON pr.id = p.provider_id`

func scanProject(r rowScanner) (catalog.Project, error) {
	var (
		p   catalog.Project
		pid uuid.NullUUID
	)
	err := r.Scan(&p.ID, &p.Slug, &p.Name, &p.Description, &pid, &p.ProviderSlug, &p.ProviderName, &p.Domain,
		&p.TemporalPattern, &p.FeedType, &p.ServiceID, &p.SensorCount, &p.OwnerID, &p.Visibility, &p.CreatedAt)
	if err != nil {
		return p, fmt.Errorf("store: scan project: %w", err)
	}
	if pid.Valid {
		id := pid.UUID
		p.ProviderID = &id
	}
	p.CreatedAt = p.CreatedAt.UTC()
	return p, nil
}

// ListProjects returns one page of the projects the viewer may see (public ones and its
// own private ones) that match f, ordered by name then id, and their total.
func (s *Store) ListProjects(ctx context.Context, f catalog.ProjectFilter) ([]catalog.Project, int, error) {
	if err := checkText("provider", f.Provider, "domain", f.Domain, "temporal_pattern", f.TemporalPattern, "search", f.Search, "feed_type", f.FeedType); err != nil {
		return nil, 0, err
	}
	if f.Page < 1 {
		f.Page = 1
	}
	if f.Limit <= 0 {
		f.Limit = DefaultLimit
	}
	f.Limit = min(f.Limit, MaxLimit)
	var q sensorQuery // the same WHERE builder shape
	q.add("(p.visibility = ? OR p.owner_id = ?)", catalog.VisibilityPublic, f.ViewerID)
	if f.OwnerID != nil {
		q.add("p.owner_id = ?", *f.OwnerID)
	}
	q.eq("pr.slug", f.Provider)
	q.eq("p.domain", f.Domain)
	q.eq("p.temporal_pattern", f.TemporalPattern)
	q.eq("p.feed_type", f.FeedType)
	if f.Search != "" {
		fn := "instr(p.search_text, ?)"
		if s.d.postgres {
			fn = "strpos(p.search_text, ?)"
		}
		q.add(fn+" > 0", strings.ToLower(f.Search))
	}
	db := s.db.WithContext(ctx)
	var total int64
	err := db.Raw("SELECT count(*) FROM projects p LEFT JOIN providers pr ON pr.id = p.provider_id"+q.whereSQL(), q.args...).Row().Scan(&total)
	if err != nil {
		return nil, 0, fmt.Errorf("store: count projects: %w", err)
	}
	out := []catalog.Project{}
	offset := (f.Page - 1) * f.Limit
	if int64(offset) >= total {
		return out, int(total), nil
	}
	args := append(append([]any{}, q.args...), f.Limit, offset)
	if out, err = queryRows(db.Raw(projectSelect+q.whereSQL()+" ORDER BY p.name, p.id LIMIT ? OFFSET ?", args...), scanProject); err != nil {
		return nil, 0, fmt.Errorf("store: list projects: %w", err)
	}
	return out, int(total), nil
}

// Project resolves a project by UUID or slug. Visibility is the caller's to judge.
func (s *Store) Project(ctx context.Context, idOrSlug string) (catalog.Project, error) {
	if err := checkText("id", idOrSlug); err != nil {
		return catalog.Project{}, err
	}
	db := s.db.WithContext(ctx)
	var row *sql.Row
	if id, err := uuid.Parse(idOrSlug); err == nil {
		row = db.Raw(projectSelect+" WHERE p.id = ?", id).Row()
	} else {
		row = db.Raw(projectSelect+" WHERE p.slug = ?", idOrSlug).Row()
	}
	p, err := scanProject(row)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("project %q: %w", idOrSlug, catalog.ErrNotFound)
	}
	return p, err
}

// CreateProject stores a project made by a user (for example a private development
// project). A zero ID gets a random one; a taken slug is catalog.ErrConflict.
func (s *Store) CreateProject(ctx context.Context, p catalog.Project) (catalog.Project, error) {
	if p.Slug == "" || p.Name == "" {
		return p, errors.New("store: create project: slug and name are required")
	}
	if p.OwnerID == uuid.Nil {
		return p, fmt.Errorf("store: create project %q: no owner", p.Slug)
	}
	if p.Visibility == "" {
		p.Visibility = catalog.VisibilityPrivate
	}
	if p.Visibility != catalog.VisibilityPublic && p.Visibility != catalog.VisibilityPrivate {
		return p, fmt.Errorf("store: create project %q: visibility %q is neither public nor private", p.Slug, p.Visibility)
	}
	if p.ID == uuid.Nil {
		p.ID = uuid.New()
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Now().UTC().Truncate(time.Microsecond)
	}
	db := s.db.WithContext(ctx)
	var n int64
	if err := db.Raw("SELECT count(*) FROM projects WHERE id = ? OR slug = ?", p.ID, p.Slug).Row().Scan(&n); err != nil {
		return p, fmt.Errorf("store: create project %q: %w", p.Slug, err)
	}
	if n > 0 {
		return p, fmt.Errorf("project %q: %w", p.Slug, catalog.ErrConflict)
	}
	if _, err := s.User(ctx, p.OwnerID); err != nil {
		return p, fmt.Errorf("store: create project %q: owner: %w", p.Slug, err)
	}
	err := db.Exec(`INSERT INTO projects (id, slug, name, description, provider_id, domain, temporal_pattern,
		feed_type, service_id, sensor_count, owner_id, visibility, search_text, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)`,
		p.ID, p.Slug, p.Name, p.Description, p.ProviderID, p.Domain, p.TemporalPattern, p.FeedType, p.ServiceID,
		p.OwnerID, p.Visibility, projectSearchText(p), p.CreatedAt, p.CreatedAt).Error
	if err != nil {
		if isUniqueViolation(err) {
			return p, fmt.Errorf("project %q: %w", p.Slug, catalog.ErrConflict)
		}
		return p, fmt.Errorf("store: create project %q: %w", p.Slug, err)
	}
	return s.Project(ctx, p.ID.String())
}
