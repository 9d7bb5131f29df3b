package tools_test

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/services/runtime/store"
	"github.com/sensorgate/sensorgate/services/tools"
)

func TestToolsListHasSchemas(t *testing.T) {
	t.Parallel()
	cases := []struct {
		service string
		domain  string
	}{
		{"ocean", "sea_state"},
		{"weather", "current_conditions"},
		{"airquality", "aqi"},
	}
	for _, c := range cases {
		t.Run(c.service, func(t *testing.T) {
			t.Parallel()
			cs := sdkSession(t, serve(t, c.service))
			res, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				in, _ := tool.InputSchema.(map[string]any)
				out, _ := tool.OutputSchema.(map[string]any)
				if in["type"] != "object" || out["type"] != "object" || tool.Description == "" {
					t.Errorf("%s: input schema %v, output schema type %v, description %q", tool.Name, in["type"], out["type"], tool.Description)
				}
				if props, _ := out["properties"].(map[string]any); props["provenance"] == nil && props["pagination"] == nil {
					t.Errorf("%s: output schema has neither provenance nor pagination", tool.Name)
				}
				if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
					t.Errorf("%s: not annotated read-only", tool.Name)
				}
			}
			want := tools.Names(tools.Config{ServiceID: c.service})
			slices.Sort(names)
			slices.Sort(want)
			if !slices.Equal(names, want) || !slices.Contains(names, c.service+"."+c.domain) {
				t.Errorf("tools = %v, want %v including %s.%s", names, want, c.service, c.domain)
			}
		})
	}
}

