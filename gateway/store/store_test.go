package store_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// backend opens a fresh, migrated store of one dialect.
type backend struct {
	name string
	open func(t *testing.T, cfg store.Config) *store.Store
}

var backends = []backend{
	{"postgres", func(t *testing.T, cfg store.Config) *store.Store {
		cfg.DatabaseURL = testenv.Postgres(t)
		return openStore(t, cfg)
	}},
	{"sqlite", func(t *testing.T, cfg store.Config) *store.Store {
		cfg.SQLitePath = filepath.Join(t.TempDir(), "catalog.db")
		return openStore(t, cfg)
	}},
}

func openStore(t *testing.T, cfg store.Config) *store.Store {
	t.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// eachBackend runs fn against a fresh store of every dialect, in parallel.
func eachBackend(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.open(t, store.Config{}))
		})
	}
}

func ptr[T any](v T) *T { return &v }

func date(s string) *time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err) // test fixture literal
	}
	return &t
}

// station builds a sensor of the fixture.
type station struct {
	svc, ext, name, desc, typ, provider, feed string
	lat, lon                                  *float64
	dataTypes                                 []string
}

func (st station) sensor() catalog.Sensor {
	sn := catalog.Sensor{
		ExternalID: st.ext, Name: st.name, Description: st.desc, SensorType: st.typ,
		Status: catalog.StatusActive, DataTypes: st.dataTypes, DeploymentDate: date("2020-01-15"),
		Latitude: st.lat, Longitude: st.lon, ProviderSlug: st.provider, FeedSlug: st.feed,
		ReportingIntervalS: 600,
	}
	return sn
}

var fixtureStations = []station{
	{"ocean", "41002", "South Hatteras 225 NM South of Cape Hatteras", "NDBC 3-meter discus buoy", "buoy", "ndbc", "ndbc-realtime", ptr(31.743), ptr(-74.955), []string{"wave_height_m", "water_temperature_c", "wind_speed_ms"}},
	{"ocean", "TPLM2", "Thomas Point, MD", "C-MAN station in Chesapeake Bay", "buoy", "ndbc", "ndbc-realtime", ptr(38.899), ptr(-76.436), []string{"air_temperature_c", "wind_speed_ms"}},
	{"ocean", "EQ001", "Equator Zero", "reference point", "buoy", "ndbc", "ndbc-realtime", ptr(0.0), ptr(0.0), []string{"water_temperature_c"}},
	{"ocean", "EQ050", "Equator Half Degree", "half a degree east", "buoy", "ndbc", "ndbc-realtime", ptr(0.0), ptr(0.5), []string{"water_temperature_c"}},
	{"ocean", "EQ100", "Equator One Degree", "one degree east", "buoy", "ndbc", "ndbc-realtime", ptr(0.0), ptr(1.0), []string{"water_temperature_c"}},
	{"ocean", "NOLOC", "Drifting buoy without position", "no location", "buoy", "ndbc", "", nil, nil, []string{"wave_height_m"}},
	{"weather", "KFLL", "Fort Lauderdale/Hollywood International Airport", "ASOS", "weather_station", "nws", "nws-observations", ptr(26.0717), ptr(-80.1497), []string{"air_temperature_c", "air_pressure_hpa"}},
	{"weather", "KCMH", "Columbus, John Glenn Columbus International Airport", "ASOS", "weather_station", "nws", "nws-observations", ptr(39.9969), ptr(-82.8919), []string{"air_temperature_c", "relative_humidity_percent"}},
	{"weather", "NFFN", "Nadi International Airport, Fiji", "near the antimeridian, east side", "weather_station", "nws", "nws-observations", ptr(-17.755), ptr(177.443), []string{"air_temperature_c"}},
	{"weather", "PADK", "Adak Island, Aleutians", "near the antimeridian, west side", "weather_station", "nws", "nws-observations", ptr(51.878), ptr(-176.646), []string{"air_temperature_c", "wind_speed_ms"}},
	{"weather", "AM_E", "Antimeridian East", "179.9 east", "weather_station", "nws", "nws-observations", ptr(0.0), ptr(179.9), []string{"air_temperature_c"}},
	{"weather", "AM_W", "Antimeridian West", "179.9 west", "weather_station", "nws", "nws-observations", ptr(0.0), ptr(-179.9), []string{"air_temperature_c"}},
	{"airquality", "8118", "Columbus - New Albany", "OpenAQ location", "air_quality_monitor", "openaq", "openaq-latest", ptr(40.0845), ptr(-82.8153), []string{"pm2_5_ug_per_m3", "ozone_ppb"}},
	{"airquality", "PCT", "100% Pure_Air; '; DROP TABLE sensors; -- \\ monitor", "literal search test", "air_quality_monitor", "openaq", "openaq-latest", ptr(10.0), ptr(10.0), []string{"pm10_ug_per_m3"}},
	{"airquality", "PCT2", "Ordinary Air monitor 100 percent", "decoy for %", "air_quality_monitor", "openaq", "openaq-latest", ptr(10.0), ptr(10.1), []string{"pm10_ug_per_m3"}},
}

var fixtureProviders = map[string][]catalog.Provider{
	"ocean":      {{Slug: "ndbc", Name: "NOAA National Data Buoy Center", URL: "https://www.ndbc.noaa.gov"}},
	"weather":    {{Slug: "nws", Name: "US National Weather Service", URL: "https://www.weather.gov"}},
	"airquality": {{Slug: "openaq", Name: "OpenAQ", URL: "https://openaq.org"}},
}

var fixtureProjects = map[string][]catalog.Project{
	"ocean":      {{Slug: "ndbc-realtime", Name: "NDBC realtime observations", ProviderSlug: "ndbc", Domain: "ocean", TemporalPattern: "periodic", FeedType: "observations"}},
	"weather":    {{Slug: "nws-observations", Name: "NWS station observations", ProviderSlug: "nws", Domain: "weather", TemporalPattern: "periodic", FeedType: "observations"}},
	"airquality": {{Slug: "openaq-latest", Name: "OpenAQ latest measurements", ProviderSlug: "openaq", Domain: "air_quality", TemporalPattern: "periodic", FeedType: "observations"}},
}

func batch(svc string, full bool, skip ...string) catalog.SyncBatch {
	b := catalog.SyncBatch{
		Service:   catalog.Service{ID: svc, Name: svc + " service", Domain: svc, TemporalPattern: "periodic", Port: 8081, URL: "http://127.0.0.1:1/" + svc},
		Providers: slices.Clone(fixtureProviders[svc]),
		Projects:  slices.Clone(fixtureProjects[svc]),
		Full:      full,
	}
	for _, st := range fixtureStations {
		if st.svc == svc && !slices.Contains(skip, st.ext) {
			b.Sensors = append(b.Sensors, st.sensor())
		}
	}
	return b
}

