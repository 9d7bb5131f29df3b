// Package catalog holds the gateway's domain: sensors, providers, projects (feeds),
// services, users and API keys, the filters that select them, and the Store interface the
// rest of the gateway reads and writes them through. Implementations live in package store.
package catalog

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
)

// Errors of the Store. Callers map them to API errors; they never carry internal detail.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("already exists")
)

// Sensor statuses (docs/spec.md 3).
const (
	StatusActive      = "active"
	StatusInactive    = "inactive"
	StatusMaintenance = "maintenance"
)

// Environments of API keys and of the gateway itself.
const (
	EnvDevelopment = "development"
	EnvProduction  = "production"
)

// Project visibility.
const (
	VisibilityPublic  = "public"
	VisibilityPrivate = "private"
)

// Sensor is docs/spec.md 2.1 plus what the gateway needs to route and judge it.
type Sensor struct {
	ID                 uuid.UUID
	ExternalID         string
	Name               string
	Description        string
	SensorType         string
	Status             string
	DataTypes          []string
	DeploymentDate     *time.Time // date only
	DecommissionedDate *time.Time // date only
	Latitude           *float64
	Longitude          *float64
	ProviderID         *uuid.UUID
	ProviderName       string
	ProviderSlug       string
	FeedID             *uuid.UUID // nil: the sensor has no feed (readings are 404 no_feed)
	FeedName           string
	FeedSlug           string
	ServiceID          string // SPEC's connected_service
	ReportingIntervalS int
	LastReadingAt      *time.Time
	// MissingSince is set when the sensor disappeared from its service's listing: it is
	// marked, never deleted, so ids that clients hold keep resolving.
	MissingSince *time.Time
	UpdatedAt    time.Time
	// DistanceKM is filled by ListSensors when the filter has a radius.
	DistanceKM *float64
}

// Provider is an organisation whose data a service ingests.
type Provider struct {
	ID          uuid.UUID
	Slug        string
	Name        string
	Description string
	URL         string
	License     string
}

// Project is a feed: one stream of data from a provider, served by one service, owned by a
// user and public or private.
type Project struct {
	ID              uuid.UUID
	Slug            string
	Name            string
	Description     string
	ProviderID      *uuid.UUID
	ProviderSlug    string
	ProviderName    string
	Domain          string
	TemporalPattern string
	FeedType        string
	ServiceID       string
	SensorCount     int
	OwnerID         uuid.UUID
	Visibility      string
	CreatedAt       time.Time
}

// Service is a backing service as the gateway knows it: its configuration, what it said
// about itself at the last sync, and the result of the last health probe.
type Service struct {
	ID              string
	Name            string
	Description     string
	Domain          string
	TemporalPattern string
	Port            int
	Status          string // from the last probe: active | degraded | down
	URL             string // internal base URL, never shown to clients
	Version         string
	Providers       []string // slugs
	Feeds           []string // slugs
	Tools           []string
	SensorCount     int
	LastIngestAt    *time.Time
	LastProbeAt     *time.Time
	LastSyncAt      *time.Time
}

// User owns API keys and projects.
type User struct {
	ID        uuid.UUID
	Name      string
	Email     string
	CreatedAt time.Time
}

// APIKey is a stored key: only the SHA-256 of the secret is kept.
type APIKey struct {
	ID          uuid.UUID
	Name        string
	Prefix      string // first characters of the key, to tell keys apart in listings
	Hash        []byte // SHA-256 of the whole key
	OwnerID     uuid.UUID
	Environment string // development | production
	Plan        string // selects the rate limit of a production key
	CreatedAt   time.Time
	RevokedAt   *time.Time
	// ExpiresAt, when set, is when the key stops working on its own: the end of the grace
	// period of a rotated key.
	ExpiresAt *time.Time
	// LastUsedAt is when a request last presented the key, as of the usage counter's last
	// flush (not read on the request path).
	LastUsedAt *time.Time
	// Scopes are the OAuth scopes the key allows, space-separated (auth.ParseScopes); empty
	// is all of them.
	Scopes string
	// ClientID is set on the key that stands for one OAuth client's access to its owner's
	// account (package oauth): its tokens count and are revoked as this key.
	ClientID string
}

// Usable reports whether the key admits requests at now: not revoked, not expired.
func (k APIKey) Usable(now time.Time) bool {
	return k.RevokedAt == nil && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt))
}