func TestLatestObservation(t *testing.T) {
	t.Parallel()
	cs := sdkSession(t, serve(t, "ocean", oceanFixture(t)...))
	sensor := ids.Sensor("ocean", "41002").String()
	cases := []struct {
		name       string
		args, meta map[string]any
		wantParams int    // measurements expected (0: don't check)
		wantErr    string // substring of the isError message
	}{
		{name: "by argument", args: map[string]any{"sensor_id": "41002"}, wantParams: 5},
		{name: "by the deprecated station_id", args: map[string]any{"station_id": "41002"}, wantParams: 5},
		{name: "sensor_id and station_id agree", args: map[string]any{"sensor_id": "41002", "station_id": "41002"}, wantParams: 5},
		{name: "sensor_id and station_id disagree", args: map[string]any{"sensor_id": "41002", "station_id": "TPLM2"}, wantErr: "station_id is the deprecated name of sensor_id"},
		{name: "unknown sensor_id", args: map[string]any{"sensor_id": "NOPE1"}, wantErr: `station "NOPE1" (from sensor_id) not found in service "ocean"`},
		{name: "sensor UUID as sensor_id", args: map[string]any{"sensor_id": sensor}, wantParams: 5},
		{name: "null arguments are omitted", args: map[string]any{"station_id": nil, "parameters": nil}, meta: map[string]any{"sensor_external_id": "41002"}, wantParams: 5},
		{name: "empty arguments use the injected external id", meta: map[string]any{"sensor_external_id": "41002", "sensor_name": "South Hatteras"}, wantParams: 5},
		{name: "injected sensor id alone", meta: map[string]any{"sensor_id": sensor}, wantParams: 5},
		{name: "sensor UUID as argument", args: map[string]any{"station_id": sensor}, wantParams: 5},
		{name: "argument wins over context", args: map[string]any{"station_id": "41002"}, meta: map[string]any{"sensor_external_id": "TPLM2"}, wantParams: 5},
		{name: "parameters filter", args: map[string]any{"station_id": "41002", "parameters": []string{"wind_speed_ms", "wave_height_m"}}, wantParams: 1},
		{name: "unknown station", args: map[string]any{"station_id": "NOPE1"}, wantErr: `station "NOPE1" (from station_id) not found in service "ocean"`},
		{name: "unknown injected station", meta: map[string]any{"sensor_external_id": "GHOST"}, wantErr: `station "GHOST" (from params._meta.sensor_external_id) not found`},
		{name: "no station at all", wantErr: "no station given: pass sensor_id"},
		{name: "station without readings", args: map[string]any{"station_id": "NOREAD"}, wantErr: `station "NOREAD" (Never reported) of service "ocean" has no readings yet`},
		{name: "invalid station id", args: map[string]any{"station_id": "../etc"}, wantErr: `station_id "../etc" is not a valid station id`},
		{name: "unknown parameter", args: map[string]any{"station_id": "41002", "parameters": []string{"salinity"}}, wantErr: "salinity"},
		{name: "qc filter keeps good values", args: map[string]any{"station_id": "41002", "qc": "good"}, wantParams: 5},
		{name: "bad qc filter", args: map[string]any{"station_id": "41002", "qc": "7"}, wantErr: `"qc"`},
		{name: "unknown argument", args: map[string]any{"station": "41002"}, wantErr: `unexpected additional properties ["station"]`},
		{name: "wrong argument type", args: map[string]any{"station_id": 41002}, wantErr: "station_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var out tools.LatestObservation
			res := call(t, cs, "ocean.latest_observation", c.args, c.meta, &out)
			if c.wantErr != "" {
				if !res.IsError || !strings.Contains(text(res), c.wantErr) {
					t.Fatalf("isError=%v %q, want an error containing %q", res.IsError, text(res), c.wantErr)
				}
				checkToolError(t, res)
				return
			}
			if res.IsError {
				t.Fatalf("unexpected tool error: %s", text(res))
			}
			if out.Station.ExternalID != "41002" || out.Station.SensorID != sensor || out.Station.ServiceID != "ocean" {
				t.Errorf("station = %+v", out.Station)
			}
			if out.Timestamp != "2026-11-21T11:50:00.000Z" || out.AgeSeconds != 600 || out.Stale ||
				out.ReportingIntervalS != 600 || out.StaleAfterS != 1200 {
				t.Errorf("freshness = %+v, want 11:50 age 600 fresh interval 600 stale after 1200", out.Freshness)
			}
			if p := out.Provenance; p.SensorID != sensor || p.ServiceID != "ocean" || p.SourceID != "41002" || p.Provider != "ndbc" || p.FetchedAt == "" {
				t.Errorf("provenance = %+v", p)
			}
			if out.ReadingID != ids.Reading(ids.Sensor("ocean", "41002"), now.Add(-600e9)).String() {
				t.Errorf("reading_id = %s", out.ReadingID)
			}
			if len(out.Measurements) != c.wantParams {
				t.Fatalf("measurements = %+v, want %d", out.Measurements, c.wantParams)
			}
			units := map[string]string{"wind_speed_ms": "m/s", "wind_direction_deg": "degrees", "water_temperature_c": "celsius", "air_temperature_c": "celsius", "air_pressure_hpa": "hPa"}
			for _, m := range out.Measurements {
				if units[m.Parameter] != m.Unit || m.Meaning == "" || m.QC == nil {
					t.Errorf("measurement %+v: want unit %q, a meaning and a qc", m, units[m.Parameter])
				}
				if !strings.Contains(text(res), m.Parameter) {
					t.Errorf("text rendering lacks %s:\n%s", m.Parameter, text(res))
				}
			}
			if out.Location == nil || out.Location.Latitude != lat41002 || out.Location.Longitude != lon41002 {
				t.Errorf("location = %+v", out.Location)
			}
		})
	}
}

