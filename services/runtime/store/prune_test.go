package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/observation"
)

// On PostgreSQL, retention drops the partitions of the months before the cutoff (readings
// and blocks) instead of deleting their rows, and keeps the boundary month's.
func TestPruneDropsPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := Open(ctx, Options{DatabaseURL: testenv.Postgres(t), ServiceID: "ocean"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := st.(*sqlStore)
	b := Batch{Provider: "ndbc"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for ts := start; ts.Before(start.AddDate(0, 3, 0)); ts = ts.Add(6 * time.Hour) {
		m, _ := canon.Normalize(canon.WindSpeedMS, 3, "m/s")
		b.Observations = append(b.Observations, observation.Observation{StationID: "P1", Time: ts,
			Measurements: []canon.Measurement{m}, Raw: json.RawMessage(fmt.Sprintf(`{"t":%q}`, ts)), RawFormat: "p.v1"})
	}
	if _, err := s.Ingest(ctx, b); err != nil {
		t.Fatal(err)
	}
	partitions := func() []string {
		rows, err := s.d.query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent IN ('readings'::regclass, 'blocks'::regclass) ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		return out
	}
	all := []string{"blocks_p202601", "blocks_p202602", "blocks_p202603", "readings_p202601", "readings_p202602", "readings_p202603"}
	if got := partitions(); !slices.Equal(got, all) {
		t.Fatalf("partitions before = %v", got)
	}
	removed, err := s.Prune(ctx, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	if err != nil || removed != (31+28+1)*4 {
		t.Fatalf("prune = %d, %v; want %d", removed, err, (31+28+1)*4)
	}
	if got := partitions(); !slices.Equal(got, []string{"blocks_p202603", "readings_p202603"}) {
		t.Fatalf("partitions after = %v", got)
	}
}

// A replica that remembers a month's partitions which another replica's retention
// dropped fails one batch into that month, forgets its partitions, and stores the
// readings on the next attempt (the ingest loop retries a failed batch).
func TestPartitionDroppedByAnotherReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.Postgres(t)
	var stores [2]Store
	for i := range stores {
		st, err := Open(ctx, Options{DatabaseURL: url, ServiceID: "ocean"})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		stores[i] = st
	}
	batch := func(start time.Time, n int) Batch {
		b := Batch{Provider: "ndbc"}
		for i := 0; i < n; i++ {
			m, _ := canon.Normalize(canon.WindSpeedMS, float64(i), "m/s")
			b.Observations = append(b.Observations, observation.Observation{StationID: "R1", Time: start.Add(time.Duration(i) * time.Hour),
				Measurements: []canon.Measurement{m}, Raw: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), RawFormat: "r.v1"})
		}
		return b
	}
	jan := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	if _, err := stores[0].Ingest(ctx, batch(jan, 10)); err != nil {
		t.Fatal(err)
	}
	if n, err := stores[1].Prune(ctx, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)); err != nil || n != 10 {
		t.Fatalf("prune by the other replica = %d, %v", n, err)
	}
	later := batch(jan.Add(24*time.Hour), 10)
	if _, err := stores[0].Ingest(ctx, later); err == nil {
		t.Log("first batch into the dropped month succeeded (partitions already recreated)")
	}
	res, err := stores[0].Ingest(ctx, later)
	if err != nil || res.Inserted+res.Duplicates != 10 {
		t.Fatalf("retry = %+v, %v", res, err)
	}
	if _, total, err := stores[0].Readings(ctx, "R1", contract.ReadingsQuery{Limit: 100, Page: 1}); err != nil || total != 10 {
		t.Fatalf("readings after the retry: total %d, %v; want 10", total, err)
	}
}
