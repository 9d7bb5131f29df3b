package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/runtime/benchdata"
	"github.com/sensorgate/sensorgate/services/runtime/httpapi"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// TestConcurrentExportsNeverMix: exports of different stations and formats, 12 at a time
// over real HTTP (each scan reading its next chunk ahead in a goroutine of its own, each
// answer with its own buffers and decoders), give byte for byte what each gives alone.
// Run under -race by make test.
func TestConcurrentExportsNeverMix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{ServiceID: "ocean", DatabaseURL: testenv.Postgres(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const stations, per = 4, 2600 // two chunks a station
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for off := 0; off < per; off += 650 {
		if _, err := st.Ingest(ctx, benchdata.Batch(0, stations, 650, start.Add(time.Duration(off)*10*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Deps{Meta: contract.ServiceMeta{ID: "ocean"}, Store: st}))
	defer srv.Close()
	q := contract.ExportQuery{Since: start, Until: start.Add(per * 10 * time.Minute)}
	var urls []string
	for i := range stations {
		for _, f := range []string{"ndjson", "csv"} {
			ids := []string{benchdata.StationID(i), benchdata.StationID((i + 1) % stations)}
			urls = append(urls, srv.URL+contract.PathExport+"?"+contract.ExportValues(ids, q, f, true).Encode())
		}
	}
	get := func(u string) ([]byte, error) {
		resp, err := http.Get(u)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return nil, fmt.Errorf("status %d", resp.StatusCode)
		}
		return io.ReadAll(resp.Body)
	}
	alone := make([][]byte, len(urls))
	for i, u := range urls {
		if alone[i], err = get(u); err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(alone[i], []byte{'\n'}); n < 2*per {
			t.Fatalf("%s: %d lines", u, n)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 2 {
				i := r.IntN(len(urls))
				b, err := get(urls[i])
				if err == nil && !bytes.Equal(b, alone[i]) {
					err = fmt.Errorf("export %d: %d bytes differ from the %d it gives alone", i, len(b), len(alone[i]))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
