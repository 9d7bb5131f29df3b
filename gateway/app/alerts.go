package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/sensorgate/sensorgate/gateway/alerts"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/config"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/gateway/stream"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// alerting is the alert rules' wiring (docs/alerts.md): the REST handlers, the evaluator
// (the leader replica only) and the webhook sender (every replica).
type alerting struct {
	handlers  *alerts.Handlers
	evaluator *alerts.Evaluator
	sender    *alerts.Sender
}

// newAlerts opens the alert tables in the catalog database and builds the evaluator over
// the stream hub's live feed. On PostgreSQL the evaluating replica is the one holding an
// advisory lock; SQLite (make run) is one process, which always evaluates.
func newAlerts(ctx context.Context, cfg config.Config, raw *store.Store, st catalog.Store, resolver *catalog.Resolver, hub *stream.Hub, log *slog.Logger) (alerting, error) {
	as, err := alerts.NewStore(ctx, raw.DB(), raw.Postgres(), log)
	if err != nil {
		return alerting{}, err
	}
	var leader alerts.Leader = alerts.LocalLeader{}
	if raw.Postgres() {
		sqlDB, err := raw.DB().DB()
		if err != nil {
			return alerting{}, fmt.Errorf("alerts: %w", err)
		}
		leader = alerts.PostgresLeader{DB: sqlDB}
	}
	guard := alerts.Guard{Allow: cfg.Alerts.WebhookAllow}
	if cfg.Env == config.EnvDevelopment {
		// A development gateway lets a receiver on the same machine be tried.
		guard.Allow = append(guard.Allow, netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"))
	}
	// The evaluator finds a reading's sensor (its position, feed and interval) through the
	// one resolver too.
	lookup := func(ctx context.Context, id string) (alerts.SensorInfo, bool, error) {
		s, err := resolver.Resolve(ctx, id)
		var ae *apierr.Error
		if errors.As(err, &ae) && (ae.Code == apierr.SensorNotFound || ae.Code == apierr.InvalidParameter) {
			return alerts.SensorInfo{}, false, nil
		}
		if err != nil {
			return alerts.SensorInfo{}, false, err
		}
		info := alerts.SensorInfo{Lat: s.Latitude, Lon: s.Longitude, IntervalS: s.ReportingIntervalS, LastReadingAt: s.LastReadingAt}
		if s.FeedID != nil {
			info.ProjectID = s.FeedID.String()
		}
		return info, true, nil
	}
	return alerting{
		handlers: &alerts.Handlers{Store: as, Guard: guard, Quota: alerts.Quotas(cfg.Alerts.Quotas).For,
			Resolve: resolver.Resolve, Projects: st},
		evaluator: alerts.NewEvaluator(alerts.EvaluatorOptions{Store: as, Hub: hub, Leader: leader, Sensors: lookup, Logger: log}),
		sender:    alerts.NewSender(alerts.SenderOptions{Store: as, Guard: guard, Logger: log}),
	}, nil
}

// migrateAlerts applies the alert tables' migrations (their own goose table and lock, in
// the catalog database) for the migrate command; serve applies them at start too.
func migrateAlerts(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	sc := storeConfig(cfg, log)
	sc.SkipMigrations = true
	s, err := store.Open(ctx, sc)
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = alerts.NewStore(ctx, s.DB(), s.Postgres(), log)
	return err
}
