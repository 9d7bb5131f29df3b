package readings

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
)

// BenchmarkReadings measures the gateway side of one readings request through the
// handlers (no auth, no rate limit): "hot" is answered from the cache, "uncached" makes a
// real upstream call over loopback to a backend that sends a fixed ~1.7 KB page. Run with
//
//	go test -run '^$' -bench Readings -benchmem ./gateway/readings/
func BenchmarkReadings(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	now := time.Now().UTC().Truncate(time.Hour)
	sid := ids.Sensor("ocean", "41001")
	body, _ := jsonBytes(contract.ReadingsResponse{SensorID: sid.String(), ExternalID: "41001", Name: "Station 41001", ServiceID: "ocean",
		Readings: sampleReadings(sid, now, 2), Provenance: contract.Provenance{SensorID: sid.String(), ServiceID: "ocean", SourceID: "41001"},
		Pagination: contract.NewPagination(1, 2, 48)})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer backend.Close()
	st := newCatalog(b, []catalogSensor{{"ocean", "41001", true}})
	b.Logf("backend body %d bytes", len(body))
	for _, mode := range []string{"hot", "uncached"} {
		clients, err := contract.NewClients(map[string]string{"ocean": backend.URL}, contract.Options{})
		if err != nil {
			b.Fatal(err)
		}
		cache, err := NewCache(CacheOptions{TTL: 3 * time.Second, Registerer: prometheus.NewRegistry()})
		if err != nil {
			b.Fatal(err)
		}
		h, err := NewHandlers(HandlerOptions{Clients: clients, Cache: cache, Resolve: resolver(st)})
		if err != nil {
			b.Fatal(err)
		}
		r := gin.New()
		r.GET("/api/v1/sensors/:id/readings", jsonAnswer(h, contract.RouteReadings))
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				path := "/api/v1/sensors/41001/readings?limit=2"
				if mode != "hot" {
					path += "&page=" + strconv.Itoa(i)
				}
				w := httptest.NewRecorder()
				req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, path, nil)
				r.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
	}
}
