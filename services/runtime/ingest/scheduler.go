package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// LiveConfig overrides a provider's live defaults.
type LiveConfig struct {
	BaseURL  string
	Stations []string
	APIKey   string
	Interval time.Duration
}

// Options configure a Scheduler.
type Options struct {
	Mode      string
	Store     store.Writer
	Providers []Provider
	// Simulate mode.
	Sim     observation.SimConfig
	SimDays int
	// Files mode.
	Dir         string
	FilesRescan time.Duration
	// Live mode, by provider slug.
	Live      map[string]LiveConfig
	UserAgent string
	// HTTPClient is the live client (tests inject one with short backoff); default a
	// retryablehttp client with 3 retries, exponential backoff and Retry-After.
	HTTPClient *retryablehttp.Client
	// WriteTimeout bounds one batch's transaction, also while draining at shutdown.
	WriteTimeout time.Duration
	// Lease, when set, lets only its holder ingest each provider: replicas sharing one
	// PostgreSQL readings database would otherwise all poll the providers and write the
	// same readings. Nil (SQLite, one process): every provider is ingested here.
	Lease Lease
	// LeaseRetry is how often a standby replica tries to take a provider's lease (default
	// 10 s, at most half the provider's poll interval), so a dead holder's providers are
	// taken over well within 30 s and within one poll interval.
	LeaseRetry time.Duration
	Logger     *slog.Logger
	Now        func() time.Time
}

// Lease is a per-provider lock shared by the replicas of a service (package lease).
type Lease interface {
	// Hold takes or keeps the provider's lease and reports whether this process holds it.
	Hold(ctx context.Context, provider string) (bool, error)
	// Release gives the provider's lease up (at shutdown, for a quick takeover).
	Release(ctx context.Context, provider string) error
}

// Lease states reported in a provider's health.
const (
	LeaseHeld    = "held"
	LeaseStandby = "standby"
)

// Scheduler runs one ingest loop per provider.
type Scheduler struct {
	o       Options
	log     *slog.Logger
	mu      sync.Mutex
	state   map[string]*providerState
	order   []string
	loops   map[string]source
	primed  sync.WaitGroup
	ready   chan struct{}
	reports *reportLog
}

type providerState struct {
	mode          string
	lastSuccess   time.Time
	lastError     time.Time
	lastErrorText string
	newest        time.Time
	ingested      int64
	duplicates    int64
	rejected      map[string]int64
	cycles        int
	lease         string // LeaseHeld, LeaseStandby, or empty without a lease
}

// New validates the options and builds the sources.
func New(o Options) (*Scheduler, error) {
	if o.Store == nil {
		return nil, errors.New("ingest: no store")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 2 * time.Minute
	}
	if o.LeaseRetry <= 0 {
		o.LeaseRetry = 10 * time.Second
	}
	if o.FilesRescan <= 0 {
		o.FilesRescan = time.Minute
	}
	if o.UserAgent == "" {
		o.UserAgent = "sensorgate (+https://github.com/sensorgate/sensorgate)"
	}
	if o.HTTPClient == nil {
		c := retryablehttp.NewClient()
		c.RetryMax = 3
		c.RetryWaitMin = time.Second
		c.RetryWaitMax = 30 * time.Second
		c.Logger = nil
		c.HTTPClient.Timeout = 60 * time.Second
		o.HTTPClient = c
	}
	if o.HTTPClient.ErrorHandler == nil {
		// After the last retry, hand back the provider's answer so health names its
		// status rather than "giving up".
		o.HTTPClient.ErrorHandler = retryablehttp.PassthroughErrorHandler
	}
	s := &Scheduler{o: o, log: o.Logger, state: map[string]*providerState{}, loops: map[string]source{}, ready: make(chan struct{}), reports: newReportLog()}
	for _, p := range o.Providers {
		slug := p.Slug()
		st := &providerState{mode: o.Mode, rejected: map[string]int64{}}
		s.state[slug] = st
		s.order = append(s.order, slug)
		src, err := s.source(p)
		if err != nil {
			return nil, err
		}
		if src == nil {
			// A provider that cannot be fed in this mode (no simulator, no live API) is
			// switched off rather than reported as failing: it has nothing to ingest.
			st.mode = ModeOff
			s.log.Info("ingest: provider off", "provider", slug, "reason", fmt.Sprintf("no %s source", o.Mode))
			continue
		}
		s.loops[slug] = src
	}
	return s, nil
}

