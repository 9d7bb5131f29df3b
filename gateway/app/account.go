package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/sensorgate/sensorgate/gateway/account"
	"github.com/sensorgate/sensorgate/gateway/alerts"
	"github.com/sensorgate/sensorgate/gateway/api"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/config"
	"github.com/sensorgate/sensorgate/gateway/oauth"
	"github.com/sensorgate/sensorgate/gateway/store"
	keyusage "github.com/sensorgate/sensorgate/gateway/usage"
	"github.com/sensorgate/sensorgate/gateway/web"
)

// usageCopyInterval is how often the shared hourly counters are copied to the catalog.
const usageCopyInterval = time.Minute

// accounts is the account dashboard and the usage counting behind it.
type accounts struct {
	handler http.Handler // account.Off() when ACCOUNT_ORIGIN is empty
	// oauth is the authorization server's routes (none without the dashboard: people sign
	// in through it).
	oauth []oauth.Route
	usage gin.HandlerFunc
	// start runs the usage flusher (and copier) until the returned stop is called, which
	// waits for the last flush: call it before the Redis client and the store close.
	start func(ctx context.Context) (stop func())
	close func()
}

// newAccounts wires the dashboard (docs/accounts.md): usage counted per key in process and
// flushed to the limiter's Redis (one client for both) or, without Redis, to the catalog;
// the dashboard over the raw catalog store, its sign-in throttle in the same Redis.
func newAccounts(cfg config.Config, raw *store.Store, st catalog.Store, rdb *redis.Client, authn *auth.Authenticator, log *slog.Logger) (accounts, error) {
	counter := &keyusage.Counter{}
	flusher := &keyusage.Flusher{Counter: counter, Sink: raw, Touch: raw, Log: log}
	var copier *keyusage.Copier
	thisHour := func(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]int64, error) {
		out := map[uuid.UUID]int64{}
		hour := time.Now().UTC().Truncate(time.Hour)
		for _, id := range ids {
			hs, err := raw.Usage(ctx, id, hour)
			if err != nil {
				return nil, err
			}
			for _, h := range hs {
				out[id] += h.Requests
			}
		}
		return out, nil
	}
	throttle := auth.Throttle(auth.NewMemoryThrottle(10, 15*time.Minute, nil))
	if rdb != nil {
		shared := keyusage.NewRedis(rdb, redisKeyPrefix)
		flusher.Sink = shared
		copier = &keyusage.Copier{Redis: shared, Store: raw, Retention: store.UsageRetention, Log: log}
		thisHour = func(ctx context.Context, _ []uuid.UUID) (map[uuid.UUID]int64, error) {
			return shared.Hour(ctx, time.Now())
		}
		throttle = auth.NewRedisThrottle(rdb, redisKeyPrefix+"signin:", 10, 15*time.Minute, log)
	}
	a := accounts{
		usage: counter.Middleware(),
		start: func(ctx context.Context) func() {
			ctx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { flusher.Run(ctx, keyusage.DefaultFlushInterval) })
			if copier != nil {
				wg.Go(func() { copier.Run(ctx, usageCopyInterval) })
			}
			return func() { cancel(); wg.Wait() }
		},
		close: func() {},
	}
	if cfg.Account.Origin == "" {
		log.Info("account dashboard off: set ACCOUNT_ORIGIN to serve /account")
		a.handler = account.Off()
		a.oauth = oauth.OffRoutes()
		return a, nil
	}
	page, err := web.New()
	if err != nil {
		return a, fmt.Errorf("account dashboard page: %w", err)
	}
	h, err := account.New(raw, account.Config{
		Page:   page,
		Origin: cfg.Account.Origin, Environment: cfg.Env, OpenSignUp: cfg.Account.OpenSignUp,
		Plans: cfg.RateLimit.Plans, Throttle: throttle, ThisHour: thisHour,
		Projects: api.OwnProjects(st), Forget: authn.Forget, Logger: log,
		OIDC: account.OIDC{Issuer: cfg.Account.OIDCIssuer, ClientID: cfg.Account.OIDCClientID, ClientSecret: cfg.Account.OIDCClientSecret},
	})
	if err != nil {
		return a, fmt.Errorf("account dashboard: %w", err)
	}
	a.handler, a.close = h, h.Close
	// OAuth 2.1 (package oauth): tokens are checked by the same authenticator as keys.
	oc := oauth.Config{
		Issuer: cfg.Account.Origin, Environment: cfg.Env, Store: raw, Sessions: h, Forget: authn.Forget, Logger: log,
		Guard: alerts.Guard{Allow: cfg.Alerts.WebhookAllow},
	}
	if rdb != nil {
		// Every replica of this authorization server (its issuer, the public origin) counts an
		// address's registrations and refused tokens together.
		per := cfg.Account.Origin + ":"
		oc.RegisterThrottle = auth.NewRedisThrottle(rdb, redisKeyPrefix+"oauth-register:"+per, oauth.RegisterLimit, oauth.RegisterWindow, log)
		oc.TokenThrottle = auth.NewRedisThrottle(rdb, redisKeyPrefix+"oauth-token:"+per, oauth.TokenMissLimit, oauth.TokenMissWindow, log)
	}
	srv, err := oauth.New(context.Background(), oc)
	if err != nil {
		return a, fmt.Errorf("oauth: %w", err)
	}
	authn.UseTokens(srv, cfg.Account.Origin)
	a.oauth = srv.Routes()
	start := a.start
	a.start = func(ctx context.Context) func() {
		stop := start(ctx)
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { srv.RunPrune(ctx, time.Hour) })
		return func() { cancel(); wg.Wait(); stop() }
	}
	return a, nil
}
