package catalog_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// lookup is a catalog of three sensors that counts its queries and answers each after a
// short pause, so that concurrent misses overlap.
type lookup struct {
	sensors map[string]catalog.Sensor // by external id
	queries atomic.Int64
}

func (l *lookup) Sensor(_ context.Context, id uuid.UUID) (catalog.Sensor, error) {
	l.queries.Add(1)
	time.Sleep(5 * time.Millisecond)
	for _, s := range l.sensors {
		if s.ID == id {
			return s, nil
		}
	}
	return catalog.Sensor{}, catalog.ErrNotFound
}

func (l *lookup) SensorByExternalID(_ context.Context, ext string) (catalog.Sensor, error) {
	l.queries.Add(1)
	time.Sleep(5 * time.Millisecond)
	if s, ok := l.sensors[ext]; ok {
		return s, nil
	}
	return catalog.Sensor{}, catalog.ErrNotFound
}

// TestResolverConcurrent: many callers resolving the same and different references at
// once (run under -race by make test) each get their own sensor, never another's;
// concurrent misses of one reference are coalesced; a miss is not cached.
func TestResolverConcurrent(t *testing.T) {
	l := &lookup{sensors: map[string]catalog.Sensor{}}
	for _, ext := range []string{"41001", "TPLM2", "SG003"} {
		l.sensors[ext] = catalog.Sensor{ID: uuid.New(), ExternalID: ext, Name: "station " + ext}
	}
	r := catalog.NewResolver(l, time.Minute)
	var refs []string
	for ext, s := range l.sensors {
		refs = append(refs, ext, s.ID.String())
	}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func(ref string) {
			defer wg.Done()
			s, err := r.Resolve(context.Background(), ref)
			if err != nil {
				t.Errorf("resolve %s: %v", ref, err)
				return
			}
			if s.ExternalID != ref && s.ID.String() != ref {
				t.Errorf("resolve %s gave sensor %s (%s)", ref, s.ID, s.ExternalID)
			}
		}(refs[i%len(refs)])
	}
	wg.Wait()
	// One query per reference, but for a caller whose cache miss came just before another
	// caller's query finished (a new query, as after expiry): far fewer than the callers.
	if q := l.queries.Load(); q > 200/4 {
		t.Errorf("%d catalog queries for 200 callers of %d distinct references: misses not coalesced", q, len(refs))
	}
	before := l.queries.Load()
	for range 2 {
		_, err := r.Resolve(context.Background(), "NOPE1")
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Code != apierr.SensorNotFound {
			t.Fatalf("unknown sensor: %v", err)
		}
	}
	if got := l.queries.Load() - before; got != 2 {
		t.Errorf("a miss was cached: %d queries for two lookups of an unknown sensor", got)
	}
}