// loadFixture syncs the three services in full.
func loadFixture(t *testing.T, s *store.Store) {
	t.Helper()
	for _, svc := range []string{"airquality", "ocean", "weather"} {
		if _, err := s.Sync(context.Background(), batch(svc, true)); err != nil {
			t.Fatalf("Sync %s: %v", svc, err)
		}
	}
}

func extIDs(p catalog.SensorPage) []string {
	out := []string{}
	for _, s := range p.Sensors {
		out = append(out, s.ExternalID)
	}
	return out
}

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Config{SkipMigrations: true})
			ctx := context.Background()
			var wg sync.WaitGroup
			errs := make(chan error, 3)
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- s.Migrate(ctx)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("concurrent Migrate: %v", err)
				}
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("second Migrate: %v", err)
			}
			assertVersionsOnce(t, s, b.name)
			loadFixture(t, s)
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate over data: %v", err)
			}
		})
	}
}

// Eight replicas migrating one empty PostgreSQL database at the same moment all succeed
// and each migration is applied once (goose's session lock; docs/catalog-store.md).
func TestMigrateFunctionOnPostgresReplicas(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	ctx := context.Background()
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			<-start
			errs <- store.Migrate(ctx, store.Config{DatabaseURL: url, MaxOpenConns: 2, Logger: slog.New(slog.DiscardHandler)})
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Migrate from concurrent replicas: %v", err)
		}
	}
	s := openStore(t, store.Config{DatabaseURL: url})
	if _, err := s.Services(ctx); err != nil {
		t.Fatalf("Services after Migrate: %v", err)
	}
	assertVersionsOnce(t, s, "postgres")
}

// A catalog the replaced runner migrated (schema_migrations with version, name,
// applied_at; every file applied in its own transaction) upgrades in place: goose adopts
// the recorded versions once and runs none of them again (it could not: CREATE TABLE
// sensors would fail), and the data stays.
func TestMigrateAdoptsOldRunnerVersions(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Config{SkipMigrations: true})
			// The catalog's runner recorded when it applied a file, too.
			testenv.ApplyAsLegacyRunner(t, sqlDB(t, s), migrationFiles(b.name), 1<<30,
				testenv.LegacyColumns+", applied_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP")
			loadFixture(t, s)
			before, err := s.ListSensors(context.Background(), catalog.SensorFilter{})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := s.Migrate(context.Background()); err != nil {
					t.Fatalf("Migrate a catalog of the old runner: %v", err)
				}
			}
			assertVersionsOnce(t, s, b.name)
			after, err := s.ListSensors(context.Background(), catalog.SensorFilter{})
			if err != nil || after.Total != before.Total || after.Total == 0 {
				t.Fatalf("sensors after adoption: %d (%v), before %d", after.Total, err, before.Total)
			}
		})
	}
}

// migrationFiles are the catalog migrations of a dialect, as the store embeds them.
func migrationFiles(dialect string) fs.FS { return os.DirFS(filepath.Join("migrations", dialect)) }

