package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// backends opens one store per implementation, so every test runs against both.
func backends(t *testing.T) map[string]func(t *testing.T) store.Store {
	out := map[string]func(t *testing.T) store.Store{}
	for name, o := range backendOptions {
		out[name] = func(t *testing.T) store.Store { return open(t, o(t)) }
	}
	return out
}

// backendOptions are the options of a fresh store of each implementation; Open them
// twice for a restarted service over the same database.
var backendOptions = map[string]func(t *testing.T) store.Options{
	"sqlite":   func(t *testing.T) store.Options { return store.Options{SQLitePath: filepath.Join(t.TempDir(), "r.db")} },
	"postgres": func(t *testing.T) store.Options { return store.Options{DatabaseURL: testenv.Postgres(t)} },
}

// open opens a store of service ocean, closed when the test ends.
func open(t *testing.T, o store.Options) store.Store {
	t.Helper()
	o.ServiceID = "ocean"
	s, err := store.Open(context.Background(), o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// eachBackend runs fn, in parallel, on a fresh store of each implementation.
func eachBackend(t *testing.T, fn func(t *testing.T, s store.Store)) {
	t.Helper()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

func fptr(v float64) *float64 { return &v }

// ndbcBatch builds n hourly observations of station id in the NDBC text shape.
func ndbcBatch(id string, start time.Time, n int) store.Batch {
	b := store.Batch{Provider: "ndbc", Feed: "ndbc-realtime", FetchedAt: start.Add(time.Duration(n) * time.Hour)}
	for i := 0; i < n; i++ {
		ts := start.Add(time.Duration(i) * time.Hour)
		wt, _ := canon.Normalize(canon.WaterTemperatureC, 20+float64(i%10)/10, "degC")
		ws, _ := canon.Normalize(canon.WindSpeedMS, 3+float64(i%7), "m/s")
		line := fmt.Sprintf("%s %03d %4.1f  MM  MM  MM  MM  MM 1015.2  MM %4.1f  MM  MM  MM  MM", ts.Format("2006 01 02 15 04"), (i*7)%360, ws.Value, wt.Value)
		raw, _ := json.Marshal(map[string]string{"format": "ndbc.realtime2.stdmet", "header": "#YY  MM DD hh mm WDIR WSPD GST  WVHT   DPD   APD MWD   PRES  ATMP  WTMP  DEWP  VIS PTDY  TIDE", "line": line})
		b.Observations = append(b.Observations, observation.Observation{
			StationID: id, Time: ts, Measurements: []canon.Measurement{wt, ws},
			Lat: fptr(38.899), Lon: fptr(-76.436), Raw: raw, RawFormat: "ndbc.realtime2.stdmet",
		})
	}
	return b
}

func TestIngestIdempotentAndRead(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		start := time.Date(2026, 1, 30, 0, 0, 0, 0, time.UTC) // spans two months
		b := ndbcBatch("TPLM2", start, 72)
		b.Stations = []contract.Station{{ExternalID: "TPLM2", Name: "Thomas Point, MD", SensorType: "buoy", ReportingIntervalS: 3600}}
		res, err := s.Ingest(ctx, b)
		if err != nil {
			t.Fatalf("ingest: %v", err)
		}
		if res.Inserted != 72 || res.Duplicates != 0 || res.Stations != 1 {
			t.Fatalf("first ingest = %+v, want 72 inserted, 1 station", res)
		}
		res, err = s.Ingest(ctx, b)
		if err != nil {
			t.Fatalf("second ingest: %v", err)
		}
		if res.Inserted != 0 || res.Duplicates != 72 || res.Stations != 0 {
			t.Fatalf("replay = %+v, want 0 inserted, 72 duplicates, 0 stations changed", res)
		}
		fp, err := s.Footprint(ctx)
		if err != nil || fp.Readings != 72 {
			t.Fatalf("footprint = %+v, %v; want 72 readings", fp, err)
		}

		st, err := s.Station(ctx, "TPLM2")
		if err != nil {
			t.Fatalf("station: %v", err)
		}
		if st.Name != "Thomas Point, MD" || st.ProviderSlug != "ndbc" || st.FeedSlug != "ndbc-realtime" ||
			len(st.DataTypes) != 2 || st.Latitude == nil || st.LastReadingAt == nil || st.ReportingIntervalS != 3600 {
			t.Fatalf("station = %+v", st)
		}
		if want := start.Add(71 * time.Hour); !st.LastReadingAt.Equal(want) {
			t.Fatalf("last reading at %v, want %v", st.LastReadingAt, want)
		}

		latest, err := s.LatestReading(ctx, "TPLM2")
		if err != nil {
			t.Fatalf("latest: %v", err)
		}
		want := start.Add(71 * time.Hour)
		if !latest.Time.Equal(want) || latest.ID != ids.Reading(ids.Sensor("ocean", "TPLM2"), want) ||
			latest.RawFormat != "ndbc.realtime2.stdmet" || !json.Valid(latest.Raw) || !json.Valid(latest.Measurements) {
			t.Fatalf("latest = %+v raw=%s", latest, latest.Raw)
		}
		if want, got := string(b.Observations[71].Raw), string(latest.Raw); want != got {
			t.Fatalf("raw round trip:\n got %s\nwant %s", got, want)
		}
		var ms []canon.Measurement
		if err := json.Unmarshal(latest.Measurements, &ms); err != nil || len(ms) != 2 || ms[0].QC == nil {
			t.Fatalf("measurements = %s (%v)", latest.Measurements, err)
		}
		if ms[0].QC = nil; ms[0] != b.Observations[71].Measurements[0] {
			t.Fatalf("measurements = %s, want %+v beside its qc", latest.Measurements, b.Observations[71].Measurements[0])
		}

		cases := []struct {
			name    string
			q       contract.ReadingsQuery
			total   int
			n       int
			first   time.Time
			wantRaw bool
		}{
			{"all newest first", contract.ReadingsQuery{Limit: 10, Page: 1}, 72, 10, start.Add(71 * time.Hour), false},
			{"page 2", contract.ReadingsQuery{Limit: 10, Page: 2}, 72, 10, start.Add(61 * time.Hour), false},
			{"last partial page", contract.ReadingsQuery{Limit: 10, Page: 8}, 72, 2, start.Add(time.Hour), false},
			{"beyond the end", contract.ReadingsQuery{Limit: 10, Page: 9}, 72, 0, time.Time{}, false},
			{"far half, found from the other end", contract.ReadingsQuery{Limit: 10, Page: 6}, 72, 10, start.Add(21 * time.Hour), false},
			{"far half ascending", contract.ReadingsQuery{Limit: 10, Page: 7, Ascending: true}, 72, 10, start.Add(60 * time.Hour), false},
			{"far half of a range", contract.ReadingsQuery{Limit: 4, Page: 3, Since: start.Add(40 * time.Hour), Until: start.Add(50 * time.Hour)}, 10, 2, start.Add(41 * time.Hour), false},
			{"ascending page 2", contract.ReadingsQuery{Limit: 10, Page: 2, Ascending: true}, 72, 10, start.Add(10 * time.Hour), false},
			{"range across months", contract.ReadingsQuery{Limit: 100, Page: 1, Since: start.Add(40 * time.Hour), Until: start.Add(50 * time.Hour)}, 10, 10, start.Add(49 * time.Hour), false},
			{"empty range", contract.ReadingsQuery{Limit: 100, Page: 1, Since: start.Add(-50 * time.Hour), Until: start.Add(-40 * time.Hour)}, 0, 0, time.Time{}, false},
			{"raw", contract.ReadingsQuery{Limit: 5, Page: 1, Format: contract.FormatRaw}, 72, 5, start.Add(71 * time.Hour), true},
		}
		for _, c := range cases {
			rs, total, err := s.Readings(ctx, "TPLM2", c.q)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if total != c.total || len(rs) != c.n {
				t.Fatalf("%s: total %d, %d rows; want %d, %d", c.name, total, len(rs), c.total, c.n)
			}
			if c.n > 0 && !rs[0].Time.Equal(c.first) {
				t.Fatalf("%s: first at %v, want %v", c.name, rs[0].Time, c.first)
			}
			for _, r := range rs {
				if (r.Raw != nil) != c.wantRaw {
					t.Fatalf("%s: raw present = %v", c.name, r.Raw != nil)
				}
			}
		}

		if _, err := s.LatestReading(ctx, "NOPE"); !errors.Is(err, store.ErrStationNotFound) {
			t.Fatalf("latest of unknown station: %v, want ErrStationNotFound", err)
		}
		if _, _, err := s.Readings(ctx, "NOPE", contract.ReadingsQuery{Limit: 1, Page: 1}); !errors.Is(err, store.ErrStationNotFound) {
			t.Fatalf("readings of unknown station: %v, want ErrStationNotFound", err)
		}
	})
}

func TestStationsPagingAndUpdatedSince(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		for i := 0; i < 5; i++ {
			if _, err := s.Ingest(ctx, ndbcBatch(fmt.Sprintf("ST%02d", i), start, 2)); err != nil {
				t.Fatalf("ingest: %v", err)
			}
		}
		all, total, err := s.Stations(ctx, store.StationFilter{Limit: 2, Page: 3})
		if err != nil || total != 5 || len(all) != 1 || all[0].ExternalID != "ST04" {
			t.Fatalf("page 3 of 2 = %v (total %d, %v)", all, total, err)
		}
		time.Sleep(5 * time.Millisecond)
		mark := time.Now()
		time.Sleep(5 * time.Millisecond)
		// Re-ingesting the same data changes no station, so the cursor sees nothing...
		if _, err := s.Ingest(ctx, ndbcBatch("ST01", start, 2)); err != nil {
			t.Fatal(err)
		}
		got, total, err := s.Stations(ctx, store.StationFilter{UpdatedSince: mark})
		if err != nil || total != 0 || len(got) != 0 {
			t.Fatalf("after no-op replay: %v (total %d, %v)", got, total, err)
		}
		// ...a guess beside observations does not override what is stored...
		b := ndbcBatch("ST02", start, 1)
		b.Stations = []contract.Station{{ExternalID: "ST02", Name: "Guess", SensorType: "buoy"}}
		if _, err := s.Ingest(ctx, b); err != nil {
			t.Fatal(err)
		}
		got, _, err = s.Stations(ctx, store.StationFilter{UpdatedSince: mark})
		if err != nil || len(got) != 1 || got[0].Name != "Guess" || got[0].SensorType != "buoy" {
			t.Fatalf("after a guess: %+v (%v); want the placeholder name and empty sensor type filled", got, err)
		}
		// ...nor a second guess what the first filled...
		b = ndbcBatch("ST02", start, 1)
		b.Stations = []contract.Station{{ExternalID: "ST02", Name: "Second guess"}}
		if _, err := s.Ingest(ctx, b); err != nil {
			t.Fatal(err)
		}
		if st, err := s.Station(ctx, "ST02"); err != nil || st.Name != "Guess" {
			t.Fatalf("after a second guess: %+v (%v)", st, err)
		}
		// ...while a metadata document renames the station.
		b = store.Batch{Provider: "ndbc", Stations: []contract.Station{{ExternalID: "ST02", Name: "Renamed"}}}
		if _, err := s.Ingest(ctx, b); err != nil {
			t.Fatal(err)
		}
		got, total, err = s.Stations(ctx, store.StationFilter{UpdatedSince: mark})
		if err != nil || total != 1 || got[0].Name != "Renamed" || len(got[0].DataTypes) != 2 {
			t.Fatalf("after rename: %+v (total %d, %v)", got, total, err)
		}
	})
}

