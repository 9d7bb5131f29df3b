package app

import (
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/sensorgate/sensorgate/gateway/api"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/config"
	"github.com/sensorgate/sensorgate/gateway/latest"
	"github.com/sensorgate/sensorgate/gateway/stream"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// live is area latest and the streams (docs/live.md): their handlers and the hub that
// follows each service's log of stored readings.
type live struct {
	handlers api.LiveHandlers
	hub      *stream.Hub
	// Latest answers area latest for the MCP tool latest_in_area too.
	latest *latest.Handler
	// streams serves the readings streams; MCP subscriptions and the alert stream open
	// through it, under its per-key cap.
	streams *stream.Handler
	// close releases the stream cap's Redis client (when REDIS_URL is set).
	close func()
}

// newLive builds area latest and one log follower per configured service, over the
// services' clients.
// With REDIS_URL the per-key stream cap is shared by every replica (stream.RedisLimiter,
// leases of three heartbeats); without it each replica counts its own.
func newLive(cfg config.Config, st catalog.Store, resolver *catalog.Resolver, clients map[string]*contract.Client, rdb *redis.Client, met *obs.Metrics, log *slog.Logger) (live, error) {
	batch := map[string]latest.BatchClient{}
	sources := map[string]stream.Source{}
	for id, c := range clients {
		batch[id], sources[id] = c, c
	}
	lh := latest.New(latest.Options{Store: st, Services: batch, Logger: log})
	hub := stream.NewHub(stream.HubOptions{Sources: sources, Buffer: cfg.Stream.Buffer, Logger: log, Delay: met.StreamDelay})
	closeFn := func() {}
	var limiter stream.Limiter
	if rdb != nil {
		heartbeat := cfg.Stream.Heartbeat
		if heartbeat <= 0 {
			heartbeat = stream.DefaultHeartbeat
		}
		rl := stream.NewRedisLimiter(rdb, redisKeyPrefix, 3*heartbeat, log)
		limiter = rl
		closeFn = rl.Close
	}
	sh := stream.NewHandler(stream.Options{Hub: hub, Store: st, Resolver: resolver, Cap: stream.NewCap(limiter, cfg.Stream.MaxPerKey),
		Heartbeat: cfg.Stream.Heartbeat, FlushInterval: cfg.Stream.FlushInterval, Logger: log})
	return live{
		handlers: api.LiveHandlers{AreaLatest: lh.Serve, SensorStream: sh.SensorStream, AreaStream: sh.AreaStream},
		hub:      hub,
		latest:   lh,
		streams:  sh,
		close:    closeFn,
	}, nil
}
