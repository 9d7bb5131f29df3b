package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/sensorgate/sensorgate/gateway/catalog"
)

// facet is one row of sensor_facets: how many sensors share one combination of the
// fields that equality filters test.
type facet struct {
	serviceID, sensorType, status, providerSlug string
	feedID                                      uuid.NullUUID
	dataTypes                                   []string
	n                                           int
}

// facetColumns groups sensors into facets; data_types as JSON text in both dialects.
func (d dialect) facetSelect(where string) string {
	dt := "data_types"
	if d.postgres {
		dt = "array_to_json(data_types)::text"
	}
	return "SELECT service_id, sensor_type, status, provider_slug, feed_id, " + dt + ", count(*) FROM sensors" + where +
		" GROUP BY service_id, sensor_type, status, provider_slug, feed_id, data_types"
}

// rebuildFacets recomputes the facets of the given services, or of all when ids is nil.
func (d dialect) rebuildFacets(tx *gorm.DB, ids []string) error {
	var err error
	if ids == nil {
		if err = tx.Exec("DELETE FROM sensor_facets").Error; err == nil {
			err = tx.Exec("INSERT INTO sensor_facets " + d.facetSelect("")).Error
		}
	} else {
		if err = tx.Exec("DELETE FROM sensor_facets WHERE service_id IN ?", ids).Error; err == nil {
			err = tx.Exec("INSERT INTO sensor_facets "+d.facetSelect(" WHERE service_id IN ?"), ids).Error
		}
	}
	if err != nil {
		return fmt.Errorf("store: rebuild sensor facets: %w", err)
	}
	return nil
}

// RebuildFacets recomputes every facet and bumps the catalog generation: for tools that
// write sensors without Sync (the benchmark's bulk loader).
func (s *Store) RebuildFacets(ctx context.Context) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := s.d.rebuildFacets(tx, nil); err != nil {
			return err
		}
		if err := tx.Exec("UPDATE catalog_state SET generation = generation + 1 WHERE id = 1").Error; err != nil {
			return fmt.Errorf("store: bump catalog generation: %w", err)
		}
		return nil
	})
}

// facets returns every facet of the current generation, read once per generation.
func (s *Store) facets(db *gorm.DB, gen int64) ([]facet, error) {
	if fs, ok := s.counts.getFacets(gen); ok {
		return fs, nil
	}
	rows, err := db.Raw("SELECT service_id, sensor_type, status, provider_slug, feed_id, data_types, n FROM sensor_facets").Rows()
	if err != nil {
		return nil, fmt.Errorf("store: read sensor facets: %w", err)
	}
	defer rows.Close()
	var fs []facet
	for rows.Next() {
		var (
			f  facet
			dt string
		)
		if err := rows.Scan(&f.serviceID, &f.sensorType, &f.status, &f.providerSlug, &f.feedID, &dt, &f.n); err != nil {
			return nil, fmt.Errorf("store: read sensor facets: %w", err)
		}
		if err := json.Unmarshal([]byte(dt), &f.dataTypes); err != nil {
			return nil, fmt.Errorf("store: sensor facet data types %q: %w", dt, err)
		}
		fs = append(fs, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read sensor facets: %w", err)
	}
	s.counts.putFacets(gen, fs)
	return fs, nil
}

// facetCountable reports whether f filters only by fields the facets hold.
func facetCountable(f catalog.SensorFilter) bool {
	// The facets count by type, status, provider, service, feed and data types only: a
	// list of sensor ids narrows beyond them and is counted in SQL.
	return f.Search == "" && f.BBox == nil && f.Near == nil && len(f.IDs) == 0 && len(f.ExternalIDs) == 0
}

// countFacets is the exact number of sensors matching a facet-countable filter.
func countFacets(fs []facet, f catalog.SensorFilter) int {
	n := 0
	for _, x := range fs {
		switch {
		case f.SensorType != "" && x.sensorType != f.SensorType,
			f.Status != "" && x.status != f.Status,
			f.Provider != "" && x.providerSlug != f.Provider,
			f.ServiceID != "" && x.serviceID != f.ServiceID,
			f.FeedID != nil && (!x.feedID.Valid || x.feedID.UUID != *f.FeedID):
			continue
		}
		if len(f.DataTypes) > 0 && !slices.ContainsFunc(x.dataTypes, func(t string) bool { return slices.Contains(f.DataTypes, t) }) {
			continue
		}
		n += x.n
	}
	return n
}

// facetValues lists the distinct non-empty values of one facet field, sorted.
func facetValues(fs []facet, field func(facet) string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, x := range fs {
		if v := field(x); v != "" && x.n > 0 && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}