// BBox is a bounding box; MinLon > MaxLon means it crosses the antimeridian.
type BBox struct{ MinLat, MinLon, MaxLat, MaxLon float64 }

// Near is a great-circle radius filter.
type Near struct{ Lat, Lon, RadiusKM float64 }

// SensorFilter selects sensors; zero fields do not filter. Lists are ordered by name, then
// id, unless SortByDistance (only with Near).
type SensorFilter struct {
	Search     string // literal substring of name, description, external id or provider name
	SensorType string
	Status     string
	Provider   string   // provider slug
	DataTypes  []string // any of
	FeedID     *uuid.UUID
	ServiceID  string
	// IDs and ExternalIDs (exact) keep the sensors named by either (the
	// sensor_ids filter of area latest and streams); both empty do not filter.
	IDs            []uuid.UUID
	ExternalIDs    []string
	BBox           *BBox
	Near           *Near
	SortByDistance bool
	Page           int // from 1
	Limit          int
}

// SensorPage is one page of sensors and the exact total matching the filter.
type SensorPage struct {
	Sensors []Sensor
	Total   int
}

// ProjectFilter selects projects. A viewer sees public projects and its own private ones.
type ProjectFilter struct {
	Provider        string
	Domain          string
	TemporalPattern string
	Search          string
	FeedType        string
	OwnerID         *uuid.UUID // only projects of this owner (/projects/my)
	ViewerID        uuid.UUID
	Page            int
	Limit           int
}

// SyncBatch is what a service said about its catalog in one sync round. With Full set, the
// sensors are the service's whole listing and sensors of the service that are absent are
// marked missing; otherwise they are the ones changed since the last round.
type SyncBatch struct {
	Service   Service
	Providers []Provider
	Projects  []Project
	Sensors   []Sensor
	Full      bool
}

// SyncResult counts what a sync changed.
type SyncResult struct {
	Inserted, Updated, Unchanged, MarkedMissing int
}

// Store is the gateway's persistence. Every method is safe for concurrent use.
type Store interface {
	Ping(ctx context.Context) error
	Close() error

	ListSensors(ctx context.Context, f SensorFilter) (SensorPage, error)
	// AreaSensors is ListSensors for area latest and the area streams: the same sensors,
	// order and total, with only ID, ServiceID, ExternalID, Name, Latitude, Longitude,
	// ReportingIntervalS and DistanceKM filled. Pages are cached per catalog generation,
	// so the page is shared: read-only for the caller.
	AreaSensors(ctx context.Context, f SensorFilter) (SensorPage, error)
	// LastReadingTimes returns the last known reading time of each sensor named that has
	// one (area latest reads it only for the sensors of a service that did not answer).
	LastReadingTimes(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]time.Time, error)
	SensorTypes(ctx context.Context) ([]string, error)
	SensorStatuses(ctx context.Context) ([]string, error)
	Sensor(ctx context.Context, id uuid.UUID) (Sensor, error)
	// SensorByExternalID resolves a provider id; when two services share one, the first
	// service by id wins.
	SensorByExternalID(ctx context.Context, externalID string) (Sensor, error)

	Services(ctx context.Context) ([]Service, error)
	Service(ctx context.Context, id string) (Service, error)
	SetServiceStatus(ctx context.Context, id, status string, at time.Time) error

	ListProjects(ctx context.Context, f ProjectFilter) ([]Project, int, error)
	// Project resolves a project by UUID or slug.
	Project(ctx context.Context, idOrSlug string) (Project, error)

	// Sync applies one round of a service's catalog idempotently.
	Sync(ctx context.Context, b SyncBatch) (SyncResult, error)

	CreateUser(ctx context.Context, u User) (User, error)
	User(ctx context.Context, id uuid.UUID) (User, error)
	CreateProject(ctx context.Context, p Project) (Project, error)
	CreateKey(ctx context.Context, k APIKey) (APIKey, error)
	KeyByHash(ctx context.Context, hash []byte) (APIKey, error)
	Keys(ctx context.Context) ([]APIKey, error)
	// RevokeKey revokes the key whose id or prefix is given.
	RevokeKey(ctx context.Context, idOrPrefix string, at time.Time) (APIKey, error)
}

// QueryTimeout bounds one catalog query of a request, so that a stuck database gives an
// error, not a hung request.
const QueryTimeout = 10 * time.Second
