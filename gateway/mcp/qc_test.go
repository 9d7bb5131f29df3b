package mcp_test

import (
	"strings"
	"testing"
)

// TestReadingsToolsQualityFilter: get_readings shows each measurement's quality flag and
// takes REST's qc= filter; a filter REST refuses is refused naming qc.
func TestReadingsToolsQualityFilter(t *testing.T) {
	t.Parallel()
	g := newGateway(t, 2)
	id := g.Sensors[0].ID.String()
	type result struct {
		Readings []struct {
			Measurements []struct {
				Parameter string `json:"parameter"`
				QC        *struct {
					Flag int `json:"flag"`
				} `json:"qc"`
			} `json:"measurements"`
		} `json:"readings"`
	}
	var all result
	g.call(t, "/api/v1/catalog/mcp", "get_readings", map[string]any{"sensor_id": id, "days": 2, "limit": 50}).decode(t, &all)
	flags := map[int]int{}
	for _, r := range all.Readings {
		for _, m := range r.Measurements {
			if m.QC == nil {
				t.Fatalf("measurement %s has no qc", m.Parameter)
			}
			flags[m.QC.Flag]++
		}
	}
	if len(flags) == 0 {
		t.Fatal("no measurements to check")
	}
	var good result
	g.call(t, "/api/v1/catalog/mcp", "get_readings", map[string]any{"sensor_id": id, "days": 2, "limit": 50, "qc": "good"}).decode(t, &good)
	for _, r := range good.Readings {
		for _, m := range r.Measurements {
			if m.QC.Flag != 1 && m.QC.Flag != 2 {
				t.Errorf("qc=good kept %s with flag %d", m.Parameter, m.QC.Flag)
			}
		}
	}
	bad := g.call(t, "/api/v1/catalog/mcp", "get_readings", map[string]any{"sensor_id": id, "qc": "excellent"})
	if !bad.IsError || !strings.Contains(bad.text(), "qc") {
		t.Errorf("qc=excellent: %v %s, want a tool error naming qc", bad.IsError, bad.text())
	}
	agg := g.call(t, "/api/v1/catalog/mcp", "aggregate_readings", map[string]any{"sensor_id": id, "days": 1, "qc": "1,2,3"})
	if agg.IsError {
		t.Errorf("aggregate_readings with qc: %s", agg.text())
	}
}
