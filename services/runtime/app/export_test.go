package app_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/runtime/benchdata"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// TestExportMillionsInFlatMemory stores 400,000 NDBC-shaped readings (six measurements
// each) of 20 stations on PostgreSQL and exports them through the service's HTTP export as
// CSV: 2.4 million rows. The process runs under a 96 MiB memory limit (GOMEMLIMIT's
// runtime setting), and the live heap, sampled every 10 ms while the rows stream, must stay
// within 48 MiB of what it was before: the export holds a chunk of readings, never the
// answer. Not parallel, so no other test's heap is counted.
func TestExportMillionsInFlatMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 400,000 readings")
	}
	const stations, per = 20, 20_000
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{ServiceID: "ocean", DatabaseURL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for s := 0; s < stations; s += 2 {
		if _, err := st.Ingest(ctx, benchdata.Batch(s, 2, per, start)); err != nil {
			t.Fatal(err)
		}
	}
	_ = st.Close()
	base := service(t, map[string]string{"SOURCE_MODE": "files", "SOURCE_DIR": t.TempDir(), "READINGS_DATABASE_URL": dsn})

	defer debug.SetMemoryLimit(debug.SetMemoryLimit(96 << 20))
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	baseline := heap()
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if h := heap(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()

	ids := make([]string, stations)
	for i := range ids {
		ids[i] = benchdata.StationID(i)
	}
	q := contract.ExportQuery{Since: start, Until: start.Add(per * 10 * time.Minute)}
	began := time.Now()
	resp, err := http.Get(base + contract.PathExport + "?" + contract.ExportValues(ids, q, "csv", true).Encode())
	if err != nil {
		t.Fatal(err)
	}
	var rows, bytes int64
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		l, err := br.ReadSlice('\n')
		bytes += int64(len(l))
		if len(l) > 0 && l[len(l)-1] == '\n' {
			rows++
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			t.Fatal(err)
		}
	}
	resp.Body.Close()
	elapsed := time.Since(began)
	close(done)
	wg.Wait()
	if resp.StatusCode != 200 || rows != 1+stations*per*6 {
		t.Fatalf("export: status %d, %d rows, want %d", resp.StatusCode, rows, 1+stations*per*6)
	}
	grew := int64(peak.Load()) - int64(baseline)
	t.Logf("exported %d rows (%d MB) in %v (%.0f rows/s); live heap %d MiB before, peak %d MiB", rows, bytes>>20, elapsed.Round(time.Millisecond),
		float64(rows)/elapsed.Seconds(), baseline>>20, peak.Load()>>20)
	if grew > 48<<20 {
		t.Fatalf("the live heap grew by %d MiB while exporting %d MB", grew>>20, bytes>>20)
	}
}