// sqlDB is the store's own connection pool.
func sqlDB(t *testing.T, s *store.Store) *sql.DB {
	t.Helper()
	db, err := s.DB().DB()
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// assertVersionsOnce checks goose's version table: version 0 and each embedded migration of
// the dialect exactly once.
func assertVersionsOnce(t *testing.T, s *store.Store, dialect string) {
	t.Helper()
	testenv.AssertMigratedOnce(t, sqlDB(t, s), "catalog_goose_version", migrationFiles(dialect))
}

func TestOpenWithoutDatabase(t *testing.T) {
	t.Parallel()
	if _, err := store.Open(context.Background(), store.Config{}); err == nil {
		t.Fatal("Open with no database configured succeeded")
	}
	_, err := store.Open(context.Background(), store.Config{DatabaseURL: "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"})
	if err == nil {
		t.Fatal("Open of an unreachable PostgreSQL succeeded")
	}
}

func TestSyncIdempotentAndIncremental(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		b := batch("ocean", true)
		res, err := s.Sync(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if want := (catalog.SyncResult{Inserted: len(b.Sensors)}); res != want {
			t.Fatalf("first sync = %+v, want %+v", res, want)
		}
		res, err = s.Sync(ctx, batch("ocean", true))
		if err != nil {
			t.Fatal(err)
		}
		if want := (catalog.SyncResult{Unchanged: len(b.Sensors)}); res != want {
			t.Fatalf("identical second sync = %+v, want %+v", res, want)
		}

		// An incremental round with one changed sensor touches only it.
		one := batch("ocean", false)
		one.Sensors = one.Sensors[:1]
		one.Sensors[0].Name = "South Hatteras (renamed)"
		res, err = s.Sync(ctx, one)
		if err != nil {
			t.Fatal(err)
		}
		if want := (catalog.SyncResult{Updated: 1}); res != want {
			t.Fatalf("incremental sync = %+v, want %+v", res, want)
		}
		got, err := s.Sensor(ctx, ids.Sensor("ocean", "41002"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "South Hatteras (renamed)" {
			t.Fatalf("name after update = %q", got.Name)
		}
		// A fresh last reading is an update that leaves the catalog generation (and so the
		// replicas' cached totals) alone.
		genBefore := catalogGeneration(t, s)
		one.Sensors[0].LastReadingAt = ptr(time.Date(2026, 11, 21, 6, 50, 0, 0, time.UTC))
		if res, err = s.Sync(ctx, one); err != nil || res != (catalog.SyncResult{Updated: 1}) {
			t.Fatalf("last-reading sync = %+v, %v", res, err)
		}
		if g := catalogGeneration(t, s); g != genBefore {
			t.Fatalf("a new last reading moved the generation %d -> %d", genBefore, g)
		}
		if got, _ = s.Sensor(ctx, ids.Sensor("ocean", "41002")); got.LastReadingAt == nil || !got.LastReadingAt.Equal(*one.Sensors[0].LastReadingAt) {
			t.Fatalf("last reading not stored: %v", got.LastReadingAt)
		}
		if res, _ = s.Sync(ctx, one); res != (catalog.SyncResult{Unchanged: 1}) {
			t.Fatalf("repeated last-reading sync = %+v", res)
		}
		one.Sensors[0].Status = catalog.StatusMaintenance
		if res, _ = s.Sync(ctx, one); res != (catalog.SyncResult{Updated: 1}) || catalogGeneration(t, s) == genBefore {
			t.Fatalf("status change = %+v, generation still %d", res, genBefore)
		}
		one.Sensors[0].Status = catalog.StatusActive
		if _, err := s.Sync(ctx, one); err != nil {
			t.Fatal(err)
		}
		// Others are untouched by an incremental round (no missing marking).
		if p, _ := s.ListSensors(ctx, catalog.SensorFilter{ServiceID: "ocean", Status: catalog.StatusActive}); p.Total != len(b.Sensors) {
			t.Fatalf("active ocean sensors = %d, want %d", p.Total, len(b.Sensors))
		}
	})
}

func TestSyncFieldsAndCounts(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loadFixture(t, s)
		got, err := s.Sensor(ctx, ids.Sensor("ocean", "41002"))
		if err != nil {
			t.Fatal(err)
		}
		wantProvider, wantFeed := ids.Provider("ndbc"), ids.Feed("ndbc-realtime")
		switch {
		case got.ExternalID != "41002" || got.ServiceID != "ocean" || got.SensorType != "buoy" || got.Status != "active":
			t.Fatalf("identity fields: %+v", got)
		case got.ProviderID == nil || *got.ProviderID != wantProvider || got.ProviderName != "NOAA National Data Buoy Center" || got.ProviderSlug != "ndbc":
			t.Fatalf("provider fields: %v %q %q", got.ProviderID, got.ProviderName, got.ProviderSlug)
		case got.FeedID == nil || *got.FeedID != wantFeed || got.FeedName != "NDBC realtime observations" || got.FeedSlug != "ndbc-realtime":
			t.Fatalf("feed fields: %v %q %q", got.FeedID, got.FeedName, got.FeedSlug)
		case got.Latitude == nil || *got.Latitude != 31.743 || *got.Longitude != -74.955:
			t.Fatalf("location: %v %v", got.Latitude, got.Longitude)
		case !slices.Equal(got.DataTypes, []string{"wave_height_m", "water_temperature_c", "wind_speed_ms"}):
			t.Fatalf("data types: %v", got.DataTypes)
		case got.DeploymentDate == nil || got.DeploymentDate.Format(time.DateOnly) != "2020-01-15" || got.DecommissionedDate != nil:
			t.Fatalf("dates: %v %v", got.DeploymentDate, got.DecommissionedDate)
		case got.ReportingIntervalS != 600 || got.MissingSince != nil || got.UpdatedAt.IsZero():
			t.Fatalf("interval/missing/updated: %+v", got)
		}
		noFeed, err := s.Sensor(ctx, ids.Sensor("ocean", "NOLOC"))
		if err != nil {
			t.Fatal(err)
		}
		if noFeed.FeedID != nil || noFeed.Latitude != nil || noFeed.Longitude != nil {
			t.Fatalf("sensor without feed/location: feed %v lat %v lon %v", noFeed.FeedID, noFeed.Latitude, noFeed.Longitude)
		}

		svcs, err := s.Services(ctx)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		for _, sv := range svcs {
			counts[sv.ID] = sv.SensorCount
		}
		if want := map[string]int{"airquality": 3, "ocean": 6, "weather": 6}; !mapsEqual(counts, want) {
			t.Fatalf("service sensor counts = %v, want %v", counts, want)
		}
		p, err := s.Project(ctx, "ndbc-realtime")
		if err != nil {
			t.Fatal(err)
		}
		if p.SensorCount != 5 || p.OwnerID != store.SystemUserID || p.Visibility != catalog.VisibilityPublic || p.ServiceID != "ocean" || p.ProviderSlug != "ndbc" {
			t.Fatalf("synced project: %+v", p)
		}
		u, err := s.User(ctx, store.SystemUserID)
		if err != nil || u.Name != store.SystemUserName {
			t.Fatalf("system user: %+v, %v", u, err)
		}
	})
}

func catalogGeneration(t *testing.T, s *store.Store) int64 {
	t.Helper()
	var g int64
	if err := s.DB().Raw("SELECT generation FROM catalog_state WHERE id = 1").Row().Scan(&g); err != nil {
		t.Fatal(err)
	}
	return g
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestSyncMarksMissingAndUnmarks(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loadFixture(t, s)
		id := ids.Sensor("weather", "KCMH")
		res, err := s.Sync(ctx, batch("weather", true, "KCMH"))
		if err != nil {
			t.Fatal(err)
		}
		if want := (catalog.SyncResult{Unchanged: 5, MarkedMissing: 1}); res != want {
			t.Fatalf("sync without KCMH = %+v, want %+v", res, want)
		}
		got, err := s.Sensor(ctx, id)
		if err != nil {
			t.Fatalf("a missing sensor must still resolve: %v", err)
		}
		if got.MissingSince == nil || got.Status != catalog.StatusInactive {
			t.Fatalf("missing sensor: status %q missing_since %v", got.Status, got.MissingSince)
		}
		sv, _ := s.Service(ctx, "weather")
		if sv.SensorCount != 5 {
			t.Fatalf("weather sensor count after marking = %d, want 5", sv.SensorCount)
		}
		// Marking again is a no-op.
		if res, _ = s.Sync(ctx, batch("weather", true, "KCMH")); res.MarkedMissing != 0 || res.Unchanged != 5 {
			t.Fatalf("repeated sync without KCMH = %+v", res)
		}
		// It comes back.
		res, err = s.Sync(ctx, batch("weather", true))
		if err != nil {
			t.Fatal(err)
		}
		if want := (catalog.SyncResult{Unchanged: 5, Updated: 1}); res != want {
			t.Fatalf("sync with KCMH back = %+v, want %+v", res, want)
		}
		got, _ = s.Sensor(ctx, id)
		if got.MissingSince != nil || got.Status != catalog.StatusActive {
			t.Fatalf("reappeared sensor: status %q missing_since %v", got.Status, got.MissingSince)
		}
		// Other services are never marked by a service's full sync.
		if p, _ := s.ListSensors(ctx, catalog.SensorFilter{Status: catalog.StatusInactive}); p.Total != 0 {
			t.Fatalf("inactive sensors after reappearance = %v", extIDs(p))
		}
	})
}

