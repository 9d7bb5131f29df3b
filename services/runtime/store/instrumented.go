package store

import (
	"context"
	"errors"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// Instrument returns s with every call timed in sensorgate_store_query_duration_seconds
// (store "readings", op the method) and traced as a child span of the request in its
// context. A station or reading that is not there is an answer, not a failure, so it is
// counted as ok. m nil returns s unchanged.
func Instrument(s Store, m *obs.Metrics) Store {
	if m == nil {
		return s
	}
	return &instrumented{s: s, m: m}
}

type instrumented struct {
	s Store
	m *obs.Metrics
}

var _ Store = (*instrumented)(nil)

// failure hides the expected misses from the error series.
func failure(err error) error {
	if errors.Is(err, ErrStationNotFound) || errors.Is(err, ErrNoReadings) {
		return nil
	}
	return err
}

func (i *instrumented) Station(ctx context.Context, externalID string) (contract.Station, error) {
	ctx, done := i.m.StoreQuery(ctx, "readings", "station")
	st, err := i.s.Station(ctx, externalID)
	done(failure(err))
	return st, err
}

func (i *instrumented) Stations(ctx context.Context, f StationFilter) ([]contract.Station, int, error) {
	ctx, done := i.m.StoreQuery(ctx, "readings", "stations")
	out, n, err := i.s.Stations(ctx, f)
	done(failure(err))
	return out, n, err
}

func (i *instrumented) LatestReading(ctx context.Context, externalID string) (Reading, error) {
	ctx, done := i.m.StoreQuery(ctx, "readings", "latest_reading")
	r, err := i.s.LatestReading(ctx, externalID)
	done(failure(err))
	return r, err
}

func (i *instrumented) LatestReadings(ctx context.Context, externalIDs []string) ([]StationLatest, error) {
	ctx, done := i.m.StoreQuery(ctx, "readings", "latest_readings")
	out, err := i.s.LatestReadings(ctx, externalIDs)
	done(err)
	return out, err
}

func (i *instrumented) Readings(ctx context.Context, externalID string, q contract.ReadingsQuery) ([]Reading, int, error) {
	ctx, done := i.m.StoreQuery(ctx, "readings", "readings")
	out, n, err := i.s.Readings(ctx, externalID, q)
	done(failure(err))
	return out, n, err
}

func (i *instrumented) Aggregate(ctx context.Context, externalID string, q AggregateQuery) (AggregateResult, error) {
	ctx, done := i.m.StoreQuery(ctx, "aggregate", "rollups")
	out, err := i.s.Aggregate(ctx, externalID, q)
	done(failure(err))
	return out, err
}

func (i *instrumented) Scan(ctx context.Context, externalID string, q ScanQuery, fn func(Reading) error) error {
	ctx, done := i.m.StoreQuery(ctx, "scan", "readings")
	err := i.s.Scan(ctx, externalID, q, fn)
	done(failure(err))
	return err
}

func (i *instrumented) Ingest(ctx context.Context, b Batch) (IngestResult, error) {
	ctx, done := i.m.StoreQuery(ctx, "readings", "ingest")
	res, err := i.s.Ingest(ctx, b)
	done(err)
	return res, err
}

func (i *instrumented) Ping(ctx context.Context) error {
	ctx, done := i.m.StoreQuery(ctx, "readings", "ping")
	err := i.s.Ping(ctx)
	done(err)
	return err
}

func (i *instrumented) Stats(ctx context.Context) (Stats, error) {
	ctx, done := i.m.StoreQuery(ctx, "readings", "stats")
	st, err := i.s.Stats(ctx)
	done(err)
	return st, err
}

func (i *instrumented) Footprint(ctx context.Context) (Footprint, error) {
	ctx, done := i.m.StoreQuery(ctx, "readings", "footprint")
	f, err := i.s.Footprint(ctx)
	done(err)
	return f, err
}

func (i *instrumented) Prune(ctx context.Context, before time.Time) (int64, error) {
	ctx, done := i.m.StoreQuery(ctx, "readings", "prune")
	n, err := i.s.Prune(ctx, before)
	done(err)
	return n, err
}

func (i *instrumented) Close() error { return i.s.Close() }
