package app_test

import (
	"context"
	"encoding/csv"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// Every answer of the service carries the flags the ingest gave: readings JSON per
// measurement, the qc= filter, aggregates' excluded, the CSV qc_flag column.
func TestQualityEndToEnd(t *testing.T) {
	t.Parallel()
	base, st := serviceWithStore(t)
	ctx := context.Background()
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	temps := []float64{20.0, 20.1, 20.2, 35.0, 20.3, 20.4} // a 15 °C spike at 00:30
	b := store.Batch{Provider: "ndbc", Feed: "ndbc-realtime", FetchedAt: start.Add(time.Hour)}
	for i, v := range temps {
		m, _ := canon.Normalize(canon.WaterTemperatureC, v, "degC")
		b.Observations = append(b.Observations, observation.Observation{StationID: "QC1", Time: start.Add(time.Duration(i) * 10 * time.Minute),
			Measurements: []canon.Measurement{m}, Raw: []byte(`{"t":1}`), RawFormat: "ndbc.historical.stdmet"})
	}
	if _, err := st.Ingest(ctx, b); err != nil {
		t.Fatal(err)
	}
	rq := "?since=2026-06-01T00:00:00Z&until=2026-06-01T01:00:00Z&sort=asc"
	var page contract.ReadingsResponse
	if code, body := get(t, base+contract.ReadingsPath("QC1")+rq, nil, &page); code != 200 || len(page.Readings) != 6 {
		t.Fatalf("readings: %d %s", code, body)
	}
	var got []int
	for _, r := range page.Readings {
		got = append(got, r.Measurements[0].Quality().Flag)
	}
	if !slices.Equal(got, []int{2, 1, 1, 4, 1, 1}) || !slices.Contains(page.Readings[3].Measurements[0].QC.Failed, canon.TestSpike) {
		t.Fatalf("flags %v, spike %+v", got, page.Readings[3].Measurements[0].QC)
	}
	// qc=good leaves the spike's measurement out; the reading stays (pagination counts
	// readings).
	if code, body := get(t, base+contract.ReadingsPath("QC1")+rq+"&qc=good", nil, &page); code != 200 || len(page.Readings[3].Measurements) != 0 || len(page.Readings[4].Measurements) != 1 {
		t.Fatalf("qc=good: %d %s", code, body)
	}
	if code, body := get(t, base+contract.ReadingsPath("QC1")+rq+"&qc=5", nil, nil); code != 400 || !strings.Contains(string(body), `"qc`) {
		t.Fatalf("qc=5: %d %s, want 400 naming qc", code, body)
	}
	// Aggregates: good by default, the spike counted in excluded.
	var a aggregateOf
	aq := "?interval=1h&since=2026-06-01T00:00:00Z&until=2026-06-01T01:00:00Z"
	if code, body := get(t, base+contract.AggregatePath("QC1")+aq, nil, &a); code != 200 || len(a.Buckets) != 1 {
		t.Fatalf("aggregate: %d %s", code, body)
	}
	v := a.Buckets[0].Values[canon.WaterTemperatureC]
	if *num(t, v, "count") != 5 || *num(t, v, "excluded") != 1 || *num(t, v, "max") != 20.4 {
		t.Fatalf("aggregate bucket %s, want 5 values, 1 excluded", fmtVals(v))
	}
	if code, body := get(t, base+contract.AggregatePath("QC1")+aq+"&qc=all", nil, &a); code != 200 {
		t.Fatalf("aggregate qc=all: %d %s", code, body)
	}
	if v := a.Buckets[0].Values[canon.WaterTemperatureC]; *num(t, v, "count") != 6 || *num(t, v, "excluded") != 0 {
		t.Fatalf("aggregate qc=all bucket %s, want 6 values", fmtVals(v))
	}
	// Export: the qc_flag column, and qc=3,4 keeps the spike alone.
	eq := "?station=QC1&since=2026-06-01T00:00:00Z&until=2026-06-01T01:00:00Z&format=csv"
	recs, err := csv.NewReader(stringsReader(lines(t, base+contract.PathExport+eq))).ReadAll()
	if err != nil || !slices.Equal(recs[0], formats.ReadingHeader) || recs[0][8] != "qc_flag" || len(recs) != 7 || recs[4][8] != "4" || recs[2][8] != "1" {
		t.Fatalf("csv %v, %v", recs, err)
	}
	recs, err = csv.NewReader(stringsReader(lines(t, base+contract.PathExport+eq+"&qc=3,4"))).ReadAll()
	if err != nil || len(recs) != 2 || recs[1][4] != "35" {
		t.Fatalf("csv qc=3,4: %v, %v", recs, err)
	}
}