func TestSyncRenamedProviderRefreshesSensors(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loadFixture(t, s)
		b := batch("airquality", true)
		b.Providers[0].Name = "OpenAQ Platform"
		b.Projects[0].Name = "OpenAQ hourly"
		if _, err := s.Sync(ctx, b); err != nil {
			t.Fatal(err)
		}
		p, err := s.ListSensors(ctx, catalog.SensorFilter{Search: "openaq platform"})
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != 3 {
			t.Fatalf("search by new provider name found %v", extIDs(p))
		}
		if p.Sensors[0].ProviderName != "OpenAQ Platform" || p.Sensors[0].FeedName != "OpenAQ hourly" {
			t.Fatalf("denormalized names: %q %q", p.Sensors[0].ProviderName, p.Sensors[0].FeedName)
		}
	})
}

func TestSyncRejectsBadBatches(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		tests := []struct {
			name   string
			mutate func(b *catalog.SyncBatch)
		}{
			{"no service id", func(b *catalog.SyncBatch) { b.Service.ID = "" }},
			{"unknown provider", func(b *catalog.SyncBatch) { b.Sensors[0].ProviderSlug = "nobody" }},
			{"unknown feed", func(b *catalog.SyncBatch) { b.Sensors[0].FeedSlug = "nothing" }},
			{"no external id", func(b *catalog.SyncBatch) { b.Sensors[0].ExternalID = "" }},
			{"duplicate sensor", func(b *catalog.SyncBatch) { b.Sensors = append(b.Sensors, b.Sensors[0]) }},
			{"half a location", func(b *catalog.SyncBatch) { b.Sensors[0].Longitude = nil }},
			{"foreign sensor", func(b *catalog.SyncBatch) { b.Sensors[0].ServiceID = "weather" }},
		}
		for _, tc := range tests {
			b := batch("ocean", true)
			tc.mutate(&b)
			if _, err := s.Sync(ctx, b); err == nil {
				t.Errorf("%s: Sync accepted the batch", tc.name)
			}
		}
		// Nothing of the rejected batches stayed.
		if p, _ := s.ListSensors(ctx, catalog.SensorFilter{}); p.Total != 0 {
			t.Fatalf("rejected batches left %v", extIDs(p))
		}
	})
}

func TestListSensorsFilters(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loadFixture(t, s)
		tests := []struct {
			name string
			f    catalog.SensorFilter
			want []string // external ids in order
		}{
			{"search name case-insensitive", catalog.SensorFilter{Search: "COLUMBUS"}, []string{"8118", "KCMH"}},
			{"search description", catalog.SensorFilter{Search: "discus"}, []string{"41002"}},
			{"search external id", catalog.SensorFilter{Search: "tplm"}, []string{"TPLM2"}},
			{"search provider name", catalog.SensorFilter{Search: "weather service", Limit: 3}, []string{"PADK", "AM_E", "AM_W"}},
			{"search literal percent", catalog.SensorFilter{Search: "100%"}, []string{"PCT"}},
			{"search literal underscore", catalog.SensorFilter{Search: "pure_air"}, []string{"PCT"}},
			{"search underscore is not a wildcard", catalog.SensorFilter{Search: "am_"}, []string{"AM_E", "AM_W"}},
			{"search quote and drop", catalog.SensorFilter{Search: "'; DROP TABLE sensors; --"}, []string{"PCT"}},
			{"search backslash", catalog.SensorFilter{Search: `-- \ monitor`}, []string{"PCT"}},
			{"search no match", catalog.SensorFilter{Search: "%%"}, []string{}},
			{"sensor type", catalog.SensorFilter{SensorType: "air_quality_monitor"}, []string{"PCT", "8118", "PCT2"}},
			{"provider slug", catalog.SensorFilter{Provider: "openaq"}, []string{"PCT", "8118", "PCT2"}},
			{"service", catalog.SensorFilter{ServiceID: "airquality"}, []string{"PCT", "8118", "PCT2"}},
			{"feed", catalog.SensorFilter{FeedID: ptr(ids.Feed("openaq-latest"))}, []string{"PCT", "8118", "PCT2"}},
			{"data types any of", catalog.SensorFilter{DataTypes: []string{"ozone_ppb", "wave_height_m"}}, []string{"8118", "NOLOC", "41002"}},
			{"data types unknown", catalog.SensorFilter{DataTypes: []string{"nothing"}}, []string{}},
			{"status", catalog.SensorFilter{Status: "maintenance"}, []string{}},
			{"combined", catalog.SensorFilter{SensorType: "buoy", DataTypes: []string{"wind_speed_ms"}}, []string{"41002", "TPLM2"}},
			{"bbox", catalog.SensorFilter{BBox: &catalog.BBox{MinLat: 25, MinLon: -85, MaxLat: 41, MaxLon: -70}},
				[]string{"8118", "KCMH", "KFLL", "41002", "TPLM2"}},
			{"bbox across the antimeridian", catalog.SensorFilter{BBox: &catalog.BBox{MinLat: -30, MinLon: 170, MaxLat: 60, MaxLon: -170}},
				[]string{"PADK", "AM_E", "AM_W", "NFFN"}},
			{"bbox excludes sensors without location", catalog.SensorFilter{BBox: &catalog.BBox{MinLat: -90, MinLon: -180, MaxLat: 90, MaxLon: 180}, DataTypes: []string{"wave_height_m"}},
				[]string{"41002"}},
			{"radius", catalog.SensorFilter{Near: &catalog.Near{Lat: 0, Lon: 0, RadiusKM: 60}}, []string{"EQ050", "EQ001"}},
			{"radius sorted by distance", catalog.SensorFilter{Near: &catalog.Near{Lat: 0, Lon: 0, RadiusKM: 120}, SortByDistance: true}, []string{"EQ001", "EQ050", "EQ100"}},
			{"radius across the antimeridian", catalog.SensorFilter{Near: &catalog.Near{Lat: 0, Lon: 179.95, RadiusKM: 30}}, []string{"AM_E", "AM_W"}},
			{"radius around the pole", catalog.SensorFilter{Near: &catalog.Near{Lat: 89.9, Lon: 0, RadiusKM: 5000}}, []string{"PADK"}},
			{"page 2", catalog.SensorFilter{ServiceID: "weather", Page: 2, Limit: 4}, []string{"KFLL", "NFFN"}},
		}
		// A search cannot span fields: the separator of the searched text (a control
		// character) is refused like every control character, before any query.
		if _, err := s.ListSensors(ctx, catalog.SensorFilter{Search: "hatteras\x1fndbc"}); apierr.From(err).Code != apierr.InvalidParameter {
			t.Errorf("search holding the field separator: %v, want invalid_parameter", err)
		}
		for _, plan := range plans {
			store.SetPlanThresholds(s, plan.filterFirstMax, plan.deferredJoinOffset)
			for _, tc := range tests {
				p, err := s.ListSensors(ctx, tc.f)
				if err != nil {
					t.Errorf("%s, %s: %v", plan.name, tc.name, err)
					continue
				}
				if got := extIDs(p); !slices.Equal(got, tc.want) {
					t.Errorf("%s, %s: got %v, want %v", plan.name, tc.name, got, tc.want)
				}
				if tc.f.Page <= 1 && tc.f.Limit == 0 && p.Total != len(tc.want) {
					t.Errorf("%s, %s: total %d, want %d", plan.name, tc.name, p.Total, len(tc.want))
				}
			}
		}
	})
}