func (s *Scheduler) source(p Provider) (source, error) {
	slug := p.Slug()
	cadence := p.Cadence
	if cadence <= 0 {
		cadence = 10 * time.Minute
	}
	switch s.o.Mode {
	case ModeSimulate:
		if p.Adapter.Simulator == nil {
			return nil, nil
		}
		days := s.o.SimDays
		if days < 0 {
			return nil, fmt.Errorf("ingest: simulated days must be 0 or more, got %d", days)
		}
		return &simSource{sim: p.Adapter.Simulator, cfg: s.o.Sim, days: days, cadence: cadence, now: s.o.Now}, nil
	case ModeFiles:
		if p.Classify == nil {
			return nil, nil
		}
		if s.o.Dir == "" {
			return nil, errors.New("ingest: files mode needs a source folder (SOURCE_DIR)")
		}
		return &filesSource{dir: s.o.Dir, classify: p.Classify, every: s.o.FilesRescan, maxSize: 256 << 20, seen: map[string]string{}}, nil
	case ModeLive:
		if p.Live.Targets == nil {
			return nil, nil
		}
		lc := s.o.Live[slug]
		base := lc.BaseURL
		if base == "" {
			base = p.Live.DefaultBaseURL
		}
		stations := lc.Stations
		if len(stations) == 0 {
			stations = p.Live.DefaultStations
		}
		if p.Live.NeedsAPIKey && lc.APIKey == "" {
			return nil, nil
		}
		every := lc.Interval
		if every <= 0 {
			every = cadence
		}
		targets := p.Live.Targets(strings.TrimRight(base, "/"), stations, lc.APIKey)
		return &liveSource{client: s.o.HTTPClient, targets: targets, userAgent: s.o.UserAgent,
			every: every, maxBody: 64 << 20, now: s.o.Now, state: map[string]*validators{}}, nil
	default:
		return nil, fmt.Errorf("ingest: source mode must be %s, %s or %s, got %q", ModeSimulate, ModeFiles, ModeLive, s.o.Mode)
	}
}

// Ready is closed when every provider has finished its first cycle (the history of
// simulate mode, the folder of files mode, the first poll of live mode).
func (s *Scheduler) Ready() <-chan struct{} { return s.ready }

// Run ingests until ctx ends, then finishes the batch in flight of each provider and
// returns.
func (s *Scheduler) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	s.primed.Add(len(s.loops))
	go func() {
		s.primed.Wait()
		close(s.ready)
	}()
	byslug := map[string]Provider{}
	for _, p := range s.o.Providers {
		byslug[p.Slug()] = p
	}
	for _, slug := range s.order {
		src, ok := s.loops[slug]
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.loop(ctx, byslug[slug], src)
		}()
	}
	wg.Wait()
	return nil
}

func (s *Scheduler) loop(ctx context.Context, p Provider, src source) {
	slug := p.Slug()
	first := true
	if s.o.Lease != nil {
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := s.o.Lease.Release(rctx, slug); err != nil {
				s.log.Warn("ingest: lease release", "provider", slug, "err", err)
			}
		}()
	}
	for {
		if !s.holdLease(ctx, slug) {
			// A standby is ready at once: it serves reads from the shared store.
			if first {
				first = false
				s.primed.Done()
			}
			if !sleep(ctx, min(s.o.LeaseRetry, src.interval()/2)) {
				return
			}
			continue
		}
		items, err := src.poll(ctx)
		if err != nil && ctx.Err() == nil {
			s.fail(slug, err)
			s.log.Warn("ingest: poll", "provider", slug, "err", err)
		}
		landed := 0
		for _, it := range items {
			if ctx.Err() != nil {
				break // drain: the batch in flight finished; start no new one
			}
			ack, ok := s.ingest(ctx, p, it)
			if it.done != nil {
				it.done(ack)
			}
			if ok {
				landed++
			}
		}
		s.mu.Lock()
		st := s.state[slug]
		st.cycles++
		// A cycle succeeded when its poll did (nothing new, 304s included) or when
		// anything it fetched landed: one bad document or one station down among many
		// shows in last_error, but only a cycle that got nothing marks the provider
		// unhealthy.
		if ctx.Err() == nil && (err == nil || landed > 0) {
			st.lastSuccess = s.o.Now()
		}
		s.mu.Unlock()
		if first {
			first = false
			s.primed.Done()
		}
		if !sleep(ctx, src.interval()) {
			return
		}
	}
}

