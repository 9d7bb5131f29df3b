package bench

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	neturl "net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// Environment of the benchmarks.
const (
	// Env1M turns on the 1,000,000-sensor size (loading it takes minutes).
	Env1M = "SENSORGATE_BENCH_1M"
	// EnvReuse keeps the loaded databases (sgbench_<n>) between runs and reuses them when
	// they hold n sensors, instead of a fresh database per run.
	EnvReuse = "SENSORGATE_BENCH_REUSE"
)

// query is one of the measured list queries, with its HTTP form for the API variant.
type query struct {
	name   string
	filter catalog.SensorFilter
	http   string
}

var queries = []query{
	{"none", catalog.SensorFilter{}, ""},
	{"search", catalog.SensorFilter{Search: "harbor"}, "search=harbor"},
	{"search_rare", catalog.SensorFilter{Search: "104242"}, "search=104242"},
	{"data_types", catalog.SensorFilter{DataTypes: []string{"wave_height_m", "ozone_ppb"}}, "data_types=wave_height_m,ozone_ppb"},
	{"bbox", catalog.SensorFilter{BBox: &catalog.BBox{MinLat: 25, MinLon: -85, MaxLat: 45, MaxLon: -65}}, "min_lat=25&min_lon=-85&max_lat=45&max_lon=-65"},
	{"bbox_antimeridian", catalog.SensorFilter{BBox: &catalog.BBox{MinLat: -30, MinLon: 170, MaxLat: 60, MaxLon: -170}}, "min_lat=-30&min_lon=170&max_lat=60&max_lon=-170"},
	{"radius", catalog.SensorFilter{Near: &catalog.Near{Lat: 39.99, Lon: -82.88, RadiusKM: 50}}, "lat=39.99&lon=-82.88&radius_km=50"},
	{"page500", catalog.SensorFilter{Page: 500}, "page=500"},
}

func sizes() []int {
	if os.Getenv(Env1M) != "" {
		return []int{100_000, 1_000_000}
	}
	return []int{100_000}
}

// loadedStore gives a PostgreSQL catalog of n synthetic sensors: a fresh database, or with
// EnvReuse the kept one.
func loadedStore(b *testing.B, n int) (*store.Store, string) {
	b.Helper()
	ctx := context.Background()
	var url string
	if os.Getenv(EnvReuse) != "" {
		url = keptDatabase(b, fmt.Sprintf("sgbench_%d", n))
	} else {
		url = testenv.Postgres(b)
	}
	s, err := store.Open(ctx, store.Config{DatabaseURL: url, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	var have int64
	if err := s.DB().Raw("SELECT count(*) FROM sensors").Row().Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have == int64(n) {
		b.Logf("reusing %d loaded sensors", n)
		return s, url
	}
	if have > 0 {
		if err := s.DB().Exec("TRUNCATE api_keys, sensors, projects, providers, services, users CASCADE").Error; err != nil {
			b.Fatal(err)
		}
	}
	res, err := Load(ctx, s, url, n, 42)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d sensors in %s", res.Sensors, res.Duration.Round(time.Millisecond))
	return s, url
}

// keptDatabase returns the URL of database name on the test server, creating it if absent.
func keptDatabase(b *testing.B, name string) string {
	b.Helper()
	admin := testenv.AdminPostgresURL()
	db, err := sql.Open("pgx", admin)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRow("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		b.Fatal(err)
	}
	if !exists {
		if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
			b.Fatal(err)
		}
	}
	u, err := neturl.Parse(admin)
	if err != nil {
		b.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// percentiles reports p50 and p99 of the samples as benchmark metrics, in milliseconds.
func percentiles(b *testing.B, samples []time.Duration) {
	b.Helper()
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	at := func(p float64) float64 {
		i := int(p*float64(len(samples))+0.5) - 1
		i = max(0, min(i, len(samples)-1))
		return float64(samples[i].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op") // the percentiles say more than the mean
}

// BenchmarkStoreListSensors measures ListSensors at the store level: "warm" repeats a
// query whose total is cached for the current catalog generation (the steady state
// between syncs), "cold" bumps the generation before each call so every call counts.
//
//	go test ./gateway/bench -run '^$' -bench BenchmarkStoreListSensors -benchtime 200x
func BenchmarkStoreListSensors(b *testing.B) {
	for _, n := range sizes() {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s, _ := loadedStore(b, n)
			ctx := context.Background()
			for _, q := range queries {
				// Sanity: every query finds something and its total is exact.
				p, err := s.ListSensors(ctx, q.filter)
				if err != nil {
					b.Fatalf("%s: %v", q.name, err)
				}
				b.Logf("%s: total %d, page items %d", q.name, p.Total, len(p.Sensors))
				for _, mode := range []string{"warm", "cold"} {
					b.Run(q.name+"/"+mode, func(b *testing.B) {
						samples := make([]time.Duration, 0, b.N)
						for range b.N {
							if mode == "cold" {
								b.StopTimer()
								if err := s.DB().Exec("UPDATE catalog_state SET generation = generation + 1 WHERE id = 1").Error; err != nil {
									b.Fatal(err)
								}
								b.StartTimer()
							}
							t0 := time.Now()
							if _, err := s.ListSensors(ctx, q.filter); err != nil {
								b.Fatal(err)
							}
							samples = append(samples, time.Since(t0))
						}
						percentiles(b, samples)
					})
				}
			}
		})
	}
}