// Replicas polling the same provider race to write the same readings: every reading is
// stored once, and the inserted counts add up to exactly the readings there are.
func TestConcurrentReplicasStoreOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.Postgres(t)
	var stores []store.Store
	for i := 0; i < 2; i++ {
		s, err := store.Open(ctx, store.Options{DatabaseURL: url, ServiceID: "ocean"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
	}
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	// Overlapping windows of the same station, as repeated polls of a 45-day file are.
	batches := []store.Batch{ndbcBatch("TPLM2", start, 200), ndbcBatch("TPLM2", start.Add(50*time.Hour), 200), ndbcBatch("TPLM2", start, 300)}
	var mu sync.Mutex
	inserted := 0
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := stores[i%2].Ingest(ctx, batches[i%3])
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inserted += res.Inserted
			mu.Unlock()
		}()
	}
	wg.Wait()
	fp, err := stores[0].Footprint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, total, err := stores[1].Readings(ctx, "TPLM2", contract.ReadingsQuery{Limit: 1, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	if fp.Readings != 300 || inserted != 300 || total != 300 {
		t.Fatalf("stored %d, inserted counts add to %d, station counter %d; want 300 each", fp.Readings, inserted, total)
	}
}

// A format whose raw fragments are too small to make a dictionary still stores them
// (plainly) under its format name.
func TestTinyRawFragments(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		ts := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
		m, _ := canon.Normalize(canon.AQI, 42, "")
		b := store.Batch{Provider: "tiny", Observations: []observation.Observation{
			{StationID: "T1", Time: ts, Measurements: []canon.Measurement{m}, Raw: json.RawMessage(`{}`), RawFormat: "tiny.v1"},
		}}
		if _, err := s.Ingest(ctx, b); err != nil {
			t.Fatal(err)
		}
		r, err := s.LatestReading(ctx, "T1")
		if err != nil || string(r.Raw) != `{}` || r.RawFormat != "tiny.v1" {
			t.Fatalf("latest = %+v raw %s, %v", r, r.Raw, err)
		}
	})
}