func TestObservations(t *testing.T) {
	t.Parallel()
	cs := sdkSession(t, serve(t, "ocean", oceanFixture(t)...))
	cases := []struct {
		name      string
		args      map[string]any
		meta      map[string]any
		wantN     int
		wantTotal int
		first     string // timestamp of the first reading
		pages     int
		wantErr   string
	}{
		{name: "all, newest first", args: map[string]any{"station_id": "41002"}, wantN: 25, wantTotal: 25, first: "2026-11-21T11:50:00.000Z", pages: 1},
		{name: "range is since-inclusive until-exclusive", args: map[string]any{"station_id": "41002", "since": "2026-11-21T10:00:00Z", "until": "2026-11-21T11:00:00Z"},
			wantN: 6, wantTotal: 6, first: "2026-11-21T10:50:00.000Z", pages: 1},
		{name: "ascending second page", args: map[string]any{"station_id": "41002", "sort": "asc", "limit": 10, "page": 2}, wantN: 10, wantTotal: 25, first: "2026-11-21T09:30:00.000Z", pages: 3},
		{name: "page beyond the end is empty with the true total", args: map[string]any{"station_id": "41002", "limit": 10, "page": 9}, wantN: 0, wantTotal: 25, pages: 3},
		{name: "days", args: map[string]any{"station_id": "41002", "days": 0.125}, wantN: 18, wantTotal: 18, first: "2026-11-21T11:50:00.000Z", pages: 1},
		{name: "limit above 500 is clamped", args: map[string]any{"station_id": "41002", "limit": 5000}, wantN: 25, wantTotal: 25, first: "2026-11-21T11:50:00.000Z", pages: 1},
		{name: "context station", meta: map[string]any{"sensor_external_id": "TPLM2"}, wantN: 6, wantTotal: 6, first: "2026-11-21T11:00:00.000Z", pages: 1},
		{name: "days with since", args: map[string]any{"station_id": "41002", "days": 1, "since": "2026-11-20"}, wantErr: `invalid argument "days": cannot be combined with since`},
		{name: "bad since", args: map[string]any{"station_id": "41002", "since": "yesterday"}, wantErr: `invalid argument "since"`},
		{name: "until before since", args: map[string]any{"station_id": "41002", "since": "2026-11-21", "until": "2026-11-20"}, wantErr: `invalid argument "until": must be after since`},
		{name: "bad sort", args: map[string]any{"station_id": "41002", "sort": "up"}, wantErr: "sort"},
		{name: "zero limit", args: map[string]any{"station_id": "41002", "limit": 0}, wantErr: "limit"},
		{name: "unknown station", args: map[string]any{"station_id": "ZZZZZ"}, wantErr: `station "ZZZZZ" (from station_id) not found`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var out tools.Observations
			res := call(t, cs, "ocean.observations", c.args, c.meta, &out)
			if c.wantErr != "" {
				if !res.IsError || !strings.Contains(text(res), c.wantErr) {
					t.Fatalf("isError=%v %q, want an error containing %q", res.IsError, text(res), c.wantErr)
				}
				checkToolError(t, res)
				return
			}
			if res.IsError {
				t.Fatalf("unexpected tool error: %s", text(res))
			}
			if len(out.Readings) != c.wantN || out.Pagination.Total != c.wantTotal || out.Pagination.TotalPages != c.pages {
				t.Fatalf("%d readings, pagination %+v; want %d of %d in %d pages", len(out.Readings), out.Pagination, c.wantN, c.wantTotal, c.pages)
			}
			if c.wantN > 0 && out.Readings[0].Timestamp != c.first {
				t.Errorf("first reading at %s, want %s", out.Readings[0].Timestamp, c.first)
			}
			if c.wantN > 0 && (out.Newest == nil || out.Units["air_pressure_hpa"] != "hPa") {
				t.Errorf("newest = %+v, units = %v", out.Newest, out.Units)
			}
			if out.Provenance.ServiceID != "ocean" || out.Provenance.SourceID != out.Station.ExternalID {
				t.Errorf("provenance = %+v", out.Provenance)
			}
		})
	}

	t.Run("parameter filter", func(t *testing.T) {
		t.Parallel()
		var out tools.Observations
		res := call(t, cs, "ocean.observations", map[string]any{"station_id": "41002", "parameters": []string{"wave_height_m"}, "limit": 7}, nil, &out)
		if res.IsError {
			t.Fatal(text(res))
		}
		withWaves := 0
		for _, r := range out.Readings {
			for _, m := range r.Measurements {
				if m.Parameter != "wave_height_m" || m.Unit != "m" || m.Value != 1.8 {
					t.Errorf("measurement %+v survived the filter", m)
				}
				withWaves++
			}
		}
		// Seven newest readings span 10:50..11:50; only 10:50 has waves.
		if withWaves != 1 || len(out.Units) != 1 {
			t.Errorf("%d wave values, units %v; want 1 and only wave_height_m", withWaves, out.Units)
		}
	})
}

