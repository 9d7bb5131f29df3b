package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
)

// areaFilters are the filters the area tests ask for: every kind of plan ListSensors has.
func areaFilters() []catalog.SensorFilter {
	return []catalog.SensorFilter{
		{Page: 1, Limit: 1000},
		{ServiceID: "weather", Page: 1, Limit: 1000},
		{Search: "air", Page: 1, Limit: 1000},
		{DataTypes: []string{"air_temperature_c"}, Page: 1, Limit: 1000},
		{BBox: &catalog.BBox{MinLat: -20, MinLon: 170, MaxLat: 60, MaxLon: -170}, Page: 1, Limit: 1000},
		{Near: &catalog.Near{Lat: 0, Lon: 179.95, RadiusKM: 30}, SortByDistance: true, Page: 1, Limit: 1000},
		{ExternalIDs: []string{"KFLL", "AM_W", "8118"}, Page: 1, Limit: 1000},
		{Page: 2, Limit: 4},
	}
}

// areaView is what AreaSensors promises of a page: ListSensors' sensors, order and total
// in the fields area latest reads.
func areaView(p catalog.SensorPage) string {
	out := fmt.Sprintf("total %d:", p.Total)
	for _, s := range p.Sensors {
		out += fmt.Sprintf(" [%s %s %s %q %v %v %d %v]", s.ID, s.ServiceID, s.ExternalID, s.Name, deref(s.Latitude), deref(s.Longitude),
			s.ReportingIntervalS, deref(s.DistanceKM))
	}
	return out
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestAreaSensorsFollowCatalog: AreaSensors gives ListSensors' page for every kind of
// filter, cached or not, and a Sync that renames, moves, re-times or adds a sensor is seen
// by the very next call (the cache is per catalog generation).
func TestAreaSensorsFollowCatalog(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loadFixture(t, s)
		same := func(when string) {
			t.Helper()
			for _, f := range areaFilters() {
				want, err := s.ListSensors(ctx, f)
				if err != nil {
					t.Fatalf("%s: ListSensors(%+v): %v", when, f, err)
				}
				if len(f.ExternalIDs) > 0 && want.Total != len(want.Sensors) {
					t.Fatalf("%s: ListSensors(%+v): total %d for %d sensors named by id", when, f, want.Total, len(want.Sensors))
				}
				for range 2 { // the second answer comes from the cache
					got, err := s.AreaSensors(ctx, f)
					if err != nil {
						t.Fatalf("%s: AreaSensors(%+v): %v", when, f, err)
					}
					if g, w := areaView(got), areaView(want); g != w {
						t.Fatalf("%s: AreaSensors(%+v)\n got %s\nwant %s", when, f, g, w)
					}
				}
			}
		}
		same("fixture")

		b := batch("weather", true)
		for i := range b.Sensors {
			switch b.Sensors[i].ExternalID {
			case "AM_W":
				b.Sensors[i].Name = "Dateline West"
			case "KFLL":
				b.Sensors[i].Latitude, b.Sensors[i].Longitude = ptr(26.5), ptr(-80.0)
			case "PADK":
				b.Sensors[i].ReportingIntervalS = 3600
			}
		}
		nb := station{"weather", "NEW1", "Air base new", "new", "weather_station", "nws", "nws-observations", ptr(0.0), ptr(179.95), []string{"air_temperature_c"}}
		b.Sensors = append(b.Sensors, nb.sensor())
		if _, err := s.Sync(ctx, b); err != nil {
			t.Fatal(err)
		}
		p, err := s.AreaSensors(ctx, catalog.SensorFilter{ServiceID: "weather", Page: 1, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		by := map[string]catalog.Sensor{}
		for _, sn := range p.Sensors {
			by[sn.ExternalID] = sn
		}
		if p.Total != 7 || by["AM_W"].Name != "Dateline West" || *by["KFLL"].Latitude != 26.5 || by["PADK"].ReportingIntervalS != 3600 || by["NEW1"].Name == "" {
			t.Fatalf("right after the sync the cached area page is not the new catalog: %s", areaView(p))
		}
		same("after the sync")

		// Last reading times are not in the cached page; they come fresh, and a new one
		// (which leaves the generation alone) is seen at once.
		at := time.Date(2026, 11, 25, 16, 10, 0, 0, time.UTC)
		b = batch("weather", false)
		for i := range b.Sensors {
			if b.Sensors[i].ExternalID == "KCMH" {
				b.Sensors[i].LastReadingAt = &at
			}
		}
		if _, err := s.Sync(ctx, b); err != nil {
			t.Fatal(err)
		}
		ids := []uuid.UUID{by["KCMH"].ID, by["KFLL"].ID}
		last, err := s.LastReadingTimes(ctx, ids)
		if err != nil || len(last) != 1 || !last[by["KCMH"].ID].Equal(at) {
			t.Fatalf("last reading times = %v, %v; want KCMH at %s only", last, err, at)
		}
	})
}

// TestAreaSensorsConcurrentNeverMix: 24 readers ask for eight filters at once while a
// syncer renames every weather sensor back and forth; the pages are cached and shared,
// so each answer is checked to be, whole, the page of its own filter in one of the two
// catalogs (never another filter's, never half of each), and once the syncs are done
// every filter gives the final catalog's page. Run with -race.
func TestAreaSensorsConcurrentNeverMix(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loadFixture(t, s)
		renamed := batch("weather", true)
		for i := range renamed.Sensors {
			renamed.Sensors[i].Name = "Z " + renamed.Sensors[i].Name
		}
		filters := areaFilters()
		views := func() []string {
			out := make([]string, len(filters))
			for i, f := range filters {
				p, err := s.ListSensors(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				out[i] = areaView(p)
			}
			return out
		}
		plain := views()
		if _, err := s.Sync(ctx, renamed); err != nil {
			t.Fatal(err)
		}
		other := views()
		if _, err := s.Sync(ctx, batch("weather", true)); err != nil {
			t.Fatal(err)
		}

		var wg sync.WaitGroup
		errs := make(chan error, 64)
		stop := make(chan struct{})
		for r := range 24 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					i := (r + n) % len(filters)
					p, err := s.AreaSensors(ctx, filters[i])
					if err != nil {
						errs <- err
						return
					}
					if v := areaView(p); v != plain[i] && v != other[i] {
						errs <- fmt.Errorf("filter %d (%+v) answered\n%s\nwhich is neither\n%s\nnor\n%s", i, filters[i], v, plain[i], other[i])
						return
					}
				}
			}()
		}
		for i := range 6 {
			b := batch("weather", true)
			if i%2 == 0 {
				b = renamed
			}
			if _, err := s.Sync(ctx, b); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for i, f := range filters { // the last sync restored the plain names
			p, err := s.AreaSensors(ctx, f)
			if err != nil || !slices.Equal([]string{areaView(p)}, []string{plain[i]}) {
				t.Fatalf("after the syncs, filter %d: %s, %v; want %s", i, areaView(p), err, plain[i])
			}
		}
	})
}
