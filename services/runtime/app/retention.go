package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/pkg/obs"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// retentionInterval is how often old readings are removed. Hourly keeps the boundary
// month's DELETE small (an hour of readings) while whole months go as partition drops.
const retentionInterval = time.Hour

// retention removes readings older than keep from st: once when ready is closed (the
// first ingest cycle, which may have brought old history back), then every interval,
// until ctx ends. Each run is logged and counted in pruned; a failed run is logged and
// tried again at the next tick.
type retention struct {
	st       store.Store
	keep     time.Duration
	interval time.Duration
	now      func() time.Time
	log      *slog.Logger
	pruned   prometheus.Counter
}

// newPrunedCounter registers the counter of readings removed by retention.
func newPrunedCounter(reg prometheus.Registerer, component string) (prometheus.Counter, error) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: obs.Namespace, Name: "readings_pruned_total",
		Help: "Readings removed by retention (RETENTION_DAYS).", ConstLabels: prometheus.Labels{"component": component}})
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return c, nil
}

func (r retention) run(ctx context.Context, ready <-chan struct{}) {
	select {
	case <-ctx.Done():
		return
	case <-ready:
	}
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		r.once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r retention) once(ctx context.Context) {
	before := r.now().Add(-r.keep)
	n, err := r.st.Prune(ctx, before)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("retention: pruning failed, trying again at the next run", "before", before.UTC().Format(time.RFC3339), "err", err)
		}
		return
	}
	r.pruned.Add(float64(n))
	r.log.Info("retention: old readings removed", "before", before.UTC().Format(time.RFC3339), "removed", n,
		"next_run_in", r.interval.String())
}