// TestCursorPaging walks observations and list_stations by cursor (the vocabulary of
// every MCP scope and REST), and shows that the deprecated page still works alike.
func TestCursorPaging(t *testing.T) {
	t.Parallel()
	cs := sdkSession(t, serve(t, "ocean", oceanFixture(t)...))
	seen := map[string]bool{}
	args := map[string]any{"sensor_id": "41002", "sort": "asc", "limit": 10}
	var pages int
	for cursor := ""; ; pages++ {
		a := map[string]any{"sensor_id": "41002", "sort": "asc"}
		if cursor == "" {
			a = args
		} else {
			a["cursor"] = cursor
		}
		var out tools.Observations
		if res := call(t, cs, "ocean.observations", a, nil, &out); res.IsError {
			t.Fatalf("page %d: %s", pages+1, text(res))
		}
		for _, r := range out.Readings {
			if seen[r.Timestamp] {
				t.Errorf("reading %s on two pages", r.Timestamp)
			}
			seen[r.Timestamp] = true
		}
		if pages == 1 {
			// The deprecated page=2 gives the same page.
			var legacy tools.Observations
			call(t, cs, "ocean.observations", map[string]any{"station_id": "41002", "sort": "asc", "limit": 10, "page": 2}, nil, &legacy)
			if len(legacy.Readings) != len(out.Readings) || legacy.Readings[0].Timestamp != out.Readings[0].Timestamp {
				t.Errorf("page=2 starts at %v, cursor page 2 at %v", legacy.Readings, out.Readings)
			}
			if res := call(t, cs, "ocean.observations", map[string]any{"sensor_id": "41002", "sort": "desc", "cursor": cursor}, nil, nil); !res.IsError || !strings.Contains(text(res), "cursor") {
				t.Errorf("cursor with other arguments: %s", text(res))
			}
			if res := call(t, cs, "ocean.observations", map[string]any{"sensor_id": "41002", "sort": "asc", "cursor": cursor, "page": 2}, nil, nil); !res.IsError || !strings.Contains(text(res), "page") {
				t.Errorf("cursor with page: %s", text(res))
			}
		}
		if out.NextCursor == "" {
			break
		}
		cursor = out.NextCursor
	}
	if pages != 2 || len(seen) != 25 {
		t.Errorf("%d pages after the first, %d distinct readings; want 2 and 25", pages, len(seen))
	}
	var first, second tools.StationList
	call(t, cs, "ocean.list_stations", map[string]any{"limit": 2}, nil, &first)
	call(t, cs, "ocean.list_stations", map[string]any{"cursor": first.NextCursor}, nil, &second)
	if len(second.Stations) != 1 || second.Stations[0].ExternalID != "TPLM2" || second.NextCursor != "" || second.Pagination.Page != 2 {
		t.Errorf("list_stations page 2 by cursor: %+v", second)
	}
}

func TestListStations(t *testing.T) {
	t.Parallel()
	cs := sdkSession(t, serve(t, "ocean", oceanFixture(t)...))
	oneDegreeKM := tools.EarthRadiusKM * math.Pi / 180
	cases := []struct {
		name    string
		args    map[string]any
		meta    map[string]any
		want    []string
		total   int
		wantErr string
	}{
		{name: "all by name", want: []string{"NOREAD", "41002", "TPLM2"}, total: 3},
		{name: "search", args: map[string]any{"search": "hatteras"}, want: []string{"41002"}, total: 1},
		{name: "sensor type", args: map[string]any{"sensor_type": "buoy"}, want: []string{"NOREAD", "41002"}, total: 2},
		{name: "data type", args: map[string]any{"data_type": "wave_height_m"}, want: []string{"41002"}, total: 1},
		{name: "near a point, nearest first", args: map[string]any{"latitude": lat41002 + 1, "longitude": lon41002, "radius_km": 1500}, want: []string{"41002", "TPLM2"}, total: 2},
		{name: "radius excludes", args: map[string]any{"latitude": lat41002 + 1, "longitude": lon41002, "radius_km": 111}, want: []string{}, total: 0},
		{name: "default radius 50 km", args: map[string]any{"latitude": latTPLM2, "longitude": lonTPLM2}, want: []string{"TPLM2"}, total: 1},
		{name: "paging", args: map[string]any{"limit": 2, "page": 2}, want: []string{"TPLM2"}, total: 3},
		{name: "feed from context", meta: map[string]any{"feed_slug": "ndbc-realtime"}, want: []string{"NOREAD", "41002", "TPLM2"}, total: 3},
		{name: "unknown feed from context", meta: map[string]any{"feed_slug": "other"}, want: []string{}, total: 0},
		{name: "latitude without longitude", args: map[string]any{"latitude": 30}, wantErr: "latitude given without longitude"},
		{name: "radius alone", args: map[string]any{"radius_km": 30}, wantErr: "radius_km given without latitude and longitude"},
		{name: "latitude out of range", args: map[string]any{"latitude": 91, "longitude": 0}, wantErr: "latitude"},
		{name: "unknown data type", args: map[string]any{"data_type": "salinity"}, wantErr: "data_type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var out tools.StationList
			res := call(t, cs, "ocean.list_stations", c.args, c.meta, &out)
			if c.wantErr != "" {
				if !res.IsError || !strings.Contains(text(res), c.wantErr) {
					t.Fatalf("isError=%v %q, want an error containing %q", res.IsError, text(res), c.wantErr)
				}
				checkToolError(t, res)
				return
			}
			if res.IsError {
				t.Fatalf("unexpected tool error: %s", text(res))
			}
			got := []string{}
			for _, s := range out.Stations {
				got = append(got, s.ExternalID)
				if s.SensorID != ids.Sensor("ocean", s.ExternalID).String() {
					t.Errorf("%s: sensor_id %s", s.ExternalID, s.SensorID)
				}
			}
			if !slices.Equal(got, c.want) || out.Pagination.Total != c.total {
				t.Fatalf("stations %v total %d, want %v total %d", got, out.Pagination.Total, c.want, c.total)
			}
			if c.name == "near a point, nearest first" {
				if d := *out.Stations[0].DistanceKM; math.Abs(d-oneDegreeKM) > 0.01 {
					t.Errorf("distance to 41002 = %v km, want %v (one degree of latitude)", d, oneDegreeKM)
				}
				if out.Filters.OrderedBy != "distance" {
					t.Errorf("ordered_by = %s", out.Filters.OrderedBy)
				}
			}
			if c.meta != nil && out.Filters.FeedFrom != "params._meta.feed_slug" {
				t.Errorf("feed_from = %q", out.Filters.FeedFrom)
			}
		})
	}
}

