// Package app runs one backing service process from its Definition: configuration, the
// readings store, the ingest scheduler, the MCP server and the internal API, with a clean
// shutdown that finishes in-flight requests and the ingest batch in flight.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/gctune"
	"github.com/sensorgate/sensorgate/pkg/httpserver"
	"github.com/sensorgate/sensorgate/pkg/obs"
	"github.com/sensorgate/sensorgate/pkg/settings"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/config"
	"github.com/sensorgate/sensorgate/services/runtime/httpapi"
	"github.com/sensorgate/sensorgate/services/runtime/ingest"
	"github.com/sensorgate/sensorgate/services/runtime/ingest/lease"
	"github.com/sensorgate/sensorgate/services/runtime/live"
	"github.com/sensorgate/sensorgate/services/runtime/mcpserver"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// Version of the service binaries, reported in meta and health.
const Version = "0.1.0"

// Definition is what makes one service different from another.
type Definition struct {
	ID              string // ocean, weather, airquality
	Name            string
	Description     string
	Domain          string
	TemporalPattern string
	DefaultPort     int
	Providers       []ingest.Provider
	// Tools register the service's MCP tools (named <ID>.<tool>).
	Tools []mcpserver.Registrar
}

// ProviderSlugs lists the slugs of the definition's providers.
func (d Definition) ProviderSlugs() []string {
	out := make([]string, 0, len(d.Providers))
	for _, p := range d.Providers {
		out = append(out, p.Slug())
	}
	return out
}

// EnvNames lists every environment variable the service binary reads.
func (d Definition) EnvNames() []string { return config.EnvNames(d.ProviderSlugs()) }