// holdLease reports whether this process ingests slug now, logging every change of hands.
func (s *Scheduler) holdLease(ctx context.Context, slug string) bool {
	if s.o.Lease == nil {
		return true
	}
	held, err := s.o.Lease.Hold(ctx, slug)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("ingest: lease", "provider", slug, "err", err)
	}
	state := LeaseStandby
	if held {
		state = LeaseHeld
	}
	s.mu.Lock()
	st := s.state[slug]
	was := st.lease
	st.lease = state
	s.mu.Unlock()
	if was != state {
		s.log.Info("ingest: lease "+state, "provider", slug)
	}
	return held
}

// sleep waits d or until ctx ends, and reports whether to go on.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// ingest parses and writes one payload. The write runs on a context that shutdown does
// not cancel (bounded by WriteTimeout), so a batch in flight always finishes. ack says the
// document need not be fetched again (it landed, or it is unreadable and will stay so);
// landed that its batch was written.
func (s *Scheduler) ingest(ctx context.Context, p Provider, it item) (ack, landed bool) {
	slug := p.Slug()
	rep := DocumentReport{Provider: slug, Mode: s.o.Mode, Document: it.origin, Format: it.payload.Format,
		IngestedAt: contract.Time{Time: s.o.Now().UTC()}, Dropped: map[string]int{}}
	defer func() { s.record(rep) }()
	b, err := p.Adapter.Parse(it.payload)
	if err != nil {
		s.fail(slug, fmt.Errorf("parse %s: %w", it.origin, err))
		s.reject(slug, map[string]int64{DropUnreadable: 1})
		rep.Dropped[DropUnreadable] = 1
		rep.Error = err.Error()
		return true, false
	}
	now := s.o.Now()
	reasons := map[string]int64{}
	for _, r := range b.Rejections {
		reasons[r.Reason]++
	}
	if b.MissingValues > 0 {
		reasons[DropMissingMarker] += int64(b.MissingValues)
	}
	obs := b.Observations[:0:0]
	var newest, oldest time.Time
	for _, o := range b.Observations {
		// A clock far ahead is a broken row, not a forecast.
		if o.Time.After(now.Add(6*time.Hour)) || o.Time.Year() < 1970 {
			reasons["bad_timestamp"]++
			continue
		}
		if o.Time.After(newest) {
			newest = o.Time
		}
		if oldest.IsZero() || o.Time.Before(oldest) {
			oldest = o.Time
		}
		o.Source.Document = it.origin
		if s.o.Mode == ModeSimulate {
			o.Source.Rank = observation.RankSimulated
		}
		obs = append(obs, o)
	}
	rep.RecordsRead, rep.Observations, rep.Stations = b.Records, len(obs), len(b.Stations)
	rep.FirstTimestamp, rep.LastTimestamp = timePtr(oldest), timePtr(newest)
	for k, v := range reasons {
		rep.Dropped[k] = int(v)
	}
	if len(b.Stations) == 0 && len(obs) == 0 {
		s.reject(slug, reasons)
		return true, true
	}
	batch := store.Batch{Provider: slug, Feed: p.Feed(), FetchedAt: now, Source: it.origin, Stations: b.Stations, Observations: obs}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.WriteTimeout)
	defer cancel()
	var res store.IngestResult
	for attempt := 0; ; attempt++ {
		res, err = s.o.Store.Ingest(wctx, batch)
		if err == nil || attempt == 2 || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(time.Duration(attempt+1) * 500 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if err != nil {
		s.fail(slug, fmt.Errorf("store %s: %w", it.origin, err))
		s.log.Error("ingest: store", "provider", slug, "origin", it.origin, "err", err)
		rep.Error = "store: " + err.Error()
		return false, false
	}
	rep.ReadingsStored, rep.Duplicates = res.Inserted, res.Duplicates
	s.mu.Lock()
	st := s.state[slug]
	st.lastSuccess = now
	st.ingested += int64(res.Inserted)
	st.duplicates += int64(res.Duplicates)
	if newest.After(st.newest) {
		st.newest = newest
	}
	for k, v := range reasons {
		st.rejected[k] += v
	}
	s.mu.Unlock()
	return true, true
}

// record keeps a document's report and logs it: one line per recorded file or live fetch
// (simulated payloads, one a station and tick, at debug level).
func (s *Scheduler) record(r DocumentReport) {
	s.reports.add(r)
	level := slog.LevelInfo
	if s.o.Mode == ModeSimulate {
		level = slog.LevelDebug
	}
	attrs := []any{"provider", r.Provider, "document", r.Document, "format", r.Format, "records_read", r.RecordsRead,
		"observations", r.Observations, "readings_stored", r.ReadingsStored, "duplicates", r.Duplicates, "dropped", r.Dropped}
	if r.FirstTimestamp != nil {
		attrs = append(attrs, "first", r.FirstTimestamp.Time, "last", r.LastTimestamp.Time)
	}
	if r.Error != "" {
		attrs = append(attrs, "err", r.Error)
	}
	s.log.Log(context.Background(), level, "ingest: document", attrs...)
}

// Report returns the latest ingest report of every document, by provider and document.
func (s *Scheduler) Report() Report { return s.reports.snapshot() }

func (s *Scheduler) fail(slug string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state[slug]
	st.lastError = s.o.Now()
	st.lastErrorText = err.Error()
	if len(st.lastErrorText) > 500 {
		st.lastErrorText = st.lastErrorText[:500] + "…"
	}
}

func (s *Scheduler) reject(slug string, reasons map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range reasons {
		s.state[slug].rejected[k] += v
	}
}

// Health reports each provider's ingest state, in provider order.
func (s *Scheduler) Health() []contract.ProviderHealth {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	out := make([]contract.ProviderHealth, 0, len(s.order))
	for _, slug := range s.order {
		st := s.state[slug]
		h := contract.ProviderHealth{Slug: slug, Mode: st.mode, Lease: st.lease, LastError: st.lastErrorText, RowsIngested: st.ingested, RowsRejected: map[string]int64{}}
		for k, v := range st.rejected {
			h.RowsRejected[k] = v
		}
		if !st.lastSuccess.IsZero() {
			h.LastSuccessAt = &contract.Time{Time: st.lastSuccess}
		}
		if !st.lastError.IsZero() {
			h.LastErrorAt = &contract.Time{Time: st.lastError}
		}
		if !st.newest.IsZero() {
			lag := now.Sub(st.newest).Seconds()
			h.LagSeconds = &lag
		}
		out = append(out, h)
	}
	return out
}

// Healthy reports whether a provider's last attempt succeeded (false also when it has no
// in the mode it runs in or has not succeeded yet after its first cycle); a provider
// switched off for want of a source in this mode, or ingested by another replica (lease
// standby), counts as healthy.
func Healthy(h contract.ProviderHealth) bool {
	if h.Mode == ModeOff {
		return true
	}
	if h.Lease == LeaseStandby {
		return true // another replica ingests this provider; this one serves reads
	}
	if h.LastSuccessAt == nil {
		return false
	}
	return h.LastErrorAt == nil || h.LastSuccessAt.After(h.LastErrorAt.Time)
}

// LastIngest is the time of the newest successful batch of any provider.
func (s *Scheduler) LastIngest() *time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var last time.Time
	for _, st := range s.state {
		if st.lastSuccess.After(last) {
			last = st.lastSuccess
		}
	}
	if last.IsZero() {
		return nil
	}
	return &last
}
