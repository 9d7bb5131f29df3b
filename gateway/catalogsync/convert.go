// Package catalogsync fills the gateway's catalog from the backing services: Syncer asks
// each service for its metadata and stations over the internal contract and applies them
// with catalog.Store.Sync, and Import loads the same data from a JSON catalog file (the
// `catalog import` admin command, and fixtures for tests).
package catalogsync

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
)

// ServiceFromMeta is the catalog record of a service as its /v1/meta describes it; url is
// the internal address the gateway reaches it at.
func ServiceFromMeta(m contract.ServiceMeta, url string) catalog.Service {
	sv := catalog.Service{
		ID: m.ID, Name: m.Name, Description: m.Description, Domain: m.Domain,
		TemporalPattern: m.TemporalPattern, Port: m.Port, Status: m.Status, URL: url, Version: m.Version,
		Tools: m.Tools, SensorCount: m.SensorCount,
	}
	for _, p := range m.Providers {
		sv.Providers = append(sv.Providers, p.Slug)
	}
	for _, f := range m.Feeds {
		sv.Feeds = append(sv.Feeds, f.Slug)
	}
	if m.LastIngestAt != nil && !m.LastIngestAt.IsZero() {
		t := m.LastIngestAt.Time
		sv.LastIngestAt = &t
	}
	return sv
}

// ProviderFrom converts a contract provider; its id is ids.Provider(slug).
func ProviderFrom(p contract.Provider) catalog.Provider {
	return catalog.Provider{ID: ids.Provider(p.Slug), Slug: p.Slug, Name: p.Name, Description: p.Description, URL: p.URL, License: p.License}
}

// ProjectFrom converts a service's feed into the public project the gateway exposes; its
// id is ids.Feed(slug). Owner and visibility are set by the store.
func ProjectFrom(serviceID string, f contract.Feed) catalog.Project {
	p := catalog.Project{
		ID: ids.Feed(f.Slug), Slug: f.Slug, Name: f.Name, Description: f.Description, ProviderSlug: f.ProviderSlug,
		Domain: f.Domain, TemporalPattern: f.TemporalPattern, FeedType: f.FeedType, ServiceID: serviceID,
		Visibility: catalog.VisibilityPublic,
	}
	if f.ProviderSlug != "" {
		id := ids.Provider(f.ProviderSlug)
		p.ProviderID = &id
	}
	return p
}

// SensorFrom converts a station of service serviceID: the sensor id is
// ids.Sensor(serviceID, external id), provider and feed ids come from their slugs. A bad
// external id, date or coordinate is an error naming the station.
func SensorFrom(serviceID string, st contract.Station) (catalog.Sensor, error) {
	sn := catalog.Sensor{
		ID: ids.Sensor(serviceID, st.ExternalID), ExternalID: st.ExternalID, Name: st.Name,
		Description: st.Description, SensorType: st.SensorType, Status: st.Status, DataTypes: st.DataTypes,
		Latitude: st.Latitude, Longitude: st.Longitude, ProviderSlug: st.ProviderSlug, FeedSlug: st.FeedSlug,
		ServiceID: serviceID, ReportingIntervalS: st.ReportingIntervalS, UpdatedAt: st.UpdatedAt.Time,
	}
	if err := contract.ValidExternalID(st.ExternalID); err != nil {
		return sn, fmt.Errorf("station %q of %s: %w", st.ExternalID, serviceID, err)
	}
	if sn.Name == "" {
		sn.Name = st.ExternalID
	}
	if sn.Status == "" {
		sn.Status = catalog.StatusActive
	}
	if sn.DataTypes == nil {
		sn.DataTypes = []string{}
	}
	var err error
	if sn.DeploymentDate, err = parseDate(st.DeploymentDate); err != nil {
		return sn, fmt.Errorf("station %q of %s: deployment_date: %w", st.ExternalID, serviceID, err)
	}
	if st.DecommissionedDate != nil {
		if sn.DecommissionedDate, err = parseDate(*st.DecommissionedDate); err != nil {
			return sn, fmt.Errorf("station %q of %s: decommissioned_date: %w", st.ExternalID, serviceID, err)
		}
	}
	if (st.Latitude == nil) != (st.Longitude == nil) {
		return sn, fmt.Errorf("station %q of %s: has only one of latitude and longitude", st.ExternalID, serviceID)
	}
	if st.Latitude != nil && (*st.Latitude < -90 || *st.Latitude > 90 || *st.Longitude < -180 || *st.Longitude > 180) {
		return sn, fmt.Errorf("station %q of %s: position (%v, %v) is off the globe", st.ExternalID, serviceID, *st.Latitude, *st.Longitude)
	}
	if st.ProviderSlug != "" {
		id := ids.Provider(st.ProviderSlug)
		sn.ProviderID = &id
	}
	if st.FeedSlug != "" {
		id := ids.Feed(st.FeedSlug)
		sn.FeedID = &id
	}
	if st.LastReadingAt != nil && !st.LastReadingAt.IsZero() {
		t := st.LastReadingAt.Time
		sn.LastReadingAt = &t
	}
	return sn, nil
}

func parseDate(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > 10 { // a full timestamp: keep its date
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("want YYYY-MM-DD, got %q", s)
		}
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		return &d, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return nil, fmt.Errorf("want YYYY-MM-DD, got %q", s)
	}
	return &t, nil
}

// batchFor builds the SyncBatch of one service, checking that every station names a
// provider and feed the service declared. Stations that do not convert are returned as
// rejects (with their reason) rather than failing the whole batch.
func batchFor(sv catalog.Service, providers []contract.Provider, feeds []contract.Feed, stations []contract.Station, full bool) (catalog.SyncBatch, []error) {
	b := catalog.SyncBatch{Service: sv, Full: full}
	provs := map[string]bool{}
	for _, p := range providers {
		b.Providers = append(b.Providers, ProviderFrom(p))
		provs[p.Slug] = true
	}
	fs := map[string]bool{}
	for _, f := range feeds {
		b.Projects = append(b.Projects, ProjectFrom(sv.ID, f))
		fs[f.Slug] = true
	}
	var rejects []error
	seen := map[uuid.UUID]bool{}
	for _, st := range stations {
		sn, err := SensorFrom(sv.ID, st)
		switch {
		case err != nil:
			rejects = append(rejects, err)
			continue
		case st.ProviderSlug != "" && !provs[st.ProviderSlug]:
			rejects = append(rejects, fmt.Errorf("station %q of %s: provider %q is not among the service's providers", st.ExternalID, sv.ID, st.ProviderSlug))
			continue
		case st.FeedSlug != "" && !fs[st.FeedSlug]:
			rejects = append(rejects, fmt.Errorf("station %q of %s: feed %q is not among the service's feeds", st.ExternalID, sv.ID, st.FeedSlug))
			continue
		case seen[sn.ID]:
			continue // listed twice (a page boundary moved): the first copy wins
		}
		seen[sn.ID] = true
		b.Sensors = append(b.Sensors, sn)
	}
	return b, rejects
}