// Main is a service binary's main: it tunes the GC from the environment, runs def until
// SIGINT or SIGTERM, and exits 1 with the error on stderr when Run fails.
func Main(def Definition) {
	gctune.Apply(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, def, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Run runs the service until ctx ends. Logs go to stdout.
func Run(ctx context.Context, def Definition, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := config.Load(def.ID, def.DefaultPort, def.ProviderSlugs(), args, getenv, stdout)
	if settings.IsHelp(err) { // -h printed every setting; that is all that was asked
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: configuration: %w", def.ID, err)
	}
	if cfg.PrintEnv {
		for _, n := range def.EnvNames() {
			fmt.Fprintln(stdout, n)
		}
		return nil
	}
	log := newLogger(cfg, stdout).With("service", def.ID)

	// Observability (pkg/obs): metrics at /metrics, tracing only when OTEL_* asks for it.
	reg, err := obs.NewRegistry()
	if err != nil {
		return fmt.Errorf("%s: %w", def.ID, err)
	}
	metrics, err := obs.NewMetrics(reg, def.ID)
	if err != nil {
		return fmt.Errorf("%s: %w", def.ID, err)
	}
	metrics.BuildInfo.WithLabelValues(Version).Set(1)
	tracing, err := obs.SetupTracing(ctx, "sensorgate-"+def.ID, getenv)
	if err != nil {
		return fmt.Errorf("%s: tracing: %w", def.ID, err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tracing.Shutdown(sctx); err != nil {
			log.Warn("tracing: spans lost at shutdown", "err", err)
		}
	}()

	// The log of stored readings that live streams follow (docs/live.md).
	events, err := openEventLog(ctx, cfg, def.ID)
	if err != nil {
		return fmt.Errorf("%s: %w", def.ID, err)
	}
	defer events.Close()
	pub := &live.Publisher{ServiceID: def.ID, Log: events, Encode: httpapi.ReadingJSON,
		Failed: func(err error, n int) {
			log.Warn("live: readings not published (stored, but missing from streams)", "n", n, "err", err)
		}}

	rawStore, err := store.Open(ctx, store.Options{DatabaseURL: cfg.ReadingsDatabaseURL, SQLitePath: cfg.SQLitePath, ServiceID: def.ID, Logger: log,
		Committed: pub.Committed})
	if err != nil {
		return fmt.Errorf("%s: %w", def.ID, err)
	}
	st := store.Instrument(rawStore, metrics)
	defer st.Close()
	// Without Redis the log is in process; its copy in the store keeps what it logged
	// across a restart (docs/live.md "Resuming").
	if mem, ok := events.(*live.Memory); ok {
		if tab, ok := store.Events(rawStore); ok {
			if err := mem.Attach(ctx, tab); err != nil {
				return fmt.Errorf("%s: %w", def.ID, err)
			}
		}
	}

	live := map[string]ingest.LiveConfig{}
	for slug, pc := range cfg.Providers {
		live[slug] = ingest.LiveConfig{BaseURL: pc.BaseURL, Stations: pc.Stations, APIKey: pc.APIKey, Interval: pc.Interval}
	}
	// Replicas sharing a PostgreSQL readings database ingest each provider from one holder
	// of its lease (services/runtime/ingest/lease); SQLite is one process's own file.
	var ingestLease ingest.Lease
	if cfg.ReadingsDatabaseURL != "" {
		pl, err := lease.NewPostgres(cfg.ReadingsDatabaseURL, def.ID)
		if err != nil {
			return fmt.Errorf("%s: %w", def.ID, err)
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = pl.Close(cctx)
		}()
		ingestLease = pl
	}
	sched, err := ingest.New(ingest.Options{
		Mode: cfg.SourceMode, Store: st, Providers: def.Providers,
		Sim:     observation.SimConfig{Seed: cfg.SimSeed, Stations: cfg.SimStations},
		SimDays: cfg.SimDays, Dir: cfg.SourceDir, Live: live, UserAgent: cfg.UserAgent,
		WriteTimeout: cfg.ShutdownTimeout, Lease: ingestLease, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", def.ID, err)
	}
	if err := reg.Register(obs.NewIngestCollector(def.ID, sched.IngestState)); err != nil {
		return fmt.Errorf("%s: ingest metrics: %w", def.ID, err)
	}

	var keep retention
	if cfg.RetentionDays > 0 {
		pruned, err := newPrunedCounter(reg, def.ID)
		if err != nil {
			return fmt.Errorf("%s: retention metrics: %w", def.ID, err)
		}
		keep = retention{st: st, keep: time.Duration(cfg.RetentionDays) * 24 * time.Hour, interval: retentionInterval,
			now: time.Now, log: log, pruned: pruned}
	}

	mcpSrv, err := mcpserver.New(ctx, "sensorgate-"+def.ID, Version, mcpserver.Deps{ServiceID: def.ID, Store: st, Logger: log}, def.Tools...)
	if err != nil {
		return fmt.Errorf("%s: %w", def.ID, err)
	}

	meta := contract.ServiceMeta{ID: def.ID, Name: def.Name, Description: def.Description, Domain: def.Domain,
		TemporalPattern: def.TemporalPattern, Port: cfg.PublicPort, Status: "active", Version: Version,
		Providers: []contract.Provider{}, Feeds: []contract.Feed{}, Tools: mcpSrv.ToolNames()}
	for _, p := range def.Providers {
		meta.Providers = append(meta.Providers, p.Adapter.Provider)
		meta.Feeds = append(meta.Feeds, p.Adapter.Feeds...)
	}
	// The shared server set-up (pkg/httpserver): its limits, and a shutdown that makes
	// /readyz answer 503, keeps serving for ShutdownDelay, then stops accepting and gives
	// in-flight requests ShutdownTimeout to finish.
	// The gateway may speak HTTP/2 without TLS to a service (UPSTREAM_HTTP2).
	hs := httpserver.New(httpserver.Config{Logger: log, ShutdownDelay: cfg.ShutdownDelay, ShutdownTimeout: cfg.ShutdownTimeout, H2C: true})
	api := httpapi.NewServer(httpapi.Deps{
		Meta: meta, Store: st, Providers: sched.Health, ProviderHealthy: ingest.Healthy, Stopping: hs.Stopping(),
		Ready: func() bool {
			select {
			case <-sched.Ready():
				return true
			default:
				return false
			}
		},
		LastIngest: sched.LastIngest, IngestReport: sched.Report, Events: events, MCP: mcpSrv, InternalToken: cfg.InternalToken, Logger: log,
		Metrics: metrics, Registry: reg, Tracing: tracing,
	})

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("%s: listen on %s: %w", def.ID, cfg.Addr, err)
	}
	ingestCtx, stopIngest := context.WithCancel(ctx)
	defer stopIngest()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = sched.Run(ingestCtx)
	}()
	go func() {
		<-sched.Ready()
		log.Info("first ingest cycle done", "mode", cfg.SourceMode)
	}()
	if cfg.RetentionDays > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keep.run(ingestCtx, sched.Ready())
		}()
		log.Info("retention on", "days", cfg.RetentionDays, "every", retentionInterval.String())
	}

	log.Info("listening", "addr", ln.Addr().String(), "mode", cfg.SourceMode, "store", storeKind(cfg), "tools", len(meta.Tools), "event_log", events.Backend())
	// Ingest stops with ctx (the batch in flight finishes: it writes on a context shutdown
	// does not cancel), or here when serving failed.
	err = hs.Serve(ctx, ln, api)
	if err != nil {
		err = fmt.Errorf("%s: %w", def.ID, err)
	}
	stopIngest()
	wg.Wait()
	log.Info("stopped")
	return err
}

// openEventLog is the Redis Stream of the service when REDIS_URL is set, else the
// in-process log.
func openEventLog(ctx context.Context, c config.Config, serviceID string) (live.Log, error) {
	if c.RedisURL == "" {
		return live.NewMemory(0, 0, nil), nil
	}
	return live.NewRedis(ctx, c.RedisURL, c.LiveRedisPrefix, serviceID)
}

func storeKind(c config.Config) string {
	if c.ReadingsDatabaseURL != "" {
		return "postgres"
	}
	return "sqlite:" + c.SQLitePath
}

func newLogger(c config.Config, w io.Writer) *slog.Logger {
	// The one logger of pkg/obs: request and trace ids from the context on every line, and
	// keys, tokens and URL passwords redacted.
	l, err := obs.NewLogger(w, obs.LogConfig{Format: c.LogFormat, Level: c.LogLevel})
	if err != nil { // the configuration validated both already
		return slog.New(obs.NewContextHandler(slog.NewTextHandler(w, nil)))
	}
	return l
}
