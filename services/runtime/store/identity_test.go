package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// TestIdentityIsByteExact stores readings of two OpenAQ locations whose ids differ only in
// case ("21 de Mayo" and "21 de mayo" are two places in the recorded v1 latest page) on
// PostgreSQL and on SQLite: they stay two stations, each with its own reading at the same
// hour, and a lookup in a third spelling finds neither.
func TestIdentityIsByteExact(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		at := time.Date(2020, 3, 21, 10, 0, 0, 0, time.UTC)
		a, b := "AR:21 de Mayo", "AR:21 de mayo"
		batch := store.Batch{Provider: "openaq", Feed: "openaq-measurements", FetchedAt: at}
		for i, id := range []string{a, b} {
			m, err := canon.Normalize(canon.PM25, float64(10+i), "µg/m³")
			if err != nil {
				t.Fatal(err)
			}
			batch.Stations = append(batch.Stations, contract.Station{ExternalID: id, Name: id, ProviderSlug: "openaq", FeedSlug: "openaq-measurements"})
			batch.Observations = append(batch.Observations, observation.Observation{
				StationID: id, Time: at, Measurements: []canon.Measurement{m}, Raw: []byte(`{"location":"` + id + `"}`), RawFormat: "openaq.v1.latest",
			})
		}
		res, err := s.Ingest(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		if res.Inserted != 2 || res.Duplicates != 0 {
			t.Fatalf("ingest = %+v; want 2 readings inserted, no duplicate", res)
		}
		sts, total, err := s.Stations(ctx, store.StationFilter{})
		if err != nil || total != 2 || len(sts) != 2 {
			t.Fatalf("stations = %d (%d), %v; want 2", len(sts), total, err)
		}
		for i, id := range []string{a, b} {
			st, err := s.Station(ctx, id)
			if err != nil || st.ExternalID != id {
				t.Fatalf("station %q = %+v, %v", id, st, err)
			}
			r, err := s.LatestReading(ctx, id)
			if err != nil {
				t.Fatalf("latest of %q: %v", id, err)
			}
			var ms []canon.Measurement
			if err := json.Unmarshal(r.Measurements, &ms); err != nil || len(ms) != 1 || ms[0].Value != float64(10+i) {
				t.Fatalf("latest of %q = %s (%v)", id, r.Measurements, err)
			}
			if r.ID != ids.Reading(ids.Sensor("ocean", id), at) {
				t.Fatalf("reading id of %q = %v", id, r.ID)
			}
		}
		if _, err := s.Station(ctx, "AR:21 DE MAYO"); !errors.Is(err, store.ErrStationNotFound) {
			t.Fatalf("a third spelling found a station: %v", err)
		}
		if ids.Sensor("ocean", a) == ids.Sensor("ocean", b) {
			t.Fatal("the two stations share a sensor id")
		}
	})
}

// TestNeverReportedStatus: a station known from metadata only is never_reported (out of
// "active" filters); its first reading makes it active and moves its updated_at (so the
// gateway's incremental sync sees it); metadata ingested again does not take that back.
func TestNeverReportedStatus(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		meta := store.Batch{Provider: "ndbc", Feed: "ndbc-stdmet", FetchedAt: time.Now(), Stations: []contract.Station{
			{ExternalID: "41002", Name: "South Hatteras", Status: observation.StatusNeverReported, ProviderSlug: "ndbc", FeedSlug: "ndbc-stdmet"},
		}}
		if _, err := s.Ingest(ctx, meta); err != nil {
			t.Fatal(err)
		}
		st, err := s.Station(ctx, "41002")
		if err != nil || st.Status != observation.StatusNeverReported {
			t.Fatalf("metadata only: %+v, %v", st, err)
		}
		before := st.UpdatedAt
		time.Sleep(5 * time.Millisecond) // updated_at has millisecond resolution
		if _, err := s.Ingest(ctx, ndbcBatch("41002", time.Date(2018, 8, 1, 0, 0, 0, 0, time.UTC), 2)); err != nil {
			t.Fatal(err)
		}
		st, err = s.Station(ctx, "41002")
		if err != nil || st.Status != observation.StatusActive || !st.UpdatedAt.After(before.Time) {
			t.Fatalf("after a reading: %+v, %v", st, err)
		}
		if _, err := s.Ingest(ctx, meta); err != nil {
			t.Fatal(err)
		}
		if st, _ = s.Station(ctx, "41002"); st.Status != observation.StatusActive {
			t.Fatalf("metadata again: status %q", st.Status)
		}
	})
}