func TestDescribeStation(t *testing.T) {
	t.Parallel()
	cs := sdkSession(t, serve(t, "ocean", oceanFixture(t)...))
	var out tools.StationDescription
	res := call(t, cs, "ocean.describe_station", nil, map[string]any{"sensor_external_id": "41002"}, &out)
	if res.IsError {
		t.Fatal(text(res))
	}
	s := out.Station
	if s.ExternalID != "41002" || s.Name != "South Hatteras" || s.SensorType != "buoy" || s.Provider != "ndbc" || s.Feed != "ndbc-realtime" ||
		s.ReportingIntervalS != 600 || s.LastReadingAt != "2026-11-21T11:50:00.000Z" || *s.AgeSeconds != 600 || *s.Stale || s.DeploymentDate != "2020-01-01" {
		t.Errorf("station = %+v", s)
	}
	units := map[string]string{}
	for _, p := range out.Parameters {
		units[p.Parameter] = p.Unit
	}
	if units["wave_height_m"] != "m" || units["air_pressure_hpa"] != "hPa" || len(units) != 6 {
		t.Errorf("parameters = %+v", out.Parameters)
	}
	if !slices.Contains(out.Tools, "ocean.sea_state") || out.Latest == nil {
		t.Errorf("tools = %v, latest = %+v", out.Tools, out.Latest)
	}

	var none tools.StationDescription
	res = call(t, cs, "ocean.describe_station", map[string]any{"station_id": "NOREAD"}, nil, &none)
	if res.IsError || none.Latest != nil || none.Station.LastReadingAt != "" || !strings.Contains(text(res), "no readings yet") {
		t.Errorf("station without readings: isError=%v latest=%+v\n%s", res.IsError, none.Latest, text(res))
	}
}

