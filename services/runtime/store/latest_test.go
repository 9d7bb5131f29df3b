package store_test

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

func TestLatestReadings(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		start := time.Date(2026, 1, 30, 0, 0, 0, 0, time.UTC)
		// A: 72 readings in one batch (their values go into blocks); B: a reading alone in
		// its batch (inline values); C: a station that never reported.
		a := ndbcBatch("TPLM2", start, 72)
		a.Stations = []contract.Station{{ExternalID: "TPLM2", Name: "Thomas Point", ReportingIntervalS: 600}}
		b := ndbcBatch("44013", start.Add(5*time.Hour), 1)
		c := store.Batch{Provider: "ndbc", Feed: "ndbc-realtime", Stations: []contract.Station{{ExternalID: "SILENT1", Name: "Silent"}}}
		for _, batch := range []store.Batch{a, b, c} {
			if _, err := s.Ingest(ctx, batch); err != nil {
				t.Fatalf("ingest: %v", err)
			}
		}
		got, err := s.LatestReadings(ctx, []string{"tplm2", "44013", "SILENT1", "NOPE", "TPLM2"})
		if err != nil {
			t.Fatalf("latest readings: %v", err)
		}
		if len(got) != 3 {
			t.Fatalf("got %d stations, want 3 (unknown and other spellings left out, repeats once): %+v", len(got), got)
		}
		by := map[string]store.StationLatest{}
		for _, g := range got {
			by[g.Station.ExternalID] = g
		}
		if by["SILENT1"].Reading != nil || by["SILENT1"].Station.ExternalID != "SILENT1" || by["SILENT1"].Station.LastReadingAt != nil {
			t.Errorf("never-reported station = %+v, want its station and no reading", by["SILENT1"])
		}
		if by["TPLM2"].Station.ReportingIntervalS != 600 {
			t.Errorf("station interval = %d, want 600", by["TPLM2"].Station.ReportingIntervalS)
		}
		for _, id := range []string{"TPLM2", "44013"} {
			want, err := s.LatestReading(ctx, id)
			if err != nil {
				t.Fatalf("latest reading %s: %v", id, err)
			}
			r := by[id].Reading
			if r == nil {
				t.Fatalf("%s: no reading", id)
			}
			if !r.Time.Equal(want.Time) || !bytes.Equal(r.Measurements, want.Measurements) || !r.FetchedAt.Equal(want.FetchedAt) ||
				r.Provider != want.Provider {
				t.Errorf("%s: batched latest %s %s %s, one-station latest %s %s %s", id, r.Time, r.Measurements, r.Provider, want.Time, want.Measurements, want.Provider)
			}
			if lr := by[id].Station.LastReadingAt; lr == nil || !lr.Time.Equal(want.Time) {
				t.Errorf("%s: station's last reading %v, want %s", id, lr, want.Time)
			}
		}
		if want := start.Add(71 * time.Hour); !by["TPLM2"].Reading.Time.Equal(want) {
			t.Errorf("TPLM2 latest at %s, want %s", by["TPLM2"].Reading.Time, want)
		}
		if got, err := s.LatestReadings(ctx, nil); err != nil || len(got) != 0 {
			t.Errorf("no ids = %v, %v; want empty", got, err)
		}
	})
}

func TestCommittedOncePerReading(t *testing.T) {
	t.Parallel()
	opens := map[string]func(o store.Options) store.Options{
		"sqlite":   func(o store.Options) store.Options { o.SQLitePath = filepath.Join(t.TempDir(), "c.db"); return o },
		"postgres": func(o store.Options) store.Options { o.DatabaseURL = testenv.Postgres(t); return o },
	}
	for name, opt := range opens {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var (
				mu  sync.Mutex
				got []store.Committed
			)
			s, err := store.Open(ctx, opt(store.Options{ServiceID: "ocean", Committed: func(_ context.Context, rs []store.Committed) {
				mu.Lock()
				got = append(got, rs...)
				mu.Unlock()
			}}))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
			first := ndbcBatch("TPLM2", start, 10)
			if _, err := s.Ingest(ctx, first); err != nil {
				t.Fatal(err)
			}
			// The same readings again, plus 5 new ones: only the new ones are handed over.
			if _, err := s.Ingest(ctx, ndbcBatch("TPLM2", start, 15)); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 15 {
				t.Fatalf("committed %d readings, want 15 (each once)", len(got))
			}
			page, _, err := s.Readings(ctx, "TPLM2", contract.ReadingsQuery{Limit: 100, Ascending: true})
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range got {
				w := page[i]
				if c.Station.ExternalID != "TPLM2" || c.Reading.ID != w.ID || !c.Reading.Time.Equal(w.Time) || !bytes.Equal(c.Reading.Measurements, w.Measurements) {
					t.Errorf("committed %d = %s %s %s, stored %s %s %s", i, c.Reading.ID, c.Reading.Time, c.Reading.Measurements, w.ID, w.Time, w.Measurements)
				}
			}
		})
	}
}
