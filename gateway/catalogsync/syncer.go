package catalogsync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/settings"
)

// Defaults of Config.
const (
	DefaultPageSize   = 500
	DefaultFullEvery  = 10
	DefaultMaxBackoff = 5 * time.Minute
	// maxPages bounds one listing, so a service that never stops paging cannot hold the
	// syncer forever (500 x 10,000 = 5 million stations).
	maxPages = 10_000
)

// Config configures a Syncer.
type Config struct {
	// Services are the clients of the services to sync, by id.
	Services map[string]*contract.Client
	// PageSize is the stations asked per page (default 500).
	PageSize int
	// FullEvery makes every Nth round of a service a full listing, which marks the
	// stations it no longer lists; the rounds in between ask only for what changed
	// (default 10). The first round is always full.
	FullEvery int
	// MaxBackoff caps the wait after repeated failures of a service (default 5 min).
	MaxBackoff time.Duration
	Logger     *slog.Logger
}

// serviceState is what the syncer remembers of one service between rounds.
type serviceState struct {
	rounds   int       // successful rounds
	since    time.Time // the service clock at the start of the last successful round
	failures int
	retryAt  time.Time
}

// Syncer keeps the catalog in step with the backing services. Safe for concurrent use;
// rounds of one service never overlap.
type Syncer struct {
	store   catalog.Store
	cfg     Config
	log     *slog.Logger
	clients map[string]*contract.Client
	ids     []string

	mu    sync.Mutex
	state map[string]*serviceState
	busy  map[string]*sync.Mutex
}

// New returns a Syncer of the configured services.
func New(st catalog.Store, cfg Config) (*Syncer, error) {
	if st == nil {
		return nil, errors.New("catalogsync: nil store")
	}
	if len(cfg.Services) == 0 {
		return nil, errors.New("catalogsync: no services configured")
	}
	settings.Default(&cfg.PageSize, DefaultPageSize)
	settings.Default(&cfg.FullEvery, DefaultFullEvery)
	settings.Default(&cfg.MaxBackoff, DefaultMaxBackoff)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	s := &Syncer{store: st, cfg: cfg, log: cfg.Logger, clients: map[string]*contract.Client{},
		state: map[string]*serviceState{}, busy: map[string]*sync.Mutex{}}
	for id, c := range cfg.Services {
		if id == "" || c == nil {
			return nil, fmt.Errorf("catalogsync: service %q has no client", id)
		}
		s.clients[id] = c
		s.state[id] = &serviceState{}
		s.busy[id] = &sync.Mutex{}
		s.ids = append(s.ids, id)
	}
	sort.Strings(s.ids)
	return s, nil
}

// serviceRegistrar is implemented by stores that can list a configured service before it
// has ever answered (store.Store does).
type serviceRegistrar interface {
	UpsertService(ctx context.Context, sv catalog.Service) error
}