// TestBareJSONClient speaks MCP the way the simplest client does: Content-Type
// application/json only, protocolVersion 2024-11-05, one POST per message.
func TestBareJSONClient(t *testing.T) {
	t.Parallel()
	url := serve(t, "ocean", oceanFixture(t)...)

	status, hdr, r := barePost(t, url, rpc(t, 1, "initialize", map[string]any{
		"protocolVersion": "2024-11-05", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "curl", "version": "1"},
	}))
	var init struct {
		ProtocolVersion string         `json:"protocolVersion"`
		Capabilities    map[string]any `json:"capabilities"`
		ServerInfo      struct{ Name string }
	}
	if status != 200 || r.Error != nil || json.Unmarshal(r.Result, &init) != nil {
		t.Fatalf("initialize: %d %+v %s", status, r.Error, r.Result)
	}
	if init.ProtocolVersion != "2024-11-05" || init.Capabilities["tools"] == nil || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Fatalf("initialize answered %+v with Content-Type %q", init, hdr.Get("Content-Type"))
	}

	status, _, r = barePost(t, url, rpc(t, 2, "tools/list", map[string]any{}))
	var list struct{ Tools []mcp.Tool }
	if status != 200 || r.Error != nil || json.Unmarshal(r.Result, &list) != nil || len(list.Tools) != 5 {
		t.Fatalf("tools/list: %d %+v %s", status, r.Error, r.Result)
	}

	status, _, r = barePost(t, url, rpc(t, 3, "tools/call", map[string]any{
		"name": "ocean.latest_observation", "arguments": map[string]any{},
		"_meta": map[string]any{"sensor_id": ids.Sensor("ocean", "41002").String(), "sensor_external_id": "41002", "sensor_name": "South Hatteras", "feed_slug": "ndbc-realtime"},
	}))
	var got struct {
		Content           []map[string]any
		StructuredContent tools.LatestObservation
		IsError           bool
	}
	if status != 200 || r.Error != nil || json.Unmarshal(r.Result, &got) != nil {
		t.Fatalf("tools/call: %d %+v %s", status, r.Error, r.Result)
	}
	if got.IsError || got.StructuredContent.Station.ExternalID != "41002" || len(got.Content) < 1 || got.Content[0]["type"] != "text" {
		t.Fatalf("tools/call result: %s", r.Result)
	}

	status, _, r = barePost(t, url, rpc(t, 4, "tools/call", map[string]any{"name": "ocean.latest_observation", "arguments": map[string]any{"station_id": "NOPE1"}}))
	if status != 200 || r.Error != nil || json.Unmarshal(r.Result, &got) != nil || !got.IsError {
		t.Fatalf("unknown station: %d %+v %s", status, r.Error, r.Result)
	}

	rpcErrors := []struct {
		name string
		body string
		code int
	}{
		{"unknown tool", rpc(t, 5, "tools/call", map[string]any{"name": "ocean.nope", "arguments": map[string]any{}}), -32602},
		{"unknown method", rpc(t, 6, "tools/frobnicate", map[string]any{}), -32601},
		{"malformed JSON", `{"jsonrpc": "2.0", "id": 7, "method": `, -32700},
	}
	for _, c := range rpcErrors {
		status, _, r := barePost(t, url, c.body)
		if status != 200 || r.Error == nil || r.Error.Code != c.code {
			t.Errorf("%s: HTTP %d error %+v, want JSON-RPC error %d", c.name, status, r.Error, c.code)
		}
	}
}

// TestStoreFailure closes the readings store under a running endpoint: every tool answers
// an isError result that says the store did not answer, and nothing hangs or panics.
func TestStoreFailure(t *testing.T) {
	t.Parallel()
	url, st := serveStore(t, "ocean", oceanFixture(t)...)
	cs := sdkSession(t, url)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range tools.Names(tools.Config{ServiceID: "ocean"}) {
		res := call(t, cs, name, map[string]any{}, map[string]any{"sensor_external_id": "41002"}, nil)
		if !res.IsError || !strings.Contains(text(res), `the readings store of service "ocean" did not answer`) {
			t.Errorf("%s with a closed store: isError=%v %q", name, res.IsError, text(res))
		}
	}
}

// TestToolListSize measures each service's tools/list answer as the gateway forwards it:
// it is listed at the service, sensor and project scopes (the project's own tools come on
// top, about 4 KB), and every scope's answer must stay under 20 KB (docs/mcp.md): 15 KB here.
func TestToolListSize(t *testing.T) {
	t.Parallel()
	const budget = 15 << 10
	for id, fixture := range map[string]func(*testing.T) []store.Batch{"ocean": oceanFixture, "weather": weatherFixture, "airquality": airFixture} {
		url := serve(t, id, fixture(t)...)
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"tools"`) {
			t.Fatalf("%s tools/list: %d %s", id, resp.StatusCode, b)
		}
		t.Logf("%s tools/list: %d bytes", id, len(b))
		if len(b) > budget {
			t.Errorf("%s tools/list is %d bytes, over %d", id, len(b), budget)
		}
	}
}

// checkToolError holds a failed call to the one error shape of every MCP scope: isError,
// the reason with its code in the text ("... (invalid_parameter)"), and no
// structuredContent, which clients check against the tool's outputSchema even on an error.
func checkToolError(t *testing.T, res *mcp.CallToolResult) {
	t.Helper()
	txt := text(res)
	open := strings.LastIndex(txt, " (")
	if !res.IsError || res.StructuredContent != nil || open < 0 || !strings.HasSuffix(txt, ")") || strings.ContainsAny(txt[open+2:len(txt)-1], " ()") {
		t.Errorf("error result: isError %v, structuredContent %v, text %q: want isError, no structuredContent and the text ending in (code)", res.IsError, res.StructuredContent, txt)
	}
}
