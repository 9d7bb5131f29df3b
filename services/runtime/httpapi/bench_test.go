package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/runtime/benchdata"
	"github.com/sensorgate/sensorgate/services/runtime/httpapi"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// BenchmarkReadingsHandler is the CPU cost of one request in the service (store query,
// decoding, envelope), without the network: 10 stations x 2,000 readings; and of the
// largest aggregate answer.
//
//	go test -run '^$' -bench ReadingsHandler ./services/runtime/httpapi/
func BenchmarkReadingsHandler(b *testing.B) {
	ctx := context.Background()
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			o := store.Options{ServiceID: "ocean"}
			if backend == "sqlite" {
				o.SQLitePath = filepath.Join(b.TempDir(), "r.db")
			} else {
				o.DatabaseURL = testenv.Postgres(b)
			}
			st, err := store.Open(ctx, o)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for off := 0; off < 2000; off += 500 {
				if _, err := st.Ingest(ctx, benchdata.Batch(0, 10, 500, start.Add(time.Duration(off)*10*time.Minute))); err != nil {
					b.Fatal(err)
				}
			}
			h := httpapi.NewServer(httpapi.Deps{Meta: contract.ServiceMeta{ID: "ocean"}, Store: st})
			for _, q := range []struct{ name, path string }{
				{"latest", contract.LatestPath(benchdata.StationID(3))},
				{"page500", contract.ReadingsPath(benchdata.StationID(3)) + "?limit=500"},
				{"page500-p3", contract.ReadingsPath(benchdata.StationID(3)) + "?limit=500&page=3"},
				{"page500-raw", contract.ReadingsPath(benchdata.StationID(3)) + "?limit=500&data_format=raw"},
				// 1000 hourly buckets (the most an answer holds; the readings fill a third).
				{"aggregate-1h-1000", contract.AggregatePath(benchdata.StationID(3)) + "?interval=1h&since=" + start.Format(time.RFC3339) +
					"&until=" + start.Add(1000*time.Hour).Format(time.RFC3339)},
			} {
				b.Run(q.name, func(b *testing.B) {
					req := httptest.NewRequest(http.MethodGet, q.path, nil)
					for i := 0; i < b.N; i++ {
						w := httptest.NewRecorder()
						h.ServeHTTP(w, req)
						if w.Code != 200 {
							b.Fatalf("%d %s", w.Code, w.Body)
						}
					}
				})
			}
		})
	}
}
