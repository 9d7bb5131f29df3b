package app_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/internal/providerdata"
	"github.com/sensorgate/sensorgate/services/runtime/ingest"
)

// TestIngestReportAndLineage runs the ocean service in files mode over the recorded TPLM2
// realtime2 file and annual 2020 file (SQLite, the default store), then reads
//   - the ingest report (token-protected): one document per file with its row count, the
//     readings it stored, its drops by reason (the files' MM and fill values as
//     missing_marker) and its first and last timestamp, as read off the files by hand;
//   - the 2020-02-02 21:00 reading with lineage=true: PRES 999.0 hPa is a reading (not a
//     fill value), and every conversion's rule, applied to its source value, gives the value.
func TestIngestReportAndLineage(t *testing.T) {
	t.Parallel()
	data := providerdata.Dir()
	if data == "" {
		t.Fatal("recorded provider payloads not found")
	}
	dir := t.TempDir()
	for _, name := range []string{"TPLM2.txt", "tplm2h2020.txt"} {
		body, err := os.ReadFile(filepath.Join(data, "ndbc", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const token = "report-token"
	base := service(t, map[string]string{"SOURCE_MODE": "files", "SOURCE_DIR": dir, "INTERNAL_TOKEN": token})
	auth := map[string]string{contract.HeaderInternalToken: token}

	if code, _ := get(t, base+ingest.PathReport, nil, nil); code != 403 {
		t.Fatalf("report without the token: %d, want 403", code)
	}
	var rep ingest.Report
	if code, b := get(t, base+ingest.PathReport, auth, &rep); code != 200 {
		t.Fatalf("report: %d %s", code, b)
	}
	want := map[string]struct {
		rows        int
		first, last time.Time
	}{
		"TPLM2.txt":      {1094, time.Date(2022, 6, 29, 0, 0, 0, 0, time.UTC), time.Date(2022, 8, 13, 18, 0, 0, 0, time.UTC)},
		"tplm2h2020.txt": {2182, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2020, 3, 31, 23, 0, 0, 0, time.UTC)},
	}
	seen := 0
	for _, d := range rep.Documents {
		w, ok := want[d.Document]
		if !ok || d.Provider != "noaa-ndbc" {
			continue
		}
		seen++
		if d.RecordsRead != w.rows || d.FirstTimestamp == nil || !d.FirstTimestamp.Equal(w.first) || !d.LastTimestamp.Equal(w.last) {
			t.Errorf("%s: %d rows %v..%v; want %d rows %v..%v", d.Document, d.RecordsRead, d.FirstTimestamp, d.LastTimestamp, w.rows, w.first, w.last)
		}
		if d.ReadingsStored == 0 || d.ReadingsStored+d.Duplicates != d.Observations || d.Dropped[ingest.DropMissingMarker] == 0 || d.Mode != "files" {
			t.Errorf("%s: %+v", d.Document, d)
		}
	}
	if seen != 2 {
		t.Fatalf("report has %d of the 2 files: %+v", seen, rep)
	}

	var r struct {
		Readings []struct {
			Timestamp    contract.Time `json:"timestamp"`
			Measurements []struct {
				canon.Measurement
				Conversion canon.Conversion `json:"conversion"`
			} `json:"measurements"`
		} `json:"readings"`
	}
	q := "?since=2020-02-02T21:00:00Z&until=2020-02-02T21:00:01Z&lineage=true"
	if code, b := get(t, base+contract.ReadingsPath("TPLM2")+q, auth, &r); code != 200 || len(r.Readings) != 1 {
		t.Fatalf("readings: %d %s", code, b)
	}
	fields := map[string]string{}
	for _, m := range r.Readings[0].Measurements {
		c := m.Conversion
		fields[m.Parameter] = c.SourceField
		rule, ok := canon.RuleFor(m.Parameter, c.SourceUnit)
		if !ok || rule.Name != c.Rule || rule.Formula != c.Formula || c.SourceValue != m.ValueOriginal {
			t.Errorf("%s: conversion %+v, table rule %+v", m.Parameter, c, rule)
			continue
		}
		if v := math.Round(rule.Apply(c.SourceValue)*1e4) / 1e4; v != m.Value {
			t.Errorf("%s: %s(%v) = %v, served %v", m.Parameter, c.Formula, c.SourceValue, v, m.Value)
		}
		if m.Parameter == canon.AirPressureHPa && (m.Value != 999.0 || c.Rule != canon.Identity || c.SourceField != "PRES") {
			t.Errorf("PRES at 2020-02-02 21:00: %+v", m)
		}
	}
	// 2020 02 02 21 00 146 11.4 12.8 ... 999.0 6.2 5.2 2.0: WDIR, WSPD, GST, PRES, ATMP, WTMP, DEWP.
	if len(fields) != 7 || fields[canon.WindGustMS] != "GST" || fields[canon.DewPointC] != "DEWP" {
		t.Errorf("fields = %v", fields)
	}
	if code, _ := get(t, base+contract.ReadingsPath("TPLM2")+"?lineage=yes", auth, nil); code != 400 {
		t.Errorf("lineage=yes: %d, want 400", code)
	}
}