// plans force each way ListSensors can find a page: matches first, the name index, and
// the name index with a deferred join.
var plans = []struct {
	name                               string
	filterFirstMax, deferredJoinOffset int
}{
	{"filter first", 1 << 30, 1 << 30},
	{"collect at most one", 1, 1 << 30},
	{"name order", 0, 1 << 30},
	{"deferred join", 0, 0},
}

func TestListSensorsRadiusDistances(t *testing.T) {
	t.Parallel()
	// One degree of a great circle is 2*pi*6371.0088/360 km.
	deg := 2 * math.Pi * store.EarthRadiusKM / 360
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loadFixture(t, s)
		tests := []struct {
			near catalog.Near
			want map[string]float64
		}{
			{catalog.Near{Lat: 0, Lon: 0, RadiusKM: 200}, map[string]float64{"EQ001": 0, "EQ050": deg / 2, "EQ100": deg}},
			{catalog.Near{Lat: 0, Lon: 179.9, RadiusKM: 50}, map[string]float64{"AM_E": 0, "AM_W": 0.2 * deg}},
			// Columbus airport to the New Albany monitor by the spherical law of cosines, a
			// formula independent of the store's haversine: 11.7219 km.
			{catalog.Near{Lat: 39.9969, Lon: -82.8919, RadiusKM: 20}, map[string]float64{"KCMH": 0, "8118": cosineLaw(39.9969, -82.8919, 40.0845, -82.8153)}},
		}
		for _, tc := range tests {
			p, err := s.ListSensors(ctx, catalog.SensorFilter{Near: &tc.near, SortByDistance: true})
			if err != nil {
				t.Fatal(err)
			}
			if p.Total != len(tc.want) {
				t.Fatalf("near %+v: got %v, want %v", tc.near, extIDs(p), tc.want)
			}
			prev := -1.0
			for _, sn := range p.Sensors {
				if sn.DistanceKM == nil {
					t.Fatalf("%s: no distance", sn.ExternalID)
				}
				if w := tc.want[sn.ExternalID]; math.Abs(*sn.DistanceKM-w) > 0.01 {
					t.Errorf("%s: distance %.4f km, want %.4f", sn.ExternalID, *sn.DistanceKM, w)
				}
				if *sn.DistanceKM < prev {
					t.Errorf("not sorted by distance: %v", extIDs(p))
				}
				prev = *sn.DistanceKM
			}
		}
	})
}

func cosineLaw(lat1, lon1, lat2, lon2 float64) float64 {
	r := math.Pi / 180
	return store.EarthRadiusKM * math.Acos(math.Sin(lat1*r)*math.Sin(lat2*r)+math.Cos(lat1*r)*math.Cos(lat2*r)*math.Cos((lon2-lon1)*r))
}

func TestListSensorsPagination(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loadFixture(t, s)
		all, err := s.ListSensors(ctx, catalog.SensorFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if all.Total != len(fixtureStations) || len(all.Sensors) != len(fixtureStations) {
			t.Fatalf("all: total %d, items %d, want %d", all.Total, len(all.Sensors), len(fixtureStations))
		}
		for i := 1; i < len(all.Sensors); i++ {
			a, b := all.Sensors[i-1], all.Sensors[i]
			if a.Name > b.Name || (a.Name == b.Name && a.ID.String() > b.ID.String()) {
				t.Fatalf("not ordered by name, id: %q before %q", a.Name, b.Name)
			}
		}
		for _, plan := range plans {
			store.SetPlanThresholds(s, plan.filterFirstMax, plan.deferredJoinOffset)
			for _, f := range []catalog.SensorFilter{{}, {Status: catalog.StatusActive}} {
				var paged []string
				for page := 1; ; page++ {
					f.Page, f.Limit = page, 4
					p, err := s.ListSensors(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					if p.Total != len(fixtureStations) {
						t.Fatalf("%s: page %d: total %d", plan.name, page, p.Total)
					}
					if len(p.Sensors) == 0 {
						break
					}
					paged = append(paged, extIDs(p)...)
				}
				if !slices.Equal(paged, extIDs(all)) {
					t.Fatalf("%s: pages %v != one list %v", plan.name, paged, extIDs(all))
				}
			}
		}
		beyond, err := s.ListSensors(ctx, catalog.SensorFilter{Page: 99, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if len(beyond.Sensors) != 0 || beyond.Total != len(fixtureStations) || beyond.Sensors == nil {
			t.Fatalf("beyond the last page: %v total %d", extIDs(beyond), beyond.Total)
		}
		clamped, _ := s.ListSensors(ctx, catalog.SensorFilter{Limit: 1_000_000})
		if len(clamped.Sensors) != len(fixtureStations) {
			t.Fatalf("clamped limit: %d items", len(clamped.Sensors))
		}
	})
}

func TestListSensorsRejectsBadFilters(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		tests := []struct {
			name  string
			f     catalog.SensorFilter
			param string
		}{
			{"lat out of range", catalog.SensorFilter{Near: &catalog.Near{Lat: 91, Lon: 0, RadiusKM: 1}}, "lat"},
			{"lon NaN", catalog.SensorFilter{Near: &catalog.Near{Lat: 0, Lon: math.NaN(), RadiusKM: 1}}, "lon"},
			{"radius zero", catalog.SensorFilter{Near: &catalog.Near{Lat: 0, Lon: 0}}, "radius_km"},
			{"bbox upside down", catalog.SensorFilter{BBox: &catalog.BBox{MinLat: 10, MaxLat: 5, MinLon: 0, MaxLon: 1}}, "min_lat"},
			{"bbox lon out of range", catalog.SensorFilter{BBox: &catalog.BBox{MinLat: 0, MaxLat: 5, MinLon: -181, MaxLon: 1}}, "min_lon"},
		}
		for _, tc := range tests {
			_, err := s.ListSensors(context.Background(), tc.f)
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Code != apierr.InvalidParameter {
				t.Errorf("%s: err %v, want an invalid_parameter error", tc.name, err)
				continue
			}
			if want := `"` + tc.param + `"`; !strings.Contains(ae.Message, want) {
				t.Errorf("%s: message %q does not name %s", tc.name, ae.Message, want)
			}
		}
	})
}