// Every reading reads back byte for byte whether it landed in a block (a backfill), alone
// in its row (a poll that adds one reading to a file that repeats the rest), or in a
// block cut at a month boundary.
func TestBlocksAndInlineReadBack(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		start := time.Date(2026, 2, 27, 0, 0, 0, 0, time.UTC) // 48 h to the month's end
		full := ndbcBatch("B1", start, 101)
		first := full
		first.Observations = full.Observations[:100]
		if res, err := s.Ingest(ctx, first); err != nil || res.Inserted != 100 {
			t.Fatalf("backfill: %+v, %v", res, err)
		}
		if res, err := s.Ingest(ctx, full); err != nil || res.Inserted != 1 || res.Duplicates != 100 {
			t.Fatalf("poll with one new reading: %+v, %v", res, err)
		}
		rs, total, err := s.Readings(ctx, "B1", contract.ReadingsQuery{Limit: 500, Page: 1, Ascending: true, Format: contract.FormatRaw})
		if err != nil || total != 101 || len(rs) != 101 {
			t.Fatalf("readings: %d of %d, %v", len(rs), total, err)
		}
		for i, r := range rs {
			o := full.Observations[i]
			want, _ := json.Marshal(o.Measurements)
			if !r.Time.Equal(o.Time) || withoutQC(t, r.Measurements) != string(want) || string(r.Raw) != string(o.Raw) || r.RawFormat != o.RawFormat {
				t.Fatalf("reading %d at %v:\n got %s %s (%s)\nwant %s %s", i, r.Time, r.Measurements, r.Raw, r.RawFormat, want, o.Raw)
			}
		}
		latest, err := s.LatestReading(ctx, "B1")
		if err != nil || !latest.Time.Equal(full.Observations[100].Time) || string(latest.Raw) != string(full.Observations[100].Raw) {
			t.Fatalf("latest = %+v, %v", latest, err)
		}
	})
}

