package bench

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// syncBatch is a full listing of one service with n stations.
func syncBatch(n int, round int) catalog.SyncBatch {
	b := catalog.SyncBatch{
		Service:   catalog.Service{ID: "ocean", Name: "ocean"},
		Providers: []catalog.Provider{{Slug: "noaa-ndbc", Name: "NOAA National Data Buoy Center"}},
		Projects:  []catalog.Project{{Slug: "ndbc-stdmet", Name: "NDBC standard meteorological data", ProviderSlug: "noaa-ndbc"}},
		Full:      true,
	}
	g := newGenerator(7)
	for i := range n {
		lat, lon := g.position()
		sn := catalog.Sensor{ExternalID: "B" + strconv.Itoa(100000+i), Name: places[i%len(places)] + " Buoy " + strconv.Itoa(i),
			SensorType: "buoy", Status: catalog.StatusActive, DataTypes: []string{"wave_height_m", "water_temperature_c"},
			ProviderSlug: "noaa-ndbc", FeedSlug: "ndbc-stdmet", ReportingIntervalS: 600}
		if lat != nil {
			la, lo := lat.(float64), lon.(float64)
			sn.Latitude, sn.Longitude = &la, &lo
		}
		if round > 0 && i%100 == 0 { // 1 % of the stations report a new reading each round
			t := time.Date(2026, 11, 21, 0, round, 0, 0, time.UTC)
			sn.LastReadingAt = &t
		}
		b.Sensors = append(b.Sensors, sn)
	}
	return b
}

// BenchmarkSync measures Store.Sync of a full listing of one service: the first round
// inserts every station, later rounds find them unchanged except 1 % with a new reading.
//
//	go test ./gateway/bench -run '^$' -bench BenchmarkSync -benchtime 5x
func BenchmarkSync(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("stations=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s, err := store.Open(ctx, store.Config{DatabaseURL: testenv.Postgres(b), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			t0 := time.Now()
			res, err := s.Sync(ctx, syncBatch(n, 0))
			if err != nil || res.Inserted != n {
				b.Fatalf("first sync: %+v, %v", res, err)
			}
			insert := time.Since(t0)
			batches := make([]catalog.SyncBatch, b.N)
			for i := range batches {
				batches[i] = syncBatch(n, i+1)
			}
			b.ResetTimer()
			for i := range b.N {
				res, err := s.Sync(ctx, batches[i])
				if err != nil || res.Updated != (n+99)/100 || res.Unchanged != n-(n+99)/100 {
					b.Fatalf("round %d: %+v, %v", i+1, res, err)
				}
			}
			b.ReportMetric(float64(insert.Milliseconds()), "insert-ms")
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "resync-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}