func TestCountCacheFollowsGeneration(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loadFixture(t, s)
		f := catalog.SensorFilter{ServiceID: "weather"}
		p, _ := s.ListSensors(ctx, f)
		if p.Total != 6 {
			t.Fatalf("total %d", p.Total)
		}
		if _, err := s.Sync(ctx, batch("weather", true, "KFLL", "KCMH")); err != nil {
			t.Fatal(err)
		}
		// Same filter, cached before: the new generation must recount.
		p, _ = s.ListSensors(ctx, catalog.SensorFilter{ServiceID: "weather", Status: catalog.StatusActive})
		if p.Total != 4 {
			t.Fatalf("active weather after marking = %d, want 4", p.Total)
		}
		p, _ = s.ListSensors(ctx, f)
		if p.Total != 6 {
			t.Fatalf("all weather = %d, want 6 (missing sensors stay listed)", p.Total)
		}
		types, err := s.SensorStatuses(ctx)
		if err != nil || !slices.Equal(types, []string{"active", "inactive"}) {
			t.Fatalf("statuses after marking = %v, %v", types, err)
		}
		// The ordered matches of a search are cached too, and must follow a rename.
		search := catalog.SensorFilter{Search: "antimeridian"}
		if p, _ = s.ListSensors(ctx, search); !slices.Equal(extIDs(p), []string{"PADK", "AM_E", "AM_W", "NFFN"}) {
			t.Fatalf("search before rename = %v", extIDs(p))
		}
		b := batch("weather", true)
		for i := range b.Sensors {
			if b.Sensors[i].ExternalID == "AM_W" {
				b.Sensors[i].Name = "Dateline West"
			}
		}
		if _, err := s.Sync(ctx, b); err != nil {
			t.Fatal(err)
		}
		if p, _ = s.ListSensors(ctx, search); !slices.Equal(extIDs(p), []string{"PADK", "AM_E", "NFFN"}) || p.Total != 3 {
			t.Fatalf("search after rename = %v (total %d)", extIDs(p), p.Total)
		}
	})
}

func TestSensorLookups(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loadFixture(t, s)
		// The same external id at a second service: the first service by id wins.
		dup := batch("weather", false)
		dup.Sensors = []catalog.Sensor{{ExternalID: "8118", Name: "weather twin", ProviderSlug: "nws"}}
		if _, err := s.Sync(ctx, dup); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			ext, wantSvc string
		}{{"TPLM2", "ocean"}, {"tplm2", "ocean"}, {"8118", "airquality"}, {"kfll", "weather"}}
		for _, tc := range tests {
			got, err := s.SensorByExternalID(ctx, tc.ext)
			if err != nil || got.ServiceID != tc.wantSvc {
				t.Errorf("SensorByExternalID(%q) = %s, %v; want service %s", tc.ext, got.ServiceID, err, tc.wantSvc)
			}
		}

		if _, err := s.SensorByExternalID(ctx, "NOPE"); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("unknown external id: %v", err)
		}
		if _, err := s.Sensor(ctx, uuid.New()); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("unknown id: %v", err)
		}
		types, err := s.SensorTypes(ctx)
		if err != nil || !slices.Equal(types, []string{"air_quality_monitor", "buoy", "weather_station"}) {
			t.Errorf("SensorTypes = %v, %v", types, err)
		}
		statuses, err := s.SensorStatuses(ctx)
		if err != nil || !slices.Equal(statuses, []string{"active"}) {
			t.Errorf("SensorStatuses = %v, %v", statuses, err)
		}
	})
}

func TestServices(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.UpsertService(ctx, catalog.Service{ID: "ocean", URL: "http://127.0.0.1:8081", Port: 8081}); err != nil {
			t.Fatal(err)
		}
		sv, err := s.Service(ctx, "ocean")
		if err != nil || sv.Status != "down" {
			t.Fatalf("configured, never synced service: %+v, %v", sv, err)
		}
		b := batch("ocean", true)
		b.Service.Version = "1.2.3"
		b.Service.Tools = []string{"ocean.latest_observation"}
		b.Service.Providers = []string{"ndbc"}
		b.Service.URL = ""
		if _, err := s.Sync(ctx, b); err != nil {
			t.Fatal(err)
		}
		sv, err = s.Service(ctx, "ocean")
		if err != nil {
			t.Fatal(err)
		}
		if sv.Version != "1.2.3" || sv.Status != "active" || sv.URL != "http://127.0.0.1:8081" || sv.LastSyncAt == nil ||
			!slices.Equal(sv.Tools, []string{"ocean.latest_observation"}) || !slices.Equal(sv.Providers, []string{"ndbc"}) || sv.SensorCount != 6 {
			t.Fatalf("synced service: %+v", sv)
		}
		at := time.Date(2026, 11, 21, 6, 50, 0, 0, time.UTC)
		if err := s.SetServiceStatus(ctx, "ocean", "degraded", at); err != nil {
			t.Fatal(err)
		}
		sv, _ = s.Service(ctx, "ocean")
		if sv.Status != "degraded" || sv.LastProbeAt == nil || !sv.LastProbeAt.Equal(at) {
			t.Fatalf("after probe: %q %v", sv.Status, sv.LastProbeAt)
		}
		// The prober owns the status once it has probed: a later sync (the service says
		// "active" of itself) must not undo it.
		if _, err := s.Sync(ctx, b); err != nil {
			t.Fatal(err)
		}
		if sv, _ = s.Service(ctx, "ocean"); sv.Status != "degraded" {
			t.Fatalf("sync after a probe overwrote the probed status: %q", sv.Status)
		}
		if err := s.SetServiceStatus(ctx, "nope", "down", at); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("SetServiceStatus of unknown service: %v", err)
		}
		if _, err := s.Service(ctx, "nope"); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("Service of unknown id: %v", err)
		}
		all, err := s.Services(ctx)
		if err != nil || len(all) != 1 {
			t.Fatalf("Services = %v, %v", all, err)
		}
	})
}