// Retention removes the readings before the cutoff and keeps the rest, the counters and
// the latest reading right; on PostgreSQL the months entirely before the cutoff are
// dropped as partitions and the boundary month is deleted from.
func TestPrune(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		start := time.Date(2026, 1, 20, 0, 0, 0, 0, time.UTC)
		span := ndbcBatch("SPAN", start, 24*40) // hourly, Jan 20 - Feb 28
		old := ndbcBatch("OLD", start, 24*5)    // Jan 20 - 24 only
		for _, b := range []store.Batch{span, old} {
			if _, err := s.Ingest(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		cut := time.Date(2026, 2, 10, 12, 30, 0, 0, time.UTC)
		wantGone := int64(24*5 + (21*24 + 13)) // OLD's 120, SPAN's Jan 20 - Feb 10 12:00
		removed, err := s.Prune(ctx, cut)
		if err != nil || removed != wantGone {
			t.Fatalf("prune = %d, %v; want %d", removed, err, wantGone)
		}
		left := int64(24*40) - (wantGone - 120)
		if fp, err := s.Footprint(ctx); err != nil || fp.Readings != left {
			t.Fatalf("footprint = %+v, %v; want %d readings", fp, err, left)
		}
		rs, total, err := s.Readings(ctx, "SPAN", contract.ReadingsQuery{Limit: 300, Page: 1, Ascending: true})
		if err != nil || int64(total) != left || len(rs) != 300 || !rs[0].Time.Equal(cut.Add(30*time.Minute)) {
			t.Fatalf("SPAN after prune: total %d, %d rows, first %v, %v; want %d from %v", total, len(rs), rs[0].Time, err, left, cut.Add(30*time.Minute))
		}
		rs, _, err = s.Readings(ctx, "SPAN", contract.ReadingsQuery{Limit: 300, Page: 2, Ascending: true, Format: contract.FormatRaw})
		if err != nil || int64(300+len(rs)) != left || string(rs[len(rs)-1].Raw) != string(span.Observations[len(span.Observations)-1].Raw) {
			t.Fatalf("SPAN page 2: %d rows, %v", len(rs), err)
		}
		latest, err := s.LatestReading(ctx, "SPAN")
		if err != nil || !latest.Time.Equal(start.Add(959*time.Hour)) {
			t.Fatalf("SPAN latest = %v, %v", latest.Time, err)
		}
		if _, err := s.LatestReading(ctx, "OLD"); !errors.Is(err, store.ErrNoReadings) {
			t.Fatalf("OLD latest: %v, want ErrNoReadings", err)
		}
		st, err := s.Station(ctx, "OLD")
		if err != nil || st.LastReadingAt != nil {
			t.Fatalf("OLD station = %+v, %v; want no last reading", st, err)
		}
		if _, total, err := s.Readings(ctx, "OLD", contract.ReadingsQuery{Limit: 10, Page: 1}); err != nil || total != 0 {
			t.Fatalf("OLD readings total %d, %v", total, err)
		}
		// A source that repeats what retention removed does not bring it back; new
		// readings of the boundary month and of a new month are stored.
		res, err := s.Ingest(ctx, old)
		if err != nil || res.Inserted != 0 {
			t.Fatalf("re-ingest of pruned readings = %+v, %v", res, err)
		}
		res, err = s.Ingest(ctx, ndbcBatch("OLD", cut.Add(time.Hour), 24*30))
		if err != nil || res.Inserted != 24*30 {
			t.Fatalf("ingest after prune = %+v, %v", res, err)
		}
		if _, total, err := s.Readings(ctx, "OLD", contract.ReadingsQuery{Limit: 10, Page: 1}); err != nil || total != 24*30 {
			t.Fatalf("OLD readings total %d, %v; want %d", total, err, 24*30)
		}
		if removed, err := s.Prune(ctx, cut); err != nil || removed != 0 {
			t.Fatalf("second prune = %d, %v", removed, err)
		}
	})
}

// withoutQC is stored measurements JSON without their quality (which every one must
// have), for comparing with an adapter's output.
func withoutQC(t *testing.T, b []byte) string {
	t.Helper()
	var ms []canon.Measurement
	if err := json.Unmarshal(b, &ms); err != nil {
		t.Fatalf("measurements %s: %v", b, err)
	}
	for i := range ms {
		if ms[i].QC == nil {
			t.Fatalf("measurement %d of %s has no qc", i, b)
		}
		ms[i].QC = nil
	}
	out, _ := json.Marshal(ms)
	return string(out)
}
