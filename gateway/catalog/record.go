package catalog

import (
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// SensorRecord is a sensor in the wire form of docs/spec.md 2.1, shared by the REST API and the
// MCP tools so that both always describe a sensor the same way. Every field is present
// (null when unknown) except distance_km, which only a radius filter gives.
type SensorRecord struct {
	ID                 string   `json:"id"`
	ExternalID         string   `json:"external_id"`
	Name               string   `json:"name"`
	Description        string   `json:"description"`
	SensorType         string   `json:"sensor_type"`
	Status             string   `json:"status"`
	DataTypes          []string `json:"data_types"`
	DeploymentDate     *string  `json:"deployment_date"`
	DecommissionedDate *string  `json:"decommissioned_date"`
	Latitude           *float64 `json:"latitude"`
	Longitude          *float64 `json:"longitude"`
	ProviderID         *string  `json:"provider_id"`
	ProviderName       string   `json:"provider_name"`
	ProviderSlug       string   `json:"provider_slug"`
	FeedID             *string  `json:"feed_id"`
	FeedName           string   `json:"feed_name"`
	ConnectedService   string   `json:"connected_service"`
	DistanceKM         *float64 `json:"distance_km,omitempty"`
}

// RegistryRecord is the registry view of docs/spec.md 2.1, for GET /sensors/registry and
// the registry tool list_sensors alike; latitude and longitude appear when the sensor has
// a location.
type RegistryRecord struct {
	ID               string   `json:"id"`
	ExternalID       string   `json:"external_id"`
	Name             string   `json:"name"`
	SensorType       string   `json:"sensor_type"`
	Status           string   `json:"status"`
	DataTypes        []string `json:"data_types"`
	ProviderSlug     string   `json:"provider_slug"`
	FeedID           *string  `json:"feed_id"`
	ConnectedService string   `json:"connected_service"`
	Latitude         *float64 `json:"latitude,omitempty"`
	Longitude        *float64 `json:"longitude,omitempty"`
	DistanceKM       *float64 `json:"distance_km,omitempty"`
}

// Registry returns s in the registry view.
func (s *Sensor) Registry() RegistryRecord {
	return RegistryRecord{
		ID: s.ID.String(), ExternalID: s.ExternalID, Name: s.Name, SensorType: s.SensorType,
		Status: s.Status, DataTypes: s.DataTypesOrEmpty(), ProviderSlug: s.ProviderSlug,
		FeedID: IDString(s.FeedID), ConnectedService: s.ServiceID,
		Latitude: s.Latitude, Longitude: s.Longitude, DistanceKM: RoundKM(s.DistanceKM),
	}
}

// ProviderRef names a provider: a project's, a service's, or one the catalog counts.
type ProviderRef struct {
	Slug string `json:"slug" jsonschema:"Provider slug"`
	Name string `json:"name" jsonschema:"Provider name"`
}

// ProjectRecord is a project (feed) in its wire form (docs/api-decisions.md "Services and
// projects"), for GET /projects, /projects/:id and the tool describe_project alike.
type ProjectRecord struct {
	ID              string        `json:"id" jsonschema:"Project (feed) UUID"`
	Slug            string        `json:"slug" jsonschema:"Project slug; the feed_slug injected into service tool calls"`
	Name            string        `json:"name" jsonschema:"Name"`
	Description     string        `json:"description" jsonschema:"Description"`
	Provider        ProviderRef   `json:"provider" jsonschema:"The provider"`
	Domain          string        `json:"domain" jsonschema:"Domain"`
	TemporalPattern string        `json:"temporal_pattern" jsonschema:"Temporal pattern"`
	FeedType        string        `json:"feed_type" jsonschema:"Feed type"`
	ServiceID       string        `json:"service_id" jsonschema:"Backing service id"`
	SensorCount     int           `json:"sensor_count" jsonschema:"Sensors of the project"`
	OwnerID         string        `json:"owner_id" jsonschema:"Owner UUID"`
	Visibility      string        `json:"visibility" jsonschema:"public or private"`
	CreatedAt       contract.Time `json:"created_at" jsonschema:"Creation time (ISO 8601 UTC)"`
}

// Record returns p in its wire form.
func (p *Project) Record() ProjectRecord {
	return ProjectRecord{
		ID: p.ID.String(), Slug: p.Slug, Name: p.Name, Description: p.Description,
		Provider: ProviderRef{Slug: p.ProviderSlug, Name: p.ProviderName},
		Domain:   p.Domain, TemporalPattern: p.TemporalPattern, FeedType: p.FeedType,
		ServiceID: p.ServiceID, SensorCount: p.SensorCount, OwnerID: p.OwnerID.String(),
		Visibility: p.Visibility, CreatedAt: contract.Time{Time: p.CreatedAt},
	}
}

// ServiceRecord is a backing service in the wire form of docs/spec.md 2.7, shared by the
// REST API and the MCP tools like SensorRecord. The internal URL never leaves the gateway.
type ServiceRecord struct {
	ID              string `json:"id"`
	Name            string `json:"name"`
	Description     string `json:"description"`
	Domain          string `json:"domain"`
	TemporalPattern string `json:"temporal_pattern"`
	Port            int    `json:"port"`
	Status          string `json:"status"`
}

// Record returns s in its wire form.
func (s *Service) Record() ServiceRecord {
	return ServiceRecord{ID: s.ID, Name: s.Name, Description: s.Description, Domain: s.Domain,
		TemporalPattern: s.TemporalPattern, Port: s.Port, Status: s.Status}
}

// Record returns s in its wire form.
func (s *Sensor) Record() SensorRecord {
	return SensorRecord{
		ID: s.ID.String(), ExternalID: s.ExternalID, Name: s.Name, Description: s.Description,
		SensorType: s.SensorType, Status: s.Status, DataTypes: s.DataTypesOrEmpty(),
		DeploymentDate: DateOnly(s.DeploymentDate), DecommissionedDate: DateOnly(s.DecommissionedDate),
		Latitude: s.Latitude, Longitude: s.Longitude, ProviderID: IDString(s.ProviderID),
		ProviderName: s.ProviderName, ProviderSlug: s.ProviderSlug, FeedID: IDString(s.FeedID),
		FeedName: s.FeedName, ConnectedService: s.ServiceID, DistanceKM: RoundKM(s.DistanceKM),
	}
}

// DataTypesOrEmpty is s.DataTypes, never nil, so that it encodes as [] rather than null.
func (s *Sensor) DataTypesOrEmpty() []string {
	if s.DataTypes == nil {
		return []string{}
	}
	return s.DataTypes
}

// DateOnly renders a date-only field as YYYY-MM-DD, nil when unknown.
func DateOnly(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.DateOnly)
	return &s
}

// IDString renders an optional id, nil when absent.
func IDString(id *uuid.UUID) *string {
	if id == nil {
		return nil
	}
	s := id.String()
	return &s
}

// RoundKM keeps distances to the metre: more digits are noise.
func RoundKM(d *float64) *float64 {
	if d == nil {
		return nil
	}
	r := math.Round(*d*1000) / 1000
	return &r
}
