package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// TestScanReadsAheadInOrder: Scan, which reads the next chunk of 2,000 while fn works
// through the current one, gives every reading once in time order across chunks (a mix of
// block and inline readings, lat/lon per reading), the same as the readings pages;
// readings kept from earlier chunks are still intact at the end (no buffer is reused);
// and it stops at fn's first error, or when ctx ends, returning that error.
func TestScanReadsAheadInOrder(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		const n = 4500 // three chunks, the last one short
		full := ndbcBatch("S1", start, n)
		if _, err := s.Ingest(ctx, full); err != nil {
			t.Fatal(err)
		}
		// One more reading alone in its batch: stored inline.
		one := ndbcBatch("S1", start, n+1)
		if res, err := s.Ingest(ctx, one); err != nil || res.Inserted != 1 {
			t.Fatalf("inline reading: %+v, %v", res, err)
		}
		var kept []store.Reading
		err := s.Scan(ctx, "S1", store.ScanQuery{}, func(r store.Reading) error {
			kept = append(kept, r)
			return nil
		})
		if err != nil || len(kept) != n+1 {
			t.Fatalf("scan: %d readings, %v", len(kept), err)
		}
		for i, r := range kept {
			o := one.Observations[i]
			want, _ := json.Marshal(o.Measurements)
			if !r.Time.Equal(o.Time) || withoutQC(t, r.Measurements) != string(want) || r.Lat == nil || *r.Lat != *o.Lat || *r.Lon != *o.Lon {
				t.Fatalf("reading %d: got %v %s, want %v %s", i, r.Time, r.Measurements, o.Time, want)
			}
		}
		page, _, err := s.Readings(ctx, "S1", contract.ReadingsQuery{Limit: 500, Page: 5, Ascending: true})
		if err != nil || len(page) != 500 {
			t.Fatalf("page: %d, %v", len(page), err)
		}
		for i, r := range page {
			k := kept[2000+i]
			if r.ID != k.ID || !r.Time.Equal(k.Time) || string(r.Measurements) != string(k.Measurements) {
				t.Fatalf("page 5 row %d differs from the scan's reading %d", i, 2000+i)
			}
		}

		stop := errors.New("stop")
		calls := 0
		err = s.Scan(ctx, "S1", store.ScanQuery{SkipIDs: true}, func(r store.Reading) error {
			if r.ID != (uuid.UUID{}) {
				return errors.New("an id derived with SkipIDs")
			}
			if calls++; calls == 2500 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || calls != 2500 {
			t.Fatalf("fn's error: %d calls, %v", calls, err)
		}

		cctx, cancel := context.WithCancel(ctx)
		calls = 0
		err = s.Scan(cctx, "S1", store.ScanQuery{}, func(store.Reading) error {
			if calls++; calls == 100 {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) || calls != 2000 {
			t.Fatalf("cancelled: %d calls (want the first chunk, 2000), %v", calls, err)
		}
	})
}
