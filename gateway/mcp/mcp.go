// Package mcp is the gateway's MCP (Model Context Protocol over JSON-RPC 2.0) layer: the
// lifecycle every endpoint answers itself (initialize with version negotiation, ping,
// notifications), forwarding of tools/list and tools/call to a backing service's POST /mcp
// at service, sensor and project scope, the gateway's own tool servers (the legacy
// registry tools, the catalog tools, the project tools and the alert tools) built on
// catalog.Store and the alert store, and subscriptions (listen.go) fed by the stream hub.
//
// Each endpoint takes one JSON-RPC message per POST and answers one JSON response, so it
// works for a bare client that sends nothing but Content-Type: application/json as well as
// for the official SDK clients speaking streamable HTTP.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/gateway/alerts"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/stream"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ttlcache"
)

// MaxBodyBytes is the largest MCP request body accepted (docs/api-decisions.md: 1 MiB); larger is 413.
const MaxBodyBytes = 1 << 20

// Config wires a Handler to the gateway's catalog and upstream clients.
type Config struct {
	// Store is the catalog (required).
	Store catalog.Store
	// Resolver is the gateway's one sensor resolver (catalog.Resolver), shared with the
	// REST routes; nil builds one over Store with CacheTTL.
	Resolver *catalog.Resolver
	// Clients are the services' clients, by id (required): service tools are forwarded
	// through them.
	Clients map[string]*contract.Client
	// Readings is the gateway's readings path (required), which the readings tools answer
	// through.
	Readings Readings
	// Viewer returns the authenticated caller's owner id, which decides what private
	// projects it may reach. Nil, or false: the caller sees public projects only.
	Viewer func(c *gin.Context) (uuid.UUID, bool)
	// AreaLatest answers the catalog tool latest_in_area through the code path of
	// GET /api/v1/readings/latest; nil leaves the tool out.
	AreaLatest AreaLatest
	// Streams opens subscriptions (subscriptions/listen) on the hub of the SSE streams,
	// under their per-key cap; nil leaves subscriptions out.
	Streams *stream.Handler
	// Alerts are the alert rules and events of the caller's key: the alert tools and the
	// alert events resource; nil leaves them out.
	Alerts *alerts.Handlers
	// Stopping is closed when the gateway begins to shut down: open subscriptions end
	// with their result, so that clients listen again on another replica (nil: never).
	Stopping <-chan struct{}
	// Charge takes n more requests from the caller's budget, on top of the one the rate
	// limit middleware took for the POST: a tool's cost beyond 1 (cost.go). Nil charges
	// nothing more.
	Charge func(c *gin.Context, n int) error
	// Registerer receives the tool-call metrics (sensorgate_mcp_calls_total and
	// sensorgate_mcp_call_duration_seconds); nil keeps them unregistered.
	Registerer prometheus.Registerer
	// Logger receives request failures (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock for reading ages (default time.Now).
	Now func() time.Time
	// Version is reported in serverInfo.version (default "dev").
	Version string
	// CacheTTL bounds how stale the per-replica cache of sensor, service and project
	// lookups may be (default 5s, negative disables it): the sensor-scope endpoint sits on
	// the latency path of every tool call.
	CacheTTL time.Duration
}

// Handler serves the five MCP endpoints of the gateway.
type Handler struct {
	store    catalog.Store
	clients  map[string]*contract.Client
	readings Readings
	viewer   func(c *gin.Context) (uuid.UUID, bool)
	log      *slog.Logger
	now      func() time.Time
	version  string
	area     AreaLatest
	// cacheTTL is CacheTTL (0 when disabled): list results tell clients to cache as long
	// as the gateway trusts its own lookups.
	cacheTTL time.Duration
	metrics  *callMetrics
	streams  *stream.Handler
	alerts   *alerts.Handlers
	stopping <-chan struct{}
	charge   func(c *gin.Context, n int) error

	resolver *catalog.Resolver
	// Catalog lookups, trusted for CacheTTL (nil: not cached).
	services *ttlcache.Cache[string, catalog.Service]
	projects *ttlcache.Cache[string, catalog.Project]

	registryTools *toolSet
	catalogTools  *toolSet
	projectTools  *toolSet
	sensorTools   *toolSet
	alertTools    *toolSet // nil without Config.Alerts
}