func TestProjects(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loadFixture(t, s)
		alice, err := s.CreateUser(ctx, catalog.User{Name: "alice", Email: "alice@example.org"})
		if err != nil {
			t.Fatal(err)
		}
		bob, err := s.CreateUser(ctx, catalog.User{Name: "bob", Email: "bob@example.org"})
		if err != nil {
			t.Fatal(err)
		}
		priv, err := s.CreateProject(ctx, catalog.Project{Slug: "alice-dev", Name: "Alice 100% private", OwnerID: alice.ID,
			ProviderID: ptr(ids.Provider("ndbc")), Domain: "ocean", FeedType: "development"})
		if err != nil {
			t.Fatal(err)
		}
		if priv.Visibility != catalog.VisibilityPrivate || priv.ProviderSlug != "ndbc" || priv.CreatedAt.IsZero() {
			t.Fatalf("created project: %+v", priv)
		}
		if _, err := s.CreateProject(ctx, catalog.Project{Slug: "alice-dev", Name: "again", OwnerID: bob.ID}); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("duplicate slug: %v", err)
		}
		if _, err := s.CreateProject(ctx, catalog.Project{Slug: "ghost", Name: "ghost", OwnerID: uuid.New()}); err == nil {
			t.Fatal("project of an unknown owner was created")
		}
		slugs := func(ps []catalog.Project) []string {
			out := []string{}
			for _, p := range ps {
				out = append(out, p.Slug)
			}
			return out
		}
		tests := []struct {
			name  string
			f     catalog.ProjectFilter
			want  []string
			total int
		}{
			{"anonymous viewer sees public", catalog.ProjectFilter{}, []string{"ndbc-realtime", "nws-observations", "openaq-latest"}, 3},
			{"owner sees own private", catalog.ProjectFilter{ViewerID: alice.ID}, []string{"alice-dev", "ndbc-realtime", "nws-observations", "openaq-latest"}, 4},
			{"other user does not", catalog.ProjectFilter{ViewerID: bob.ID, Search: "alice"}, []string{}, 0},
			{"my projects", catalog.ProjectFilter{ViewerID: alice.ID, OwnerID: &alice.ID}, []string{"alice-dev"}, 1},
			{"provider", catalog.ProjectFilter{ViewerID: alice.ID, Provider: "ndbc"}, []string{"alice-dev", "ndbc-realtime"}, 2},
			{"domain", catalog.ProjectFilter{Domain: "weather"}, []string{"nws-observations"}, 1},
			{"temporal pattern", catalog.ProjectFilter{TemporalPattern: "periodic", Limit: 1, Page: 2}, []string{"nws-observations"}, 3},
			{"feed type", catalog.ProjectFilter{ViewerID: alice.ID, FeedType: "development"}, []string{"alice-dev"}, 1},
			{"search literal", catalog.ProjectFilter{ViewerID: alice.ID, Search: "100%"}, []string{"alice-dev"}, 1},
			{"beyond last page", catalog.ProjectFilter{Page: 5}, []string{}, 3},
		}
		for _, tc := range tests {
			ps, total, err := s.ListProjects(ctx, tc.f)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if !slices.Equal(slugs(ps), tc.want) || total != tc.total {
				t.Errorf("%s: got %v (total %d), want %v (total %d)", tc.name, slugs(ps), total, tc.want, tc.total)
			}
		}
		byID, err := s.Project(ctx, priv.ID.String())
		if err != nil || byID.Slug != "alice-dev" || byID.OwnerID != alice.ID {
			t.Fatalf("Project by id: %+v, %v", byID, err)
		}
		if _, err := s.Project(ctx, "nope"); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("unknown project: %v", err)
		}
	})
}

