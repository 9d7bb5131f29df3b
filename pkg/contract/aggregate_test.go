package contract_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// TestAppendAggregateMatchesMarshal: the direct encoder writes what encoding/json
// writes, for answers with every kind of field: null and present coverage, circular
// means cancelled out (null), strings that need escaping, lineage or none, nil slices.
func TestAppendAggregateMatchesMarshal(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	n := 600
	zone, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	fetched := contract.Time{Time: time.Date(2026, 3, 8, 12, 0, 0, 123e6, time.UTC)}
	full := contract.AggregateResponse{
		SensorID: "5f0c6b1e-0000-5000-8000-000000000001", ExternalID: "41001 <&>", Name: "Buoy \"East\" \u2028 ü",
		ServiceID: "ocean", Interval: "1h", TZ: "America/New_York", Stats: []string{"mean", "min", "max", "count"},
		Parameters: []string{"wind_direction_deg", "air_temperature_c", "wave_height_m"}, Source: "rollups",
		Since: contract.Time{Time: time.Date(2026, 3, 8, 5, 0, 0, 0, time.UTC)}, ExpectedIntervalSeconds: &n,
		Provenance: contract.Provenance{SensorID: "x", ServiceID: "ocean", SourceID: "41001", Provider: "noaa-ndbc", FetchedAt: &fetched},
		Lineage:    map[string]contract.AggregateLineage{"air_temperature_c": {Rule: "identity", Formula: "x", SourceField: "ATMP", SourceUnit: "degC"}},
	}
	r := rand.New(rand.NewPCG(1, 2))
	start := full.Since.Time
	for i := range 30 {
		s, e := start.Add(time.Duration(i)*time.Hour), start.Add(time.Duration(i+1)*time.Hour)
		b := contract.AggregateBucket{Start: contract.Time{Time: s}, End: contract.Time{Time: e},
			StartLocal: s.In(zone).Format(contract.LocalLayout), Values: map[string]contract.AggregateStat{}}
		for _, p := range full.Parameters {
			st := contract.AggregateStat{Stats: full.Stats, Count: int64(r.IntN(7))}
			if i%4 != 0 {
				st.Coverage = f(float64(st.Count) / 6)
			}
			if st.Count > 0 {
				st.Min, st.Max = f(r.Float64()*10-5), f(r.Float64()*1e4)
				if !(p == "wind_direction_deg" && i%5 == 0) { // a circular mean that cancelled out stays null
					st.Mean = f(float64(r.IntN(1e9)) / 1e6)
				}
			}
			b.Values[p] = st
		}
		full.Buckets = append(full.Buckets, b)
	}
	full.Until = full.Buckets[len(full.Buckets)-1].End

	bare := full
	bare.Stats, bare.Lineage, bare.ExpectedIntervalSeconds = []string{"count"}, nil, nil
	bare.Parameters, bare.Buckets = []string{}, []contract.AggregateBucket{{Start: full.Since, End: full.Until, StartLocal: "x"}}
	empty := contract.AggregateResponse{}

	for name, resp := range map[string]*contract.AggregateResponse{"full": &full, "bare": &bare, "empty": &empty} {
		want, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := contract.AppendAggregate(nil, resp)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: AppendAggregate differs from json.Marshal\n got %s\nwant %s", name, got, want)
		}
	}

	bad := bare
	bad.Buckets = []contract.AggregateBucket{{Values: map[string]contract.AggregateStat{"x": {Stats: []string{"median"}}}}}
	if _, err := contract.AppendAggregate(nil, &bad); err == nil {
		t.Error("an unknown statistic encoded without an error")
	}
}
