package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/runtime/benchdata"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// BenchmarkIngest measures new readings per second written by one service process, per
// PostgreSQL insert method and for SQLite, in batches of 10,000 (100 stations x 100), and
// the cost of a replay in which every reading is already stored.
//
//	make bench-ingest, or: go test -run '^$' -bench Ingest -benchtime 20x ./services/runtime/store/
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	targets := []struct {
		name string
		o    func(b *testing.B) store.Options
	}{
		{"postgres-copy", func(b *testing.B) store.Options {
			return store.Options{DatabaseURL: testenv.Postgres(b), InsertMethod: store.InsertCopy}
		}},
		{"postgres-staged", func(b *testing.B) store.Options {
			return store.Options{DatabaseURL: testenv.Postgres(b), InsertMethod: store.InsertStaged}
		}},
		{"postgres-unnest", func(b *testing.B) store.Options {
			return store.Options{DatabaseURL: testenv.Postgres(b), InsertMethod: store.InsertUnnest}
		}},
		{"postgres-values", func(b *testing.B) store.Options {
			return store.Options{DatabaseURL: testenv.Postgres(b), InsertMethod: store.InsertValues}
		}},
		{"sqlite", func(b *testing.B) store.Options { return store.Options{SQLitePath: filepath.Join(b.TempDir(), "r.db")} }},
	}
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			o := tg.o(b)
			o.ServiceID = "ocean"
			s, err := store.Open(ctx, o)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			batches := make([]store.Batch, b.N)
			for i := range batches {
				batches[i] = benchdata.Batch(0, 100, 100, start.Add(time.Duration(i)*100*10*time.Minute))
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := s.Ingest(ctx, batches[i])
				if err != nil || res.Inserted != 10000 {
					b.Fatalf("ingest: %+v %v", res, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "readings/s")
			fp, err := s.Footprint(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fp.Bytes)/float64(fp.Readings), "disk-bytes/reading")
			// Replay the first batch: everything is a duplicate.
			t0 := time.Now()
			res, err := s.Ingest(ctx, batches[0])
			if err != nil || res.Inserted != 0 || res.Duplicates != 10000 {
				b.Fatalf("replay: %+v %v", res, err)
			}
			b.ReportMetric(10000/time.Since(t0).Seconds(), "replayed-readings/s")
		})
	}
}

// BenchmarkIngestConcurrent is one service process ingesting with several batches in flight
// (its providers, or a provider's stations, are independent): while PostgreSQL writes one
// batch, Go encodes and compresses the next, so both cores work. Workers own disjoint
// stations, as the runtime's per-provider loops do.
func BenchmarkIngestConcurrent(b *testing.B) {
	ctx := context.Background()
	for _, workers := range []int{2, 4} {
		b.Run(fmt.Sprintf("postgres-copy-%dworkers", workers), func(b *testing.B) {
			s, err := store.Open(ctx, store.Options{DatabaseURL: testenv.Postgres(b), InsertMethod: store.InsertCopy, ServiceID: "ocean"})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			batches := make([]store.Batch, b.N)
			for i := range batches {
				// Batch i belongs to worker i%workers and its stations; successive batches of
				// a worker move on in time.
				w, round := i%workers, i/workers
				batches[i] = benchdata.Batch(w*100, 100, 100, start.Add(time.Duration(round)*100*10*time.Minute))
			}
			var (
				wg   sync.WaitGroup
				errs = make(chan error, workers)
			)
			b.ResetTimer()
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < b.N; i += workers {
						res, err := s.Ingest(ctx, batches[i])
						if err == nil && res.Inserted != 10000 {
							err = fmt.Errorf("batch %d inserted %d of 10000", i, res.Inserted)
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "readings/s")
		})
	}
}