func TestUsersAndKeys(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, err := s.CreateUser(ctx, catalog.User{Name: "carol", Email: "Carol@example.org"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateUser(ctx, catalog.User{Name: "carol2", Email: "carol@EXAMPLE.org"}); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("duplicate email: %v", err)
		}
		if got, err := s.User(ctx, u.ID); err != nil || got.Email != "Carol@example.org" {
			t.Fatalf("User = %+v, %v", got, err)
		}
		if _, err := s.User(ctx, uuid.New()); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("unknown user: %v", err)
		}
		hash := func(secret string) []byte { h := sha256.Sum256([]byte(secret)); return h[:] }
		k1, err := s.CreateKey(ctx, catalog.APIKey{Name: "laptop", Prefix: "sg_dev_aaaa", Hash: hash("sg_dev_aaaa-secret"), OwnerID: u.ID, Environment: catalog.EnvDevelopment})
		if err != nil {
			t.Fatal(err)
		}
		k2, err := s.CreateKey(ctx, catalog.APIKey{Name: "prod", Prefix: "sg_live_bbbb", Hash: hash("sg_live_bbbb-secret"), OwnerID: u.ID, Environment: catalog.EnvProduction, Plan: "pro",
			CreatedAt: time.Now().Add(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateKey(ctx, catalog.APIKey{Name: "same", Prefix: "sg_live_bbbb", Hash: hash("sg_live_bbbb-secret"), OwnerID: u.ID, Environment: catalog.EnvProduction}); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("duplicate hash: %v", err)
		}
		if _, err := s.CreateKey(ctx, catalog.APIKey{Prefix: "x", Hash: hash("x"), OwnerID: u.ID, Environment: "staging"}); err == nil {
			t.Fatal("key of an unknown environment was created")
		}
		got, err := s.KeyByHash(ctx, hash("sg_live_bbbb-secret"))
		if err != nil || got.ID != k2.ID || got.Plan != "pro" || got.Environment != catalog.EnvProduction || got.OwnerID != u.ID || got.RevokedAt != nil {
			t.Fatalf("KeyByHash = %+v, %v", got, err)
		}
		if _, err := s.KeyByHash(ctx, hash("wrong")); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("unknown hash: %v", err)
		}
		keys, err := s.Keys(ctx)
		if err != nil || len(keys) != 2 || keys[0].ID != k2.ID {
			t.Fatalf("Keys = %v, %v", keys, err)
		}
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		rk, err := s.RevokeKey(ctx, "sg_dev_aaaa", at)
		if err != nil || rk.ID != k1.ID || rk.RevokedAt == nil || !rk.RevokedAt.Equal(at) {
			t.Fatalf("RevokeKey by prefix = %+v, %v", rk, err)
		}
		again, err := s.RevokeKey(ctx, k1.ID.String(), at.Add(time.Hour))
		if err != nil || !again.RevokedAt.Equal(at) {
			t.Fatalf("RevokeKey again by id = %+v, %v", again, err)
		}
		got, _ = s.KeyByHash(ctx, hash("sg_dev_aaaa-secret"))
		if got.RevokedAt == nil || !got.RevokedAt.Equal(at) {
			t.Fatalf("revoked key still looks valid: %+v", got)
		}
		if _, err := s.RevokeKey(ctx, "nope", at); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("revoke unknown: %v", err)
		}
		if _, err := s.CreateKey(ctx, catalog.APIKey{Prefix: "sg_live_bbbb", Hash: hash("another"), OwnerID: u.ID, Environment: catalog.EnvProduction}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RevokeKey(ctx, "sg_live_bbbb", at); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("revoke by ambiguous prefix: %v", err)
		}
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestFacetTotalsMatchTheSensors checks the totals counted from sensor_facets against the
// sensors themselves after inserts, updates, missing marks and a provider rename.
func TestFacetTotalsMatchTheSensors(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loadFixture(t, s)
		steps := []catalog.SyncBatch{batch("weather", true, "KCMH", "PADK"), batch("ocean", true, "NOLOC")}
		renamed := batch("airquality", true)
		renamed.Providers[0].ID, renamed.Providers[0].Slug = ids.Provider("openaq"), "openaq-v3" // same id, new slug
		steps = append(steps, renamed)
		for _, b := range steps {
			if _, err := s.Sync(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		all, err := s.ListSensors(ctx, catalog.SensorFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		filters := []catalog.SensorFilter{
			{}, {Status: catalog.StatusInactive}, {Status: catalog.StatusActive}, {SensorType: "buoy"},
			{Provider: "openaq-v3"}, {Provider: "openaq"}, {ServiceID: "weather", Status: catalog.StatusActive},
			{DataTypes: []string{"air_temperature_c", "pm10_ug_per_m3"}}, {FeedID: ptr(ids.Feed("ndbc-realtime"))},
			{SensorType: "weather_station", DataTypes: []string{"wind_speed_ms"}},
		}
		for _, f := range filters {
			want := 0
			for _, sn := range all.Sensors {
				if (f.Status == "" || sn.Status == f.Status) && (f.SensorType == "" || sn.SensorType == f.SensorType) &&
					(f.Provider == "" || sn.ProviderSlug == f.Provider) && (f.ServiceID == "" || sn.ServiceID == f.ServiceID) &&
					(f.FeedID == nil || (sn.FeedID != nil && *sn.FeedID == *f.FeedID)) &&
					(len(f.DataTypes) == 0 || slices.ContainsFunc(sn.DataTypes, func(d string) bool { return slices.Contains(f.DataTypes, d) })) {
					want++
				}
			}
			p, err := s.ListSensors(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if p.Total != want {
				t.Errorf("filter %+v: total %d, the sensors say %d", f, p.Total, want)
			}
		}
		if p, _ := s.ListSensors(ctx, catalog.SensorFilter{Provider: "openaq-v3"}); p.Total != 3 {
			t.Errorf("sensors of the renamed provider slug: %d, want 3", p.Total)
		}
		if p, _ := s.ListSensors(ctx, catalog.SensorFilter{Status: catalog.StatusInactive}); p.Total != 3 {
			t.Errorf("inactive (missing) sensors: %d, want 3", p.Total)
		}
		statuses, _ := s.SensorStatuses(ctx)
		if !slices.Equal(statuses, []string{"active", "inactive"}) {
			t.Errorf("statuses = %v", statuses)
		}
	})
}

// TestConcurrentSyncAndList runs syncs of one service from two "replicas" while readers
// list: no errors, and the end state is the last full listing.
func TestConcurrentSyncAndList(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loadFixture(t, s)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		stop := make(chan struct{})
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					for _, f := range []catalog.SensorFilter{{}, {Search: "air"}, {ServiceID: "weather"}, {Near: &catalog.Near{Lat: 0, Lon: 179.95, RadiusKM: 30}}} {
						if _, err := s.ListSensors(ctx, f); err != nil {
							errs <- err
							return
						}
					}
				}
			}()
		}
		var syncers sync.WaitGroup
		for r := range 2 {
			syncers.Add(1)
			go func() {
				defer syncers.Done()
				for i := range 5 {
					skip := []string{"KFLL"}
					if (i+r)%2 == 0 {
						skip = nil
					}
					if _, err := s.Sync(ctx, batch("weather", true, skip...)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		syncers.Wait()
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("concurrent use: %v", err)
		}
		if _, err := s.Sync(ctx, batch("weather", true)); err != nil {
			t.Fatal(err)
		}
		p, _ := s.ListSensors(ctx, catalog.SensorFilter{ServiceID: "weather", Status: catalog.StatusActive})
		sv, _ := s.Service(ctx, "weather")
		if p.Total != 6 || sv.SensorCount != 6 {
			t.Fatalf("after the last full sync: %d active, service count %d; want 6", p.Total, sv.SensorCount)
		}
	})
}

// TestCaseDistinctSensors syncs two OpenAQ locations whose ids differ only in case ("21 de
// Mayo" and "21 de mayo" in the recorded v1 latest page) into PostgreSQL and SQLite: they
// stay two sensors with two ids, each found by its own spelling.
func TestCaseDistinctSensors(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		b := batch("airquality", true)
		names := []string{"AR:21 de Mayo", "AR:21 de mayo"}
		for _, ext := range names {
			b.Sensors = append(b.Sensors, catalog.Sensor{ExternalID: ext, Name: ext, Status: catalog.StatusActive,
				ProviderSlug: "openaq", FeedSlug: "openaq-latest", DataTypes: []string{"pm2_5_ug_per_m3"}})
		}
		if _, err := s.Sync(ctx, b); err != nil {
			t.Fatal(err)
		}
		got := map[string]uuid.UUID{}
		for _, ext := range names {
			sn, err := s.SensorByExternalID(ctx, ext)
			if err != nil || sn.ExternalID != ext {
				t.Fatalf("SensorByExternalID(%q) = %+v, %v", ext, sn, err)
			}
			if sn.ID != ids.Sensor("airquality", ext) {
				t.Errorf("%q has id %v, want ids.Sensor's %v", ext, sn.ID, ids.Sensor("airquality", ext))
			}
			got[ext] = sn.ID
		}
		if got[names[0]] == got[names[1]] {
			t.Fatalf("one sensor for both spellings: %v", got)
		}
		// A third spelling matches both: it finds neither rather than guess.
		if _, err := s.SensorByExternalID(ctx, "AR:21 DE MAYO"); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("an ambiguous spelling found a sensor: %v", err)
		}
		page, err := s.ListSensors(ctx, catalog.SensorFilter{Search: "21 de", Page: 1, Limit: 10})
		if err != nil || len(page.Sensors) != 2 {
			t.Fatalf("search = %v, %v; want both sensors", extIDs(page), err)
		}
	})
}
