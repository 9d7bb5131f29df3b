package app_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// TestExportAndAggregateLineage stores Ambient-shaped readings (temperature in °F, wind
// in mph, humidity in %) on PostgreSQL and reads them with lineage=true through the
// service's export (NDJSON and CSV) and aggregate: every conversion names the rule of
// canon's table for its parameter and source unit, and that rule applied to the source
// value gives the served value; the CSV's conversion columns are the NDJSON's, row by
// row; the aggregate names each parameter's rule once.
func TestExportAndAggregateLineage(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{ServiceID: "ocean", DatabaseURL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	const n = 30
	b := store.Batch{Provider: "noaa-ndbc", Feed: "ndbc", FetchedAt: start.Add(n * 10 * time.Minute),
		Stations: []contract.Station{{ExternalID: "AMB1", Name: "Lineage test", ReportingIntervalS: 600}}}
	for i := 0; i < n; i++ {
		var ms []canon.Measurement
		for _, src := range []struct {
			p, unit string
			v       float64
		}{{canon.AirTemperatureC, "degF", 50 + float64(i)*0.9}, {canon.WindSpeedMS, "mph", float64(i) * 1.3}, {canon.RelativeHumidityPercent, "percent", 40 + float64(i)}} {
			m, err := canon.Normalize(src.p, src.v, src.unit)
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
		}
		b.Observations = append(b.Observations, observation.Observation{StationID: "AMB1", Time: start.Add(time.Duration(i) * 10 * time.Minute),
			Measurements: ms, Raw: json.RawMessage(fmt.Sprintf(`{"tempf":%d}`, i)), RawFormat: "ambient.record"})
	}
	if _, err := st.Ingest(ctx, b); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	base := service(t, map[string]string{"SOURCE_MODE": "files", "SOURCE_DIR": t.TempDir(), "READINGS_DATABASE_URL": dsn})

	check := func(what string, m canon.Measurement, c canon.Conversion) {
		t.Helper()
		rule, ok := canon.RuleFor(m.Parameter, c.SourceUnit)
		if !ok || rule.Name != c.Rule || rule.Formula != c.Formula || c.SourceValue != m.ValueOriginal || c.SourceUnit != m.UnitOriginal {
			t.Errorf("%s %s: conversion %+v, table rule %+v", what, m.Parameter, c, rule)
			return
		}
		if c.SourceField == "" || c.SourceField != canon.SourceField("ambient.record", m.Parameter) {
			t.Errorf("%s %s: source field %q", what, m.Parameter, c.SourceField)
		}
		if v := rule.Apply(c.SourceValue); math.Abs(v-m.Value) > 1e-4 {
			t.Errorf("%s %s: %s at x=%v = %v, served %v", what, m.Parameter, c.Formula, c.SourceValue, v, m.Value)
		}
	}
	q := url.Values{"station": {"AMB1"}, "since": {"2026-03-01"}, "until": {"2026-03-02"}, "lineage": {"true"}}

	// NDJSON: every measurement carries its conversion.
	q.Set("format", "ndjson")
	type convRow struct {
		m canon.Measurement
		c canon.Conversion
	}
	var nd []convRow
	rules := map[string]bool{}
	for _, line := range lines(t, base+contract.PathExport+"?"+q.Encode()) {
		var rd struct {
			Measurements []struct {
				canon.Measurement
				Conversion *canon.Conversion `json:"conversion"`
			} `json:"measurements"`
		}
		if err := json.Unmarshal([]byte(line), &rd); err != nil {
			t.Fatalf("%v in %s", err, line)
		}
		for _, m := range rd.Measurements {
			if m.Conversion == nil {
				t.Fatalf("measurement without conversion: %s", line)
			}
			check("ndjson", m.Measurement, *m.Conversion)
			rules[m.Conversion.Rule] = true
			nd = append(nd, convRow{m.Measurement, *m.Conversion})
		}
	}
	if len(nd) != 3*n || !rules["fahrenheit_to_celsius"] || !rules["mph_to_ms"] || !rules[canon.Identity] {
		t.Fatalf("ndjson: %d measurements, rules %v", len(nd), rules)
	}

	// CSV: the long form with five more columns, the same conversions row by row.
	q.Set("format", "csv")
	recs, err := csv.NewReader(stringsReader(lines(t, base+contract.PathExport+"?"+q.Encode()))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0], formats.LineageHeader) || len(recs) != 1+len(nd) {
		t.Fatalf("csv: header %v, %d rows; want %v and %d rows", recs[0], len(recs)-1, formats.LineageHeader, len(nd))
	}
	for i, rec := range recs[1:] {
		w := nd[i]
		// Column 8 is qc_flag; the conversion follows it.
		sv, err := strconv.ParseFloat(rec[12], 64)
		if err != nil || rec[3] != w.m.Parameter || rec[8] != formats.QCFlag(w.m) || rec[9] != w.c.Rule || rec[10] != w.c.Formula || rec[11] != w.c.SourceField || sv != w.c.SourceValue || rec[13] != w.c.SourceUnit {
			t.Fatalf("csv row %d = %v, ndjson %+v", i+1, rec, w)
		}
		v, _ := strconv.ParseFloat(rec[4], 64)
		check("csv", canon.Measurement{Parameter: rec[3], Value: v, UnitOriginal: rec[7], ValueOriginal: sv},
			canon.Conversion{Rule: rec[9], Formula: rec[10], SourceField: rec[11], SourceValue: sv, SourceUnit: rec[13]})
	}
	// Without lineage the columns are the plain long form.
	q.Del("lineage")
	recs, err = csv.NewReader(stringsReader(lines(t, base+contract.PathExport+"?"+q.Encode()))).ReadAll()
	if err != nil || !slices.Equal(recs[0], formats.ReadingHeader) || len(recs[1]) != len(formats.ReadingHeader) {
		t.Fatalf("csv without lineage: %v %v", recs[:2], err)
	}

	// Aggregate: each parameter's conversion once.
	var agg contract.AggregateResponse
	if code, body := get(t, base+contract.AggregatePath("AMB1")+"?interval=1h&since=2026-03-01&until=2026-03-01T06:00:00Z&lineage=true", nil, &agg); code != 200 {
		t.Fatalf("aggregate: %d %s", code, body)
	}
	want := map[string]string{canon.AirTemperatureC: "degF", canon.WindSpeedMS: "mph", canon.RelativeHumidityPercent: "percent"}
	if len(agg.Lineage) != len(want) {
		t.Fatalf("aggregate lineage: %+v", agg.Lineage)
	}
	for p, unit := range want {
		l := agg.Lineage[p]
		rule, _ := canon.RuleFor(p, unit)
		if l.Rule != rule.Name || l.Formula != rule.Formula || l.SourceUnit != unit || l.SourceField != canon.SourceField("ambient.record", p) {
			t.Errorf("aggregate lineage of %s: %+v, want rule %+v from %s", p, l, rule, unit)
		}
	}
	// The mean of the converted values is the mean of the formula over the source values.
	mean := *agg.Buckets[0].Values[canon.AirTemperatureC].Mean
	rule, _ := canon.RuleFor(canon.AirTemperatureC, "degF")
	var sum float64
	for i := 0; i < 6; i++ {
		sum += rule.Apply(50 + float64(i)*0.9)
	}
	if math.Abs(mean-sum/6) > 1e-4 {
		t.Errorf("first hour's temperature mean %v, formula over the source values %v", mean, sum/6)
	}
	var plain map[string]any
	get(t, base+contract.AggregatePath("AMB1")+"?interval=1h&since=2026-03-01&until=2026-03-01T06:00:00Z", nil, &plain)
	if _, ok := plain["lineage"]; ok {
		t.Error("aggregate without lineage=true carries lineage")
	}
	for _, u := range []string{
		base + contract.AggregatePath("AMB1") + "?interval=1h&lineage=maybe",
		base + contract.PathExport + "?station=AMB1&since=2026-03-01&lineage=maybe",
	} {
		if code, body := get(t, u, nil, nil); code != 400 || !json.Valid(body) || !containsStr(string(body), "lineage") {
			t.Errorf("%s: %d %s, want a 400 naming lineage", u, code, body)
		}
	}
}

// lines GETs u and returns its lines (status 200 required).
func lines(t *testing.T, u string) []string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func stringsReader(ls []string) io.Reader { return strings.NewReader(strings.Join(ls, "\n") + "\n") }

func containsStr(s, sub string) bool { return strings.Contains(s, sub) }
