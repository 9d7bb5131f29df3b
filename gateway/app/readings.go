package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/gateway/api"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/config"
	"github.com/sensorgate/sensorgate/gateway/export"
	"github.com/sensorgate/sensorgate/gateway/ginerr"
	"github.com/sensorgate/sensorgate/gateway/prober"
	"github.com/sensorgate/sensorgate/gateway/readings"
	"github.com/sensorgate/sensorgate/gateway/render"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// newClients builds the one client of each configured service: every call the gateway
// makes to a service (readings, health, catalog sync, MCP, area latest, the stream
// followers, export) goes through it.
func newClients(cfg config.Config, met *obs.Metrics, tracing *obs.Tracing, log *slog.Logger) (map[string]*contract.Client, error) {
	urls := make(map[string]string, len(cfg.Services))
	for _, s := range cfg.Services {
		urls[s.ID] = s.URL
	}
	return contract.NewClients(urls, contract.Options{
		Token:     cfg.InternalToken,
		Timeouts:  contract.Timeouts{Latest: cfg.Proxy.Timeout, Readings: cfg.Proxy.Timeout, Health: cfg.Proxy.HealthTimeout},
		HTTP2:     cfg.Proxy.HTTP2,
		Transport: cfg.Proxy.Transport,
		Logger:    log,
		Metrics:   met,
		Tracing:   tracing,
	})
}

// readingsPath is the readings path (REST and MCP), the health handler, the background
// prober and the export handler, over the services' clients.
type readingsPath struct {
	handlers api.ProxyHandlers
	// answers is the one readings path, which the MCP tools answer through too.
	answers *readings.Handlers
	// export builds the bulk export handler once the limiter's charge is known.
	export func(charge func(*gin.Context) error) gin.HandlerFunc
	prober *prober.Prober
}

func newReadingsPath(cfg config.Config, st catalog.Store, resolver *catalog.Resolver, clients map[string]*contract.Client, reg prometheus.Registerer, met *obs.Metrics, log *slog.Logger) (readingsPath, error) {
	cache, err := readings.NewCache(readings.CacheOptions{TTL: cfg.Proxy.CacheTTL, Registerer: reg})
	if err != nil {
		return readingsPath{}, err
	}
	fail := func(c *gin.Context, err error) {
		if errors.Is(err, context.Canceled) && c.Request.Context().Err() != nil {
			c.AbortWithStatus(499) // the client is gone: nothing to render, nothing to log as an error
			return
		}
		ginerr.Fail(c, err)
	}
	h, err := readings.NewHandlers(readings.HandlerOptions{
		Clients: clients,
		Cache:   cache,
		Resolve: resolver.Resolve,
		Error:   fail,
		Logger:  log,
	})
	if err != nil {
		return readingsPath{}, err
	}
	health := make(map[string]prober.HealthClient, len(clients))
	for id, c := range clients {
		health[id] = c
	}
	pr, err := prober.New(health, st, prober.Options{Interval: cfg.Proxy.ProbeInterval, Timeout: cfg.Proxy.HealthTimeout, Logger: log, Metrics: met})
	if err != nil {
		return readingsPath{}, err
	}
	return readingsPath{
		handlers: api.ProxyHandlers{Latest: h.Latest(), Readings: render.Readings(h, fail), Aggregate: render.Aggregate(h, fail), ServiceHealth: h.ServiceHealth()},
		answers:  h,
		export: func(charge func(*gin.Context) error) gin.HandlerFunc {
			return export.Handler(export.Options{Select: sensorquery.ExportSelector(st, resolver, catalog.QueryTimeout), Services: clients,
				Charge: charge, Fail: fail, Logger: log})
		},
		prober: pr,
	}, nil
}
