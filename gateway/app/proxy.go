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
	"github.com/sensorgate/sensorgate/gateway/prober"
	"github.com/sensorgate/sensorgate/gateway/proxy"
	"github.com/sensorgate/sensorgate/gateway/render"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// proxying is the readings/health proxy, its background prober and what to release at exit.
type proxying struct {
	handlers api.ProxyHandlers
	// up is the one upstream client: readings and health (Get), and through up.Client the
	// catalog sync, the prober and MCP forwarding.
	up *proxy.Upstreams
	// export builds the bulk export handler over the same clients, once the limiter's
	// charge is known.
	export func(charge func(*gin.Context) error) gin.HandlerFunc
	prober *prober.Prober
	close  func()
}

// newProxying builds one pooled client per configured service, the readings cache, the
// handlers and the health prober.
func newProxying(cfg config.Config, st catalog.Store, reg prometheus.Registerer, met *obs.Metrics, tracing *obs.Tracing, log *slog.Logger) (proxying, error) {
	services := make(map[string]string, len(cfg.Services))
	for _, s := range cfg.Services {
		services[s.ID] = s.URL
	}
	up, err := proxy.New(proxy.Options{
		Services:      services,
		InternalToken: cfg.InternalToken,
		Timeouts:      proxy.Timeouts{Latest: cfg.Proxy.Timeout, Readings: cfg.Proxy.Timeout, Health: cfg.Proxy.HealthTimeout},
		Logger:        log,
		Metrics:       met,
		Tracing:       tracing,
	})
	if err != nil {
		return proxying{}, err
	}
	cache, err := proxy.NewCache(proxy.CacheOptions{TTL: cfg.Proxy.CacheTTL, Registerer: reg})
	if err != nil {
		return proxying{}, err
	}
	fail := func(c *gin.Context, err error) {
		if errors.Is(err, context.Canceled) && c.Request.Context().Err() != nil {
			c.AbortWithStatus(499) // the client is gone: nothing to render, nothing to log as an error
			return
		}
		api.Fail(c, err)
	}
	h, err := proxy.NewHandlers(proxy.HandlerOptions{
		Upstreams: up,
		Cache:     cache,
		Resolve: func(ctx context.Context, ref string) (catalog.Sensor, error) {
			return catalog.ResolveSensor(ctx, st, ref)
		},
		Error:  fail,
		Logger: log,
	})
	if err != nil {
		return proxying{}, err
	}
	clients := make(map[string]prober.HealthClient, len(services))
	for id, u := range services {
		clients[id] = contract.NewClient(u, cfg.InternalToken, up.Client(up.Deadline(proxy.RouteHealth)))
	}
	pr, err := prober.New(clients, st, prober.Options{Interval: cfg.Proxy.ProbeInterval, Timeout: cfg.Proxy.HealthTimeout, Logger: log, Metrics: met})
	if err != nil {
		return proxying{}, err
	}
	return proxying{
		handlers: api.ProxyHandlers{Latest: h.Latest(), Readings: render.Readings(h, fail), Aggregate: render.Aggregate(h, fail), ServiceHealth: h.ServiceHealth()},
		export: func(charge func(*gin.Context) error) gin.HandlerFunc {
			return export.Handler(export.Options{Select: api.ExportSelector(st, api.DefaultQueryTimeout), Upstreams: up,
				Charge: charge, Fail: fail, Logger: log})
		},
		up:     up,
		prober: pr,
		close:  up.CloseIdleConnections,
	}, nil
}