// Register records every configured service in the store (status down until its first
// sync), so that /services lists a service that is down at start.
func (s *Syncer) Register(ctx context.Context) error {
	reg, ok := s.store.(serviceRegistrar)
	if !ok {
		return nil
	}
	var errs []error
	for _, id := range s.ids {
		if err := reg.UpsertService(ctx, catalog.Service{ID: id, URL: s.cfg.Services[id].BaseURL()}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SyncOnce runs one round of every service that is not backing off, concurrently, and
// returns their errors joined (each naming its service). One failing service does not
// stop the others.
func (s *Syncer) SyncOnce(ctx context.Context) error {
	now := time.Now()
	return s.syncWhere(ctx, func(st *serviceState) bool { return !st.retryAt.After(now) })
}

// syncWhere runs, concurrently, a round of each service whose state pick accepts.
func (s *Syncer) syncWhere(ctx context.Context, pick func(*serviceState) bool) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, id := range s.ids {
		s.mu.Lock()
		ok := pick(s.state[id])
		s.mu.Unlock()
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.SyncService(ctx, id); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// SyncService runs one round of service id now: a full listing on the first round and
// every FullEvery rounds, otherwise the stations changed since the last round.
func (s *Syncer) SyncService(ctx context.Context, id string) (catalog.SyncResult, error) {
	c, ok := s.clients[id]
	if !ok {
		return catalog.SyncResult{}, fmt.Errorf("catalogsync: service %q is not configured", id)
	}
	s.busy[id].Lock()
	defer s.busy[id].Unlock()
	s.mu.Lock()
	st := *s.state[id]
	s.mu.Unlock()

	full := st.rounds%s.cfg.FullEvery == 0
	start := time.Now()
	res, serverTime, rejected, err := s.round(ctx, id, c, full, st.since)

	s.mu.Lock()
	defer s.mu.Unlock()
	state := s.state[id]
	if err != nil {
		state.failures++
		backoff := s.backoff(state.failures)
		state.retryAt = time.Now().Add(backoff)
		// Until a service's first successful round it is most likely still starting: INFO;
		// after that a failure is real: WARN.
		level, msg := slog.LevelWarn, "catalog sync failed"
		if state.rounds == 0 {
			level, msg = slog.LevelInfo, "catalog sync: service not answering yet"
		}
		s.log.Log(ctx, level, msg, "service", id, "full", full, "failures", state.failures,
			"retry_in", backoff.Round(time.Second).String(), "err", err)
		return res, fmt.Errorf("catalog sync of %s: %w", id, err)
	}
	state.failures, state.retryAt = 0, time.Time{}
	state.rounds++
	state.since = serverTime
	s.log.InfoContext(ctx, "catalog sync", "service", id, "full", full, "inserted", res.Inserted,
		"updated", res.Updated, "unchanged", res.Unchanged, "marked_missing", res.MarkedMissing,
		"rejected", rejected, "duration_ms", time.Since(start).Milliseconds())
	return res, nil
}

// backoff doubles from one second with each consecutive failure, capped, with jitter so
// that replicas do not retry in step.
func (s *Syncer) backoff(failures int) time.Duration {
	d := time.Second << min(failures-1, 20)
	d = min(d, s.cfg.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// round fetches and applies one round. It returns the service clock to use as the next
// updated_since.
func (s *Syncer) round(ctx context.Context, id string, c *contract.Client, full bool, since time.Time) (catalog.SyncResult, time.Time, int, error) {
	meta, err := c.Meta(ctx)
	if err != nil {
		return catalog.SyncResult{}, time.Time{}, 0, fmt.Errorf("meta: %w", err)
	}
	if meta.ID != "" && meta.ID != id {
		return catalog.SyncResult{}, time.Time{}, 0, fmt.Errorf("the service at %s says it is %q, not %q", c.BaseURL(), meta.ID, id)
	}
	meta.ID = id
	if full {
		since = time.Time{}
	}
	stations, serverTime, consistent, err := s.list(ctx, c, since)
	if err != nil {
		return catalog.SyncResult{}, time.Time{}, 0, err
	}
	if full && !consistent {
		// The listing changed while it was paged: a station may have slid between two
		// pages. Marking it missing would be wrong, so apply this round as incremental.
		s.log.WarnContext(ctx, "catalog sync: listing changed while paging, not marking missing stations", "service", id)
		full = false
	}
	b, rejects := batchFor(ServiceFromMeta(meta, s.cfg.Services[id].BaseURL()), meta.Providers, meta.Feeds, stations, full)
	for _, r := range rejects {
		s.log.WarnContext(ctx, "catalog sync: station rejected", "service", id, "err", r)
	}
	if full && len(rejects) > 0 {
		// A rejected station is not absent: keep what the catalog knows of it.
		b.Full = false
	}
	res, err := s.store.Sync(ctx, b)
	if err != nil {
		return res, time.Time{}, len(rejects), fmt.Errorf("store: %w", err)
	}
	return res, serverTime, len(rejects), nil
}

// list pages through the service's stations. consistent is false when the total changed
// between pages.
func (s *Syncer) list(ctx context.Context, c *contract.Client, since time.Time) ([]contract.Station, time.Time, bool, error) {
	var (
		out        []contract.Station
		serverTime time.Time
		total      = -1
		consistent = true
	)
	localStart := time.Now().UTC()
	for page := 1; page <= maxPages; page++ {
		p, err := c.Sensors(ctx, since, page, s.cfg.PageSize)
		if err != nil {
			return nil, time.Time{}, false, fmt.Errorf("sensors page %d: %w", page, err)
		}
		if page == 1 {
			serverTime = p.ServerTime.Time
			if serverTime.IsZero() {
				serverTime = localStart.Add(-time.Minute) // the service sent no clock: allow for skew
			}
			total = p.Pagination.Total
		} else if p.Pagination.Total != total {
			consistent = false
		}
		out = append(out, p.Sensors...)
		if len(p.Sensors) == 0 || p.Pagination.TotalPages <= page || len(out) >= p.Pagination.Total {
			return out, serverTime, consistent, nil
		}
	}
	return nil, time.Time{}, false, fmt.Errorf("sensors: more than %d pages", maxPages)
}

// Run syncs every service now and then every interval until ctx ends. A failing service
// is retried with exponential backoff (capped by MaxBackoff) while the others keep their
// pace. It returns nil when ctx ends.
func (s *Syncer) Run(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		return fmt.Errorf("catalogsync: interval must be positive, got %s", interval)
	}
	if err := s.Register(ctx); err != nil {
		s.log.WarnContext(ctx, "catalog sync: register services", "err", err)
	}
	// A shorter tick than the interval lets a backed-off service retry on time.
	tick := min(interval, time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	var last time.Time
	for {
		now := time.Now()
		if now.Sub(last) >= interval {
			last = now
			_ = s.SyncOnce(ctx) // errors are logged per service
		} else {
			// Failed services retry when their backoff runs out, not at the next interval.
			_ = s.syncWhere(ctx, func(st *serviceState) bool { return st.failures > 0 && !st.retryAt.After(now) })
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