// New returns a Handler; it fails when a required dependency is missing.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil || cfg.Clients == nil || cfg.Readings == nil {
		return nil, errors.New("mcp: Config.Store, Clients and Readings are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = 5 * time.Second
	}
	h := &Handler{
		store:    cfg.Store,
		clients:  cfg.Clients,
		readings: cfg.Readings,
		viewer:   cfg.Viewer,
		log:      cfg.Logger,
		now:      cfg.Now,
		version:  cfg.Version,
		area:     cfg.AreaLatest,
		streams:  cfg.Streams,
		alerts:   cfg.Alerts,
		stopping: cfg.Stopping,
		charge:   cfg.Charge,
		cacheTTL: max(cfg.CacheTTL, 0),
		resolver: cfg.Resolver,
		services: newCache[string](cfg.CacheTTL, 256, 1024, serviceStrings),
		projects: newCache[string](cfg.CacheTTL, 1024, 512, projectStrings),
	}
	if h.resolver == nil {
		h.resolver = catalog.NewResolver(cfg.Store, cfg.CacheTTL)
	}
	var err error
	if h.metrics, err = newCallMetrics(cfg.Registerer); err != nil {
		return nil, err
	}
	if h.registryTools, err = h.newRegistryTools(); err != nil {
		return nil, fmt.Errorf("mcp: registry tools: %w", err)
	}
	if h.catalogTools, err = h.newCatalogTools(); err != nil {
		return nil, fmt.Errorf("mcp: catalog tools: %w", err)
	}
	if h.projectTools, err = h.newProjectTools(); err != nil {
		return nil, fmt.Errorf("mcp: project tools: %w", err)
	}
	if h.sensorTools, err = h.newSensorTools(); err != nil {
		return nil, fmt.Errorf("mcp: sensor tools: %w", err)
	}
	if h.alerts != nil {
		if h.alertTools, err = h.newAlertTools(); err != nil {
			return nil, fmt.Errorf("mcp: alert tools: %w", err)
		}
	}
	return h, nil
}

func (h *Handler) service(ctx context.Context, id string) (catalog.Service, error) {
	return h.services.GetOrLoad(ctx, id, h.now(), h.store.Service)
}

func (h *Handler) project(ctx context.Context, idOrSlug string) (catalog.Project, error) {
	return h.projects.GetOrLoad(ctx, idOrSlug, h.now(), h.store.Project)
}

// newCache is the one TTL cache type (pkg/ttlcache) for catalog lookups: nil, a disabled
// cache, when the TTL is not positive; bounded in bytes at max entries of entryBytes (an
// entry with longer strings counts them, so the bound holds whatever the catalog holds).
func newCache[K comparable, V any](ttl time.Duration, max int, entryBytes int64, strs func(V) int) *ttlcache.Cache[K, V] {
	if ttl <= 0 {
		return nil
	}
	return ttlcache.New(ttl, max, int64(max)*(entryBytes+ttlcache.EntryOverhead), func(k K, v V) int64 {
		return ttlcache.KeySize(k) + int64(strs(v)) + entryBytes + ttlcache.EntryOverhead
	})
}

func serviceStrings(s catalog.Service) int {
	n := len(s.ID) + len(s.Name) + len(s.Description) + len(s.Domain) + len(s.TemporalPattern) + len(s.Status) + len(s.URL) + len(s.Version)
	for _, l := range [][]string{s.Providers, s.Feeds, s.Tools} {
		for _, x := range l {
			n += len(x) + 16
		}
	}
	return n
}

func projectStrings(p catalog.Project) int {
	return len(p.Slug) + len(p.Name) + len(p.Description) + len(p.ProviderSlug) + len(p.ProviderName) + len(p.Domain) +
		len(p.TemporalPattern) + len(p.FeedType) + len(p.ServiceID) + len(p.Visibility)
}
