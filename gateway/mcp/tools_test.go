package mcp_test

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sensorgate/sensorgate/gateway/mcp"
	"github.com/sensorgate/sensorgate/pkg/canon"
)

// schemas caches the outputSchema of every tool an endpoint lists.
type schemas struct {
	mu sync.Mutex
	m  map[string]*jsonschema.Resolved // path + " " + tool
}

// checked calls a tool and validates its structuredContent against the outputSchema the
// endpoint lists for it, as a strict client would.
func (g *gateway) checked(tb testing.TB, sc *schemas, path, tool string, args any) toolResult {
	tb.Helper()
	tr := g.call(tb, path, tool, args)
	if tr.IsError {
		tb.Fatalf("%s failed: %s", tool, tr.text())
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.m == nil {
		sc.m = map[string]*jsonschema.Resolved{}
	}
	key := path + " " + tool
	rs, ok := sc.m[key]
	if !ok {
		r := g.post(tb, path, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		var res struct {
			Tools []struct {
				Name         string          `json:"name"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(r.Msg.Result, &res); err != nil {
			tb.Fatal(err)
		}
		for _, t := range res.Tools {
			if t.Name != tool {
				continue
			}
			var s jsonschema.Schema
			if err := json.Unmarshal(t.OutputSchema, &s); err != nil {
				tb.Fatalf("%s outputSchema: %v", tool, err)
			}
			var err error
			if rs, err = s.Resolve(nil); err != nil {
				tb.Fatalf("%s outputSchema: %v", tool, err)
			}
		}
		if rs == nil {
			tb.Fatalf("%s is not listed at %s", tool, path)
		}
		sc.m[key] = rs
	}
	var instance any
	if err := json.Unmarshal(tr.StructuredContent, &instance); err != nil {
		tb.Fatalf("%s structuredContent: %v", tool, err)
	}
	if err := rs.Validate(instance); err != nil {
		tb.Errorf("%s structuredContent does not match its outputSchema: %v\n%s", tool, err, tr.StructuredContent)
	}
	// The text is a short human summary, not the structured result again.
	if t := tr.text(); t == "" || strings.Contains(t, "{") || len(t) > 2000 {
		tb.Errorf("%s text content is not a short summary (%d bytes): %.200q", tool, len(t), t)
	}
	return tr
}

func TestTools(t *testing.T) {
	g := newGateway(t, 3)
	sc := &schemas{}
	const cat = "/api/v1/catalog/mcp"
	const reg = "/api/v1/sensors/registry/mcp"
	s0 := g.Sensors[0]

	t.Run("resources", func(t *testing.T) {
		t.Parallel()
		var list struct {
			Resources []struct{ URI, Name, MimeType string } `json:"resources"`
		}
		r := g.post(t, cat, `{"jsonrpc":"2.0","id":1,"method":"resources/list"}`)
		if err := json.Unmarshal(r.Msg.Result, &list); err != nil || len(list.Resources) != 2 || list.Resources[0].URI != mcp.ParametersURI || list.Resources[1].URI != mcp.AreaLatestURI {
			t.Fatalf("resources/list: %s", r.Body)
		}
		var templates struct {
			ResourceTemplates []struct{ URITemplate string } `json:"resourceTemplates"`
		}
		r = g.post(t, cat, `{"jsonrpc":"2.0","id":2,"method":"resources/templates/list"}`)
		var uris []string
		if err := json.Unmarshal(r.Msg.Result, &templates); err == nil {
			for _, tpl := range templates.ResourceTemplates {
				uris = append(uris, tpl.URITemplate)
			}
		}
		slices.Sort(uris)
		if want := []string{mcp.AreaLatestURITemplate, mcp.SensorURITemplate, mcp.SensorLatestURITemplate}; !slices.Equal(uris, want) {
			t.Fatalf("resources/templates/list: %v, want %v", uris, want)
		}
		read := func(uri string) rpcResult {
			return g.post(t, cat, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"`+uri+`"}}`)
		}
		var res struct {
			Contents []struct{ URI, MimeType, Text string } `json:"contents"`
		}
		r = read(mcp.ParametersURI)
		if err := json.Unmarshal(r.Msg.Result, &res); err != nil || len(res.Contents) != 1 {
			t.Fatalf("read parameters: %s", r.Body)
		}
		var params []struct{ ID, Unit string }
		if err := json.Unmarshal([]byte(res.Contents[0].Text), &params); err != nil || len(params) != len(canon.Parameters()) || params[0].Unit == "" {
			t.Errorf("parameters resource: %s", res.Contents[0].Text)
		}
		for _, id := range []string{s0.ID.String(), s0.ExternalID} {
			r = read("sensorgate://sensors/" + id)
			var sr struct {
				Sensor     struct{ ID string } `json:"sensor"`
				Parameters []struct{ ID, Unit string }
			}
			if err := json.Unmarshal(r.Msg.Result, &res); err != nil || len(res.Contents) != 1 || json.Unmarshal([]byte(res.Contents[0].Text), &sr) != nil || sr.Sensor.ID != s0.ID.String() || len(sr.Parameters) != len(s0.DataTypes) {
				t.Errorf("read sensor %s: %s", id, r.Body)
			}
		}
		if r = read("sensorgate://sensors/NOSUCH"); r.Msg.Error == nil || !strings.Contains(r.Msg.Error.Message, "not found") {
			t.Errorf("unknown sensor resource: %s", r.Body)
		}
		// A sensor's latest reading and an area's are the REST answers, through the same
		// readings path and area latest.
		var latest struct {
			SensorID string `json:"sensor_id"`
			Reading  struct{ ID string }
		}
		r = read("sensorgate://sensors/" + s0.ExternalID + "/latest")
		if err := json.Unmarshal(r.Msg.Result, &res); err != nil || len(res.Contents) != 1 || json.Unmarshal([]byte(res.Contents[0].Text), &latest) != nil ||
			latest.SensorID != s0.ID.String() || latest.Reading.ID == "" {
			t.Errorf("read the sensor's latest: %s", r.Body)
		}
		var area struct {
			Items []struct {
				SensorID string `json:"sensor_id"`
			}
			Pagination struct{ Total int }
		}
		r = read("sensorgate://readings/latest?sensor_ids=" + s0.ExternalID + "&max_age=P3650D")
		if err := json.Unmarshal(r.Msg.Result, &res); err != nil || len(res.Contents) != 1 || json.Unmarshal([]byte(res.Contents[0].Text), &area) != nil ||
			area.Pagination.Total != 1 || len(area.Items) != 1 || area.Items[0].SensorID != s0.ID.String() {
			t.Errorf("read an area's latest: %s", r.Body)
		}
		if r = read("sensorgate://readings/latest?min_lat=95"); r.Msg.Error == nil || !strings.Contains(r.Msg.Error.Message, "min_lat") {
			t.Errorf("area latest with a bad query: %s", r.Body)
		}
		// The registry scope has no resources.
		if r = g.post(t, reg, `{"jsonrpc":"2.0","id":4,"method":"resources/list"}`); r.Msg.Error == nil || r.Msg.Error.Code != -32601 {
			t.Errorf("registry resources/list: %s", r.Body)
		}
	})

	t.Run("latest_in_area", func(t *testing.T) {
		t.Parallel()
		type item struct {
			SensorID     string            `json:"sensor_id"`
			AgeSeconds   *int64            `json:"age_seconds"`
			Stale        bool              `json:"stale"`
			StaleAfter   int64             `json:"stale_after_seconds"`
			Measurements []json.RawMessage `json:"measurements"`
		}
		var res struct {
			Items      []item `json:"items"`
			NextCursor string `json:"nextCursor"`
			Pagination struct{ Total int }
		}
		g.checked(t, sc, cat, "latest_in_area", map[string]any{}).decode(t, &res)
		if len(res.Items) != len(g.Sensors) || res.Pagination.Total != len(g.Sensors) {
			t.Fatalf("%d items of %d, want every one of %d sensors", len(res.Items), res.Pagination.Total, len(g.Sensors))
		}
		for _, it := range res.Items {
			// The one staleness rule: stale exactly when the age exceeds the threshold.
			if it.AgeSeconds == nil || it.Stale != (*it.AgeSeconds > it.StaleAfter) || len(it.Measurements) == 0 {
				t.Errorf("item %+v", it)
			}
		}
		res.Items = nil
		g.checked(t, sc, cat, "latest_in_area", map[string]any{"max_age": "P3650D", "near": map[string]any{"lat": *s0.Latitude, "lon": *s0.Longitude, "radius_km": 1}}).decode(t, &res)
		if len(res.Items) != 1 || res.Items[0].SensorID != s0.ID.String() || res.Items[0].Stale || res.Items[0].StaleAfter != 3650*86400 {
			t.Errorf("near %s with max_age 10 years: %+v", s0.ExternalID, res.Items)
		}
		res.Items = nil
		g.checked(t, sc, cat, "latest_in_area", map[string]any{"limit": 1}).decode(t, &res)
		first := slices.Clone(res.Items)
		res.Items = nil
		g.checked(t, sc, cat, "latest_in_area", map[string]any{"cursor": res.NextCursor}).decode(t, &res)
		if len(first) != 1 || len(res.Items) != 1 || res.Items[0].SensorID == first[0].SensorID {
			t.Errorf("page 2 by cursor: %+v after %+v", res.Items, first)
		}
		for _, tt := range []struct {
			args    map[string]any
			mention string
		}{
			{map[string]any{"max_age": "soon"}, "max_age"},
			{map[string]any{"parameters": []string{"salinity"}}, "parameters"},
			{map[string]any{"near": map[string]any{"lat": 95, "lon": 0}}, "near.lat"},
		} {
			if tr := g.call(t, cat, "latest_in_area", tt.args); !tr.IsError || !strings.Contains(tr.text(), tt.mention) {
				t.Errorf("%v: isError %v %q, want it to name %s", tt.args, tr.IsError, tr.text(), tt.mention)
			}
		}
	})

	t.Run("aggregate_readings", func(t *testing.T) {
		t.Parallel()
		var res struct {
			SensorID string `json:"sensor_id"`
			Interval string `json:"interval"`
			Buckets  []struct {
				Values map[string]map[string]any `json:"values"`
			} `json:"buckets"`
		}
		g.checked(t, sc, cat, "aggregate_readings", map[string]any{"sensor_id": s0.ExternalID, "interval": "1h", "days": 1, "parameters": []string{s0.DataTypes[0]}}).decode(t, &res)
		if res.SensorID != s0.ID.String() || res.Interval != "1h" || len(res.Buckets) < 24 || len(res.Buckets) > 25 {
			t.Fatalf("aggregate: sensor %s interval %s, %d buckets", res.SensorID, res.Interval, len(res.Buckets))
		}
		counted := 0
		for _, b := range res.Buckets {
			for p, v := range b.Values {
				if p != s0.DataTypes[0] {
					t.Errorf("parameter %s kept, asked only %s", p, s0.DataTypes[0])
				}
				if n, _ := v["count"].(float64); n > 0 {
					counted++
				}
			}
		}
		if counted == 0 {
			t.Errorf("no bucket holds a reading")
		}
		// The sensor scope implies the sensor.
		res.SensorID = ""
		g.checked(t, sc, "/api/v1/sensors/"+s0.ID.String()+"/mcp", "aggregate_readings", map[string]any{"interval": "6h", "days": 1}).decode(t, &res)
		if res.SensorID != s0.ID.String() || res.Interval != "6h" {
			t.Errorf("sensor scope aggregate: %s %s", res.SensorID, res.Interval)
		}
		for _, tt := range []struct {
			args    map[string]any
			mention string
		}{
			{map[string]any{"sensor_id": s0.ExternalID, "interval": "2h"}, "interval"},
			{map[string]any{"sensor_id": s0.ExternalID, "interval": "1h", "days": 366}, "interval"},
			{map[string]any{"sensor_id": s0.ExternalID, "tz": "Mars/Olympus"}, "tz"},
			{map[string]any{}, "sensor_id"},
		} {
			if tr := g.call(t, cat, "aggregate_readings", tt.args); !tr.IsError || !strings.Contains(tr.text(), tt.mention) {
				t.Errorf("%v: isError %v %q, want it to name %s", tt.args, tr.IsError, tr.text(), tt.mention)
			}
		}
	})

	t.Run("describe_catalog", func(t *testing.T) {
		t.Parallel()
		var d struct {
			Services []struct {
				ID          string `json:"id"`
				SensorCount int    `json:"sensor_count"`
			} `json:"services"`
			Providers  []struct{ Slug string } `json:"providers"`
			Parameters []struct {
				ID, Unit    string
				SensorCount int `json:"sensor_count"`
			} `json:"parameters"`
			SensorTypes []struct {
				SensorType string `json:"sensor_type"`
				Count      int    `json:"count"`
			} `json:"sensor_types"`
			TotalSensors int `json:"total_sensors"`
		}
		g.checked(t, sc, cat, "describe_catalog", map[string]any{}).decode(t, &d)
		if len(d.Services) != 1 || d.Services[0].ID != "ocean" || d.Services[0].SensorCount != len(g.Sensors) || d.TotalSensors != len(g.Sensors) {
			t.Errorf("services %+v, total %d, want ocean with %d sensors", d.Services, d.TotalSensors, len(g.Sensors))
		}
		if len(d.Parameters) != len(canon.Parameters()) {
			t.Errorf("%d parameters, want %d", len(d.Parameters), len(canon.Parameters()))
		}
		for _, p := range d.Parameters {
			c, ok := canon.Lookup(p.ID)
			if !ok || c.Unit != p.Unit {
				t.Errorf("parameter %+v does not match canon", p)
			}
			if p.ID == canon.WaterTemperatureC && p.SensorCount == 0 {
				t.Errorf("no sensor counted for %s", p.ID)
			}
		}
		if len(d.Providers) == 0 || len(d.SensorTypes) == 0 {
			t.Errorf("providers %v, sensor types %v", d.Providers, d.SensorTypes)
		}
		tr := g.call(t, cat, "describe_catalog", map[string]any{"verbose": true})
		if !tr.IsError || !strings.Contains(tr.text(), `"verbose"`) {
			t.Errorf("unknown argument accepted: %+v", tr)
		}
	})

	t.Run("search_sensors pages by cursor", func(t *testing.T) {
		t.Parallel()
		var seen []string
		args := map[string]any{"service_id": "ocean", "limit": 1}
		for page := 0; page < 20; page++ {
			var res struct {
				Sensors []struct {
					ID        string `json:"id"`
					Freshness struct {
						ReportingIntervalS int `json:"reporting_interval_s"`
					} `json:"freshness"`
				} `json:"sensors"`
				Units      map[string]string `json:"units"`
				Total      int               `json:"total"`
				NextCursor string            `json:"nextCursor"`
			}
			g.checked(t, sc, cat, "search_sensors", args).decode(t, &res)
			for _, d := range g.Sensors[page].DataTypes {
				if c, _ := canon.Lookup(d); res.Units[d] != c.Unit {
					t.Errorf("units %v lack %s in %s", res.Units, d, c.Unit)
				}
			}
			if res.Total != len(g.Sensors) || len(res.Sensors) != 1 {
				t.Fatalf("page %d: total %d, %d sensors", page, res.Total, len(res.Sensors))
			}
			seen = append(seen, res.Sensors[0].ID)
			if res.NextCursor == "" {
				break
			}
			args = map[string]any{"service_id": "ocean", "cursor": res.NextCursor}
		}
		var want []string
		for _, s := range g.Sensors {
			want = append(want, s.ID.String())
		}
		if !slices.Equal(seen, want) {
			t.Errorf("paged through %v, want %v", seen, want)
		}
	})

	t.Run("search_sensors filters and errors", func(t *testing.T) {
		t.Parallel()
		if s0.Latitude == nil {
			t.Skip("the first simulated sensor has no location")
		}
		var res struct {
			Sensors []struct {
				ID         string   `json:"id"`
				DistanceKM *float64 `json:"distance_km"`
			} `json:"sensors"`
		}
		g.checked(t, sc, cat, "search_sensors", map[string]any{
			"near": map[string]any{"lat": *s0.Latitude, "lon": *s0.Longitude, "radius_km": 1}, "sort": "distance",
			"data_types": []string{s0.DataTypes[0]},
		}).decode(t, &res)
		if len(res.Sensors) == 0 || res.Sensors[0].ID != s0.ID.String() || res.Sensors[0].DistanceKM == nil {
			t.Errorf("radius search around %s: %+v", s0.ExternalID, res.Sensors)
		}
		first := g.call(t, cat, "search_sensors", map[string]any{"limit": 1})
		var p1 struct{ NextCursor string }
		first.decode(t, &p1)
		for _, tt := range []struct {
			name    string
			args    map[string]any
			mention string
		}{
			{"cursor with other filters", map[string]any{"cursor": p1.NextCursor, "status": "inactive"}, "cursor"},
			{"forged cursor", map[string]any{"cursor": "bm9wZQ"}, "cursor"},
			{"unknown parameter", map[string]any{"data_types": []string{"temperature"}}, "data_types"},
			{"latitude out of range", map[string]any{"near": map[string]any{"lat": 91, "lon": 0}}, "near.lat"},
			{"limit below 1", map[string]any{"limit": 0}, "limit"},
			{"wrong type", map[string]any{"limit": "ten"}, "limit"},
			{"distance without near", map[string]any{"sort": "distance"}, "sort"},
			{"unknown feed", map[string]any{"feed": "nosuch"}, "nosuch"},
		} {
			tr := g.call(t, cat, "search_sensors", tt.args)
			if !tr.IsError || !strings.Contains(tr.text(), tt.mention) {
				t.Errorf("%s: isError %v, text %q, want it to name %q", tt.name, tr.IsError, tr.text(), tt.mention)
			}
		}
		// A limit over the sensor-list maximum is clamped, as REST clamps it.
		var clamped struct {
			Limit int `json:"limit"`
		}
		g.checked(t, sc, cat, "search_sensors", map[string]any{"limit": 5000}).decode(t, &clamped)
		if clamped.Limit != 1000 {
			t.Errorf("limit 5000: applied %d, want 1000", clamped.Limit)
		}
	})

	t.Run("get_readings", func(t *testing.T) {
		t.Parallel()
		type reading struct {
			Timestamp    string `json:"timestamp"`
			AgeSeconds   int64  `json:"age_seconds"`
			Measurements []struct {
				Parameter string  `json:"parameter"`
				Value     float64 `json:"value"`
				Unit      string  `json:"unit"`
			} `json:"measurements"`
		}
		var res struct {
			Sensor struct {
				ID string `json:"id"`
			} `json:"sensor"`
			Units      map[string]string `json:"units"`
			Readings   []reading         `json:"readings"`
			Total      int               `json:"total"`
			NextCursor string            `json:"nextCursor"`
			Freshness  struct {
				LastReadingAt *string `json:"last_reading_at"`
				AgeSeconds    *int64  `json:"age_seconds"`
				Stale         *bool   `json:"stale"`
			} `json:"freshness"`
			Provenance struct {
				SensorID  string `json:"sensor_id"`
				ServiceID string `json:"service_id"`
				SourceID  string `json:"source_id"`
			} `json:"provenance"`
		}
		g.checked(t, sc, cat, "get_readings", map[string]any{"sensor_id": s0.ExternalID, "limit": 3}).decode(t, &res)
		if res.Sensor.ID != s0.ID.String() || len(res.Readings) != 3 || res.Total < 3 {
			t.Fatalf("sensor %s, %d readings of %d", res.Sensor.ID, len(res.Readings), res.Total)
		}
		if res.Provenance.SensorID != s0.ID.String() || res.Provenance.ServiceID != "ocean" || !strings.EqualFold(res.Provenance.SourceID, s0.ExternalID) {
			t.Errorf("provenance %+v", res.Provenance)
		}
		if res.Freshness.AgeSeconds == nil || res.Freshness.Stale == nil || *res.Freshness.LastReadingAt != res.Readings[0].Timestamp {
			t.Errorf("freshness %+v, newest reading %s", res.Freshness, res.Readings[0].Timestamp)
		}
		for _, r := range res.Readings {
			for _, m := range r.Measurements {
				c, _ := canon.Lookup(m.Parameter)
				if m.Unit != c.Unit || res.Units[m.Parameter] != c.Unit {
					t.Errorf("%s in %q, units map %q, canonical %q", m.Parameter, m.Unit, res.Units[m.Parameter], c.Unit)
				}
			}
		}
		page1 := res.Readings
		next := res.NextCursor
		res.Readings, res.NextCursor = nil, ""
		g.checked(t, sc, cat, "get_readings", map[string]any{"sensor_id": s0.ExternalID, "cursor": next}).decode(t, &res)
		if len(res.Readings) != 3 || res.Readings[0].Timestamp >= page1[2].Timestamp {
			t.Errorf("page 2 starts at %v after page 1 ended at %s", res.Readings, page1[2].Timestamp)
		}
		// One parameter, oldest first, in a time range.
		param := s0.DataTypes[0]
		since := time.Now().UTC().Add(-24 * time.Hour).Format(time.RFC3339)
		res.Readings = nil
		g.checked(t, sc, cat, "get_readings", map[string]any{"sensor_id": s0.ID.String(), "parameters": []string{param}, "sort": "asc", "since": since, "limit": 5}).decode(t, &res)
		if len(res.Readings) == 0 {
			t.Fatalf("no readings of %s since %s", param, since)
		}
		// The deprecated name order still works for one release and answers alike.
		var legacy struct {
			Readings []reading `json:"readings"`
		}
		g.checked(t, sc, cat, "get_readings", map[string]any{"sensor_id": s0.ID.String(), "parameters": []string{param}, "order": "asc", "since": since, "limit": 5}).decode(t, &legacy)
		if len(legacy.Readings) != len(res.Readings) || legacy.Readings[0].Timestamp != res.Readings[0].Timestamp {
			t.Errorf("order=asc gave %d readings from %v, sort=asc %d from %s", len(legacy.Readings), legacy.Readings, len(res.Readings), res.Readings[0].Timestamp)
		}
		for i, r := range res.Readings {
			if len(r.Measurements) != 1 {
				t.Errorf("reading %s has %d measurements, asked only %s", r.Timestamp, len(r.Measurements), param)
			}
			for _, m := range r.Measurements {
				if m.Parameter != param {
					t.Errorf("parameter %s kept, asked only %s", m.Parameter, param)
				}
			}
			if r.Timestamp < since || (i > 0 && r.Timestamp < res.Readings[i-1].Timestamp) {
				t.Errorf("reading %s out of range or order", r.Timestamp)
			}
		}
		if res.Units[param] == "" {
			t.Errorf("units lack %s: %v", param, res.Units)
		}
		var raw struct {
			Units    map[string]string `json:"units"`
			Readings []struct {
				Raw          json.RawMessage `json:"raw"`
				SourceFormat string          `json:"source_format"`
				Measurements []any           `json:"measurements"`
			} `json:"readings"`
		}
		g.checked(t, sc, cat, "get_readings", map[string]any{"sensor_id": s0.ExternalID, "data_format": "raw", "limit": 2}).decode(t, &raw)
		if len(raw.Readings) != 2 || len(raw.Readings[0].Raw) == 0 || raw.Readings[0].SourceFormat == "" || raw.Readings[0].Measurements != nil || len(raw.Units) != len(s0.DataTypes) {
			t.Errorf("raw readings: %+v", raw)
		}
		for _, tt := range []struct {
			name    string
			args    map[string]any
			mention string
		}{
			{"bad data_format", map[string]any{"sensor_id": s0.ExternalID, "data_format": "csv"}, "data_format"},
			{"no sensor", map[string]any{}, "sensor_id"},
			{"unknown sensor", map[string]any{"sensor_id": "NOSUCH"}, "not found"},
			{"days with since", map[string]any{"sensor_id": s0.ExternalID, "days": 1, "since": "2026-01-01"}, "days"},
			{"bad since", map[string]any{"sensor_id": s0.ExternalID, "since": "yesterday"}, "since"},
			{"unknown parameter", map[string]any{"sensor_id": s0.ExternalID, "parameters": []string{"foo"}}, "parameters"},
			{"limit below 1", map[string]any{"sensor_id": s0.ExternalID, "limit": 0}, "limit"},
			{"order and sort disagree", map[string]any{"sensor_id": s0.ExternalID, "order": "asc", "sort": "desc"}, "order"},
		} {
			tr := g.call(t, cat, "get_readings", tt.args)
			if !tr.IsError || !strings.Contains(tr.text(), tt.mention) {
				t.Errorf("%s: isError %v, text %q, want it to name %q", tt.name, tr.IsError, tr.text(), tt.mention)
			}
		}
		// A limit over the readings maximum is clamped, as REST clamps it.
		var clamped struct {
			Count int `json:"count"`
			Total int `json:"total"`
		}
		g.checked(t, sc, cat, "get_readings", map[string]any{"sensor_id": s0.ExternalID, "limit": 501}).decode(t, &clamped)
		if clamped.Count != min(clamped.Total, 500) {
			t.Errorf("limit 501: %d readings of %d, want at most 500", clamped.Count, clamped.Total)
		}
	})

	t.Run("describe_sensor", func(t *testing.T) {
		t.Parallel()
		for _, id := range []string{s0.ID.String(), s0.ExternalID} {
			var d struct {
				Sensor struct {
					ID               string `json:"id"`
					ConnectedService string `json:"connected_service"`
				} `json:"sensor"`
				Parameters []struct{ ID, Unit string } `json:"parameters"`
				Latest     *struct {
					Timestamp string `json:"timestamp"`
				} `json:"latest"`
				Provenance *struct {
					SensorID string `json:"sensor_id"`
				} `json:"provenance"`
				Freshness struct {
					AgeSeconds *int64 `json:"age_seconds"`
				} `json:"freshness"`
			}
			g.checked(t, sc, cat, "describe_sensor", map[string]any{"sensor_id": id}).decode(t, &d)
			if d.Sensor.ID != s0.ID.String() || d.Sensor.ConnectedService != "ocean" || len(d.Parameters) != len(s0.DataTypes) {
				t.Errorf("describe_sensor(%s): %+v", id, d)
			}
			if d.Latest == nil || d.Provenance == nil || d.Provenance.SensorID != s0.ID.String() || d.Freshness.AgeSeconds == nil {
				t.Errorf("describe_sensor(%s): latest %v provenance %v", id, d.Latest, d.Provenance)
			}
		}
	})

	t.Run("registry list_sensors", func(t *testing.T) {
		t.Parallel()
		var res struct {
			Sensors []struct {
				ID               string  `json:"id"`
				ConnectedService string  `json:"connected_service"`
				FeedID           *string `json:"feed_id"`
			} `json:"sensors"`
			Pagination struct{ Page, Limit, Total, TotalPages int } `json:"pagination"`
		}
		g.checked(t, sc, reg, "list_sensors", map[string]any{}).decode(t, &res)
		if res.Pagination.Total != len(g.Sensors) || res.Pagination.Limit != 20 || len(res.Sensors) != len(g.Sensors) {
			t.Errorf("list_sensors: %+v", res.Pagination)
		}
		for _, s := range res.Sensors {
			if s.ConnectedService != "ocean" || s.FeedID == nil {
				t.Errorf("registry view %+v lacks connected_service or feed_id", s)
			}
		}
		// Legacy clients send numbers as strings and data_types comma-separated.
		g.checked(t, sc, reg, "list_sensors", map[string]any{"limit": "1", "page": "2", "data_types": s0.DataTypes[0] + ",aqi"}).decode(t, &res)
		if res.Pagination.Page != 2 || res.Pagination.Limit != 1 || len(res.Sensors) != 1 || res.Sensors[0].ID != g.Sensors[1].ID.String() {
			t.Errorf("page 2 of 1: %+v %+v", res.Pagination, res.Sensors)
		}
		// The same page by cursor (the vocabulary of every scope); page still works.
		var byCursor struct {
			Sensors []struct {
				ID string `json:"id"`
			} `json:"sensors"`
			Pagination struct{ Page int } `json:"pagination"`
			NextCursor string             `json:"nextCursor"`
		}
		g.checked(t, sc, reg, "list_sensors", map[string]any{"limit": 1, "data_types": s0.DataTypes[0] + ",aqi"}).decode(t, &byCursor)
		g.checked(t, sc, reg, "list_sensors", map[string]any{"cursor": byCursor.NextCursor, "data_types": s0.DataTypes[0] + ",aqi"}).decode(t, &byCursor)
		if byCursor.Pagination.Page != 2 || len(byCursor.Sensors) != 1 || byCursor.Sensors[0].ID != g.Sensors[1].ID.String() {
			t.Errorf("page 2 by cursor: %+v", byCursor)
		}
		if s0.Latitude != nil {
			g.checked(t, sc, reg, "list_sensors", map[string]any{"latitude": *s0.Latitude, "longitude": *s0.Longitude, "radius_km": 1}).decode(t, &res)
			if len(res.Sensors) == 0 || res.Sensors[0].ID != s0.ID.String() {
				t.Errorf("radius: %+v", res.Sensors)
			}
		}
		tr := g.call(t, reg, "list_sensors", map[string]any{"latitude": 10})
		if !tr.IsError || !strings.Contains(tr.text(), "longitude") {
			t.Errorf("latitude alone: %q", tr.text())
		}
	})

	t.Run("registry sensor_connected_services", func(t *testing.T) {
		t.Parallel()
		for _, args := range []map[string]any{{"sensor_id": s0.ID.String()}, {"sensor_id": s0.ExternalID}, {"feed_id": s0.FeedSlug}, {"feed_id": s0.FeedID.String()}} {
			var res struct {
				ConnectedService string                              `json:"connected_service"`
				Services         []struct{ ID, Name, Domain string } `json:"services"`
			}
			g.checked(t, sc, reg, "sensor_connected_services", args).decode(t, &res)
			if res.ConnectedService != "ocean" || len(res.Services) != 1 || res.Services[0].ID != "ocean" {
				t.Errorf("%v: %+v", args, res)
			}
		}
		for _, args := range []map[string]any{{}, {"sensor_id": s0.ExternalID, "feed_id": s0.FeedSlug}, {"feed_id": "nosuch"}} {
			if tr := g.call(t, reg, "sensor_connected_services", args); !tr.IsError {
				t.Errorf("%v accepted", args)
			}
		}
	})

	t.Run("registry sensor_cleaned_stream", func(t *testing.T) {
		t.Parallel()
		var one struct {
			SensorID string `json:"sensor_id"`
			Readings []struct {
				Measurements []struct{ Parameter, Unit string } `json:"measurements"`
			} `json:"readings"`
		}
		g.checked(t, sc, reg, "sensor_cleaned_stream", map[string]any{"sensor_id": s0.ExternalID, "limit": 3, "days": 2}).decode(t, &one)
		if one.SensorID != s0.ID.String() || len(one.Readings) != 3 || len(one.Readings[0].Measurements) == 0 {
			t.Errorf("cleaned stream: %+v", one)
		}
		var raw struct {
			Readings []struct {
				Raw          json.RawMessage `json:"raw"`
				SourceFormat string          `json:"source_format"`
			} `json:"readings"`
		}
		g.checked(t, sc, reg, "sensor_cleaned_stream", map[string]any{"sensor_id": s0.ID.String(), "limit": 1, "data_format": "raw"}).decode(t, &raw)
		if len(raw.Readings) != 1 || len(raw.Readings[0].Raw) == 0 || raw.Readings[0].SourceFormat == "" {
			t.Errorf("raw stream: %+v", raw)
		}
		var feed struct {
			FeedSlug string `json:"feed_slug"`
			Streams  []struct {
				SensorID string            `json:"sensor_id"`
				Readings []json.RawMessage `json:"readings"`
			} `json:"streams"`
		}
		g.checked(t, sc, reg, "sensor_cleaned_stream", map[string]any{"feed_id": s0.FeedSlug, "limit": 2}).decode(t, &feed)
		if feed.FeedSlug != s0.FeedSlug || len(feed.Streams) == 0 || len(feed.Streams[0].Readings) != 2 {
			t.Errorf("feed stream: %+v", feed)
		}
	})

	t.Run("registry sensor_last_reading", func(t *testing.T) {
		t.Parallel()
		for _, args := range []map[string]any{{"sensor_id": s0.ExternalID}, {"feed_id": s0.FeedSlug}} {
			var res struct {
				SensorID     string             `json:"sensor_id"`
				Timestamp    string             `json:"timestamp"`
				Measurements map[string]float64 `json:"measurements"`
				Units        map[string]string  `json:"units"`
				Location     *struct {
					Type        string     `json:"type"`
					Coordinates [2]float64 `json:"coordinates"`
				} `json:"location"`
			}
			g.checked(t, sc, reg, "sensor_last_reading", args).decode(t, &res)
			if res.Timestamp == "" || len(res.Measurements) == 0 || len(res.Units) != len(res.Measurements) {
				t.Errorf("%v: %+v", args, res)
			}
			if _, err := time.Parse("2006-01-02T15:04:05.000Z", res.Timestamp); err != nil {
				t.Errorf("timestamp %q: %v", res.Timestamp, err)
			}
		}
	})
}
