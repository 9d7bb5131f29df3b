package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
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
			batches := ndbcBatches(b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := s.Ingest(ctx, batches[i])
				if err != nil || res.Inserted != 10000 {
					b.Fatalf("ingest: %+v %v", res, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "readings/s")
			reportPhases(b, s, b.N*10000)
			fp, err := s.Footprint(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fp.Bytes)/float64(fp.Readings), "disk-bytes/reading")
			b.ReportMetric(float64(fp.RollupBytes)/float64(fp.Readings), "rollup-bytes/reading")
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

// reportPhases reports the time of each ingest phase per reading (µs).
func reportPhases(b *testing.B, s store.Store, readings int) {
	for name, d := range store.IngestPhases(s) {
		b.ReportMetric(float64(d.Microseconds())/float64(readings), name+"-µs/reading")
	}
}

// BenchmarkIngestBlocks compares block sizes and block compressors on the default
// PostgreSQL path (batches as in BenchmarkIngest; one station's 100 readings of a batch
// make blocks of at most n), and compressing the blocks while the readings are written
// (the default) against before (zstd-serial).
//
//	go test -run '^$' -bench IngestBlocks -benchtime 20x ./services/runtime/store/
func BenchmarkIngestBlocks(b *testing.B) {
	ctx := context.Background()
	for _, codec := range []string{"zstd", "s2", "zstd-serial"} {
		for _, n := range []int{1, 16, 32, 64} {
			b.Run(fmt.Sprintf("%s-%d", codec, n), func(b *testing.B) {
				defer store.SetOverlapPack(store.SetOverlapPack(codec != "zstd-serial"))
				defer store.SetBlockReadings(store.SetBlockReadings(n))
				defer store.SetBlockZstd(store.SetBlockZstd(codec != "s2"))
				s, err := store.Open(ctx, store.Options{DatabaseURL: testenv.Postgres(b), ServiceID: "ocean"})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				batches := ndbcBatches(b.N)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if res, err := s.Ingest(ctx, batches[i]); err != nil || res.Inserted != 10000 {
						b.Fatalf("ingest: %+v %v", res, err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "readings/s")
				reportPhases(b, s, b.N*10000)
				fp, err := s.Footprint(ctx)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(fp.Bytes)/float64(fp.Readings), "disk-bytes/reading")
				b.ReportMetric(float64(fp.RollupBytes)/float64(fp.Readings), "rollup-bytes/reading")
			})
		}
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

// BenchmarkRead measures the store's read path on PostgreSQL: the latest reading (raw
// included, so its block's measurements and raw are both decoded) and a 500-row page,
// for readings in blocks of n (1: every reading inline, as before blocks).
//
//	go test -run '^$' -bench 'Read$' ./services/runtime/store/
func BenchmarkRead(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1, 16, 32, 64} {
		b.Run(fmt.Sprintf("blocks-of-%d", n), func(b *testing.B) {
			defer store.SetBlockReadings(store.SetBlockReadings(n))
			s, err := store.Open(ctx, store.Options{DatabaseURL: testenv.Postgres(b), ServiceID: "ocean"})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := 0; i < 10; i++ {
				if _, err := s.Ingest(ctx, benchdata.Batch(0, 10, 200, start.Add(time.Duration(i)*200*10*time.Minute))); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("latest", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					r, err := s.LatestReading(ctx, benchdata.StationID(i%10))
					if err != nil || r.Raw == nil {
						b.Fatalf("latest: %+v %v", r, err)
					}
				}
			})
			for _, raw := range []bool{false, true} {
				q := contract.ReadingsQuery{Limit: 500, Page: 2}
				name := "page-500"
				if raw {
					q.Format, name = contract.FormatRaw, "page-500-raw"
				}
				b.Run(name, func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						rs, _, err := s.Readings(ctx, benchdata.StationID(i%10), q)
						if err != nil || len(rs) != 500 {
							b.Fatalf("page: %d rows, %v", len(rs), err)
						}
					}
				})
			}
		})
	}
}

// ndbcBatches makes n batches of 10,000 new NDBC-shaped readings (the same 100 stations,
// 100 readings each, moving on in time), before a benchmark's timer starts.
func ndbcBatches(n int) []store.Batch {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	batches := make([]store.Batch, n)
	for i := range batches {
		batches[i] = benchdata.Batch(0, 100, 100, start.Add(time.Duration(i)*100*10*time.Minute))
	}
	return batches
}

// BenchmarkIngestQuality measures ingest with the QARTOD tests off
// (store.Options.SkipQualityTests) and on, side by side on PostgreSQL (COPY), for backfill
// batches (100 stations x 100 readings: the tests read no stored context after the first
// batch, their tracks cached) and live polls (1,000 stations x 1 reading), and the disk
// bytes a reading takes either way (the flags are stored in the compressed measurements).
//
//	scripts/testenv.sh go test -run '^$' -bench IngestQuality -benchtime 20x ./services/runtime/store/
func BenchmarkIngestQuality(b *testing.B) {
	ctx := context.Background()
	shapes := []struct {
		name              string
		stations, perStep int
	}{{"backfill", 100, 100}, {"poll", 1000, 1}}
	for _, sh := range shapes {
		for _, tests := range []string{"off", "on"} {
			b.Run(sh.name+"/tests-"+tests, func(b *testing.B) {
				s, err := store.Open(ctx, store.Options{DatabaseURL: testenv.Postgres(b), ServiceID: "ocean", SkipQualityTests: tests == "off"})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				per := sh.stations * sh.perStep
				batches := make([]store.Batch, b.N)
				for i := range batches {
					batches[i] = benchdata.Batch(0, sh.stations, sh.perStep, start.Add(time.Duration(i*sh.perStep)*10*time.Minute))
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					res, err := s.Ingest(ctx, batches[i])
					if err != nil || res.Inserted != per {
						b.Fatalf("ingest: %+v %v", res, err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N*per)/b.Elapsed().Seconds(), "readings/s")
				reportPhases(b, s, b.N*per)
				fp, err := s.Footprint(ctx)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(fp.Bytes)/float64(fp.Readings), "disk-bytes/reading")
			})
		}
	}
}
