package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/api"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/catalogsync"
	"github.com/sensorgate/sensorgate/gateway/config"
	"github.com/sensorgate/sensorgate/gateway/mcp"
	"github.com/sensorgate/sensorgate/gateway/storemetrics"
	"github.com/sensorgate/sensorgate/gateway/stream"
	"github.com/sensorgate/sensorgate/pkg/httpserver"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

func serve(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	c := newCommand("serve", getenv, stdout)
	if err := c.parse(args, 0, ""); err != nil {
		return err
	}
	cfg := c.cfg
	// Production refuses to start without what it must not run without, all listed at once.
	if err := cfg.CheckProduction(); err != nil {
		return err
	}
	log, err := obs.NewLogger(stdout, obs.LogConfig{Format: cfg.LogFormat, Level: cfg.LogLevel.String(), Env: cfg.Env})
	if err != nil {
		return err
	}
	if d := cfg.DevelopmentDefaults(); len(d) > 0 {
		log.Info("development mode: running on embedded defaults; set SENSORGATE_ENV=production for a deployment", "defaults", d)
	}
	tracing, err := obs.SetupTracing(ctx, "gateway", getenv)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tracing.Shutdown(sctx); err != nil {
			log.Warn("tracing shutdown", "err", err)
		}
	}()
	reg, err := obs.NewRegistry()
	if err != nil {
		return err
	}
	met, err := obs.NewMetrics(reg, "gateway")
	if err != nil {
		return err
	}

	met.BuildInfo.WithLabelValues(obs.BuildInfo().Version).Set(1)

	raw, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer raw.Close()
	// Every catalog call is timed (sensorgate_store_query_duration_seconds) and traced.
	st := storemetrics.Instrument(raw, met)
	if cfg.Env == config.EnvDevelopment {
		if err := auth.BootstrapDevelopment(ctx, st, cfg.DevAPIKey); err != nil {
			return err
		}
		log.Info("development key ready", "prefix", auth.DisplayPrefix(cfg.DevAPIKey), "owner", auth.DevOwnerName)
	}
	rdb, err := newRedis(cfg)
	if err != nil {
		return err
	}
	if rdb != nil {
		defer rdb.Close()
	}
	authn, err := auth.New(st, auth.Options{Environment: cfg.Env, CacheTTL: cfg.KeyCacheTTL, Metrics: met, Throttle: newKeyThrottle(rdb, log)})
	if err != nil {
		return err
	}

	// Background work stops when serve returns, before the store closes.
	bgCtx, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	defer func() {
		stopBG()
		bg.Wait()
	}()
	clients, err := newClients(cfg, met, tracing, log)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	// The one sensor resolver (UUID or external id, cached and coalesced) of every face.
	resolver := catalog.NewResolver(st, 0)
	px, err := newReadingsPath(cfg, st, resolver, clients, reg, met, log)
	if err != nil {
		return err
	}
	bg.Add(1)
	go func() {
		defer bg.Done()
		_ = px.prober.Run(bgCtx)
	}()

	if cfg.SyncInterval > 0 {
		syncer, err := catalogsync.New(st, catalogsync.Config{Services: clients, Logger: log})
		if err != nil {
			return fmt.Errorf("catalog sync: %w", err)
		}
		bg.Add(1)
		go func() {
			defer bg.Done()
			if err := syncer.Run(bgCtx, cfg.SyncInterval); err != nil {
				log.Error("catalog sync stopped", "err", err)
			}
		}()
	}

	rl, err := newRateLimiting(cfg, rdb, reg, log)
	if err != nil {
		return err
	}

	// The account dashboard and the per-key usage counters (account.go).
	acc, err := newAccounts(cfg, raw, st, rdb, authn, log)
	if err != nil {
		return err
	}
	defer acc.close()
	defer acc.start(context.WithoutCancel(ctx))()

	// Area latest and the streams; the hub follows every service's log until shutdown.
	lv, err := newLive(cfg, st, resolver, clients, rdb, met, log)
	if err != nil {
		return err
	}
	defer lv.close()
	bg.Add(1)
	go func() {
		defer bg.Done()
		lv.hub.Run(bgCtx)
	}()
	// The shared server set-up (pkg/httpserver): its limits, and a shutdown that makes
	// /readyz answer 503 (stopping is closed, api.Deps.Stopping), keeps serving for
	// ShutdownDelay so that load balancers notice, then stops accepting and gives in-flight
	// requests ShutdownTimeout to finish. Streams bound their connection's send buffer
	// (stream.ConnContext: slow-client detection, docs/live.md), and the shutdown ends every
	// open stream with a last comment at once (lv.hub.Close; clients reconnect to another
	// replica with Last-Event-ID) instead of holding it until its timeout.
	hs := httpserver.New(httpserver.Config{Logger: log, ShutdownDelay: cfg.ShutdownDelay, ShutdownTimeout: cfg.ShutdownTimeout,
		ConnContext: stream.ConnContext, OnShutdown: []func(){lv.hub.Close}})
	stopping := hs.Stopping()
	al, err := newAlerts(ctx, cfg, raw, st, resolver, lv.hub, log)
	if err != nil {
		return err
	}
	al.handlers.Stopping, al.handlers.Streams = stopping, lv.streams.Cap()
	bg.Add(2)
	go func() { defer bg.Done(); al.evaluator.Run(bgCtx) }()
	go func() { defer bg.Done(); al.sender.Run(bgCtx) }()
	mcpHandlers, err := newMCP(mcp.Config{Store: st, Resolver: resolver, Clients: clients, Readings: px.answers, AreaLatest: lv.latest,
		Streams: lv.streams, Alerts: al.handlers, Stopping: stopping, Charge: rl.charge, Registerer: reg, Logger: log})
	if err != nil {
		return err
	}
	og, err := newOGC(st, resolver, px.answers, clients, log)
	if err != nil {
		return err
	}
	handler := api.NewServer(api.Deps{
		OGC:      og,
		Stopping: stopping,
		Store:    st, Resolver: resolver, Auth: authn, Logger: log, Metrics: met, Tracing: tracing,
		MetricsHandler: obs.MetricsHandler(reg),
		RateLimit:      rl.middleware,
		Proxy:          px.handlers,
		Export:         px.export(func(c *gin.Context) error { return rl.charge(c, 1) }),
		MCP:            mcpHandlers,
		Live:           lv.handlers,
		Alerts:         al.handlers,
		Checks:         []api.Check{rl.check},
		Account:        acc.handler,
		OAuth:          acc.oauth,
		Usage:          acc.usage,
	})
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (GATEWAY_ADDR): %w", cfg.Addr, err)
	}
	log.Info("gateway listening", "url", "http://"+ln.Addr().String(), "env", cfg.Env,
		"catalog", catalogName(cfg), "pid", os.Getpid())
	if err := hs.Serve(ctx, ln, handler); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// catalogName says which database holds the catalog, without credentials.
func catalogName(cfg config.Config) string {
	if cfg.DatabaseURL != "" {
		return "postgresql"
	}
	return "sqlite:" + cfg.SQLitePath
}

func catalogImport(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	c := newCommand("catalog import", getenv, stdout)
	if err := c.parse(args, 1, "one catalog file (JSON)"); err != nil {
		return err
	}
	path := c.fs.Arg(0)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("catalog import: %w", err)
	}
	defer f.Close()
	st, err := openStore(ctx, c.cfg, adminLogger(c.cfg, stdout))
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := catalogsync.Import(ctx, st, f)
	if err != nil {
		return fmt.Errorf("catalog import %s: %w", path, err)
	}
	for _, r := range res {
		fmt.Fprintf(stdout, "%s: %d inserted, %d updated, %d unchanged, %d marked missing\n",
			r.ServiceID, r.Inserted, r.Updated, r.Unchanged, r.MarkedMissing)
	}
	return nil
}
