// Package prober asks every backing service for its health in the background and records
// the result in the catalog (Store.SetServiceStatus), so that the service list shows each
// service's status as of the last probe without a request ever waiting on a service.
package prober

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
	"github.com/sensorgate/sensorgate/pkg/settings"
)

// Service statuses written to the catalog (catalog.Service.Status).
const (
	StatusActive   = "active"
	StatusDegraded = "degraded"
	StatusDown     = "down"
)

// Defaults.
const (
	DefaultInterval = 15 * time.Second
	DefaultTimeout  = 2 * time.Second
)

// StatusStore is what the prober needs of the catalog.
type StatusStore interface {
	SetServiceStatus(ctx context.Context, id, status string, at time.Time) error
}

// HealthClient fetches one service's health; *contract.Client is one.
type HealthClient interface {
	Health(ctx context.Context) (contract.Health, error)
}

var _ HealthClient = (*contract.Client)(nil)

// Result is the outcome of one probe of one service.
type Result struct {
	ServiceID string
	Status    string // active | degraded | down
	At        time.Time
	Err       error // why the service is down, when it did not answer
}

// Options configure a Prober.
type Options struct {
	Interval time.Duration
	Timeout  time.Duration
	Logger   *slog.Logger
	// Metrics receives sensorgate_service_up (1 answered, 0 down); nil records nothing.
	Metrics *obs.Metrics
	Now     func() time.Time
}

// Prober probes services on an interval.
type Prober struct {
	clients map[string]HealthClient
	store   StatusStore
	opt     Options

	mu   sync.Mutex
	last map[string]Result
}

// New returns a prober of the given services (by id).
func New(clients map[string]HealthClient, store StatusStore, opt Options) (*Prober, error) {
	if store == nil {
		return nil, errors.New("prober: a StatusStore is required")
	}
	settings.Default(&opt.Interval, DefaultInterval)
	settings.Default(&opt.Timeout, DefaultTimeout)
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	p := &Prober{clients: clients, store: store, opt: opt, last: map[string]Result{}}
	return p, nil
}

// Run probes every service at once, then every Interval, until ctx ends.
func (p *Prober) Run(ctx context.Context) error {
	t := time.NewTicker(p.opt.Interval)
	defer t.Stop()
	for {
		p.ProbeAll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// ProbeAll probes every service concurrently and records the results.
func (p *Prober) ProbeAll(ctx context.Context) []Result {
	var wg sync.WaitGroup
	out := make([]Result, 0, len(p.clients))
	var mu sync.Mutex
	for id, c := range p.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := p.Probe(ctx, id, c)
			mu.Lock()
			out = append(out, r)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// Probe asks one service and records the result.
func (p *Prober) Probe(ctx context.Context, id string, c HealthClient) Result {
	pctx, cancel := context.WithTimeout(ctx, p.opt.Timeout)
	h, err := c.Health(pctx)
	cancel()
	r := Result{ServiceID: id, At: p.opt.Now().UTC(), Status: StatusDown}
	switch {
	case err != nil:
		r.Err = err
	case h.Status == contract.StatusOK:
		r.Status = StatusActive
	case h.Status == contract.StatusDegraded:
		r.Status = StatusDegraded
	default:
		r.Err = fmt.Errorf("service reports status %q", h.Status)
	}
	if ctx.Err() != nil {
		return r // shutting down: a cancelled probe says nothing about the service
	}
	p.mu.Lock()
	prev, seen := p.last[id]
	p.last[id] = r
	p.mu.Unlock()
	if p.opt.Metrics != nil {
		up := 1.0
		if r.Status == StatusDown {
			up = 0
		}
		p.opt.Metrics.ServiceUp.WithLabelValues(id).Set(up)
	}
	if !seen || prev.Status != r.Status {
		p.opt.Logger.Info("service status", "service", id, "status", r.Status, "err", r.Err)
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), p.opt.Timeout)
	defer scancel()
	if err := p.store.SetServiceStatus(sctx, id, r.Status, r.At); err != nil {
		level := slog.LevelWarn
		if errors.Is(err, catalog.ErrNotFound) {
			level = slog.LevelDebug // not synced yet: the sync records it
		}
		p.opt.Logger.Log(ctx, level, "record service status", "service", id, "err", err)
	}
	return r
}
