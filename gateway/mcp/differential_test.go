package mcp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// TestOneAnswerTwoFaces asks the same catalog questions of the real gateway (app.Run in
// front of a real ocean service and PostgreSQL) through REST and through the MCP tools,
// and compares the answers field by field after the envelope mapping of docs/mcp.md
// ("One answer, two faces"): the same sensors in the same order, the same totals, the same
// rounding, the same bounds, and the same culprit in a refusal (REST's parameter, the
// tool's argument for it).
func TestOneAnswerTwoFaces(t *testing.T) {
	gw, s0 := realGateway(t, nil, devKey)
	one := restSensor(t, gw, s0.ID)
	lat, lon := *one.Latitude+0.7, *one.Longitude-0.4

	type question struct {
		name string
		rest string         // query of GET /api/v1/sensors (or /registry)
		tool string         // search_sensors or list_sensors
		args map[string]any // its arguments
		// refused is REST's culprit when the question is refused; the tool must name
		// culprit (its argument for the same parameter).
		refused, culprit string
	}
	near := func(r any) map[string]any {
		return map[string]any{"near": map[string]any{"lat": lat, "lon": lon, "radius_km": r}, "sort": "distance"}
	}
	qs := []question{
		{name: "near by distance", rest: fmt.Sprintf("lat=%g&lon=%g&radius_km=400&sort=distance", lat, lon), tool: "search_sensors", args: near(400)},
		{name: "radius at its bound", rest: fmt.Sprintf("lat=%g&lon=%g&radius_km=20038&sort=distance", lat, lon), tool: "search_sensors", args: near(20038)},
		{name: "radius past its bound", rest: fmt.Sprintf("lat=%g&lon=%g&radius_km=20038.5&sort=distance", lat, lon), tool: "search_sensors", args: near(20038.5), refused: "radius_km", culprit: "near.radius_km"},
		{name: "latitude past its bound", rest: "lat=90.5&lon=0", tool: "search_sensors", args: map[string]any{"near": map[string]any{"lat": 90.5, "lon": 0}}, refused: "lat", culprit: "near.lat"},
		{name: "bbox with data types", rest: "min_lat=-90&min_lon=-180&max_lat=90&max_lon=180&data_types=wave_height_m", tool: "search_sensors",
			args: map[string]any{"bbox": map[string]any{"min_lat": -90, "min_lon": -180, "max_lat": 90, "max_lon": 180}, "data_types": []string{"wave_height_m"}}},
		{name: "bbox inverted", rest: "min_lat=10&min_lon=0&max_lat=5&max_lon=1", tool: "search_sensors",
			args: map[string]any{"bbox": map[string]any{"min_lat": 10, "min_lon": 0, "max_lat": 5, "max_lon": 1}}, refused: "min_lat", culprit: "bbox.min_lat"},
		{name: "unknown data type", rest: "data_types=air_temp_c", tool: "search_sensors", args: map[string]any{"data_types": []string{"air_temp_c"}}, refused: "data_types", culprit: "data_types"},
		{name: "type, status and provider", rest: "sensor_type=" + url.QueryEscape(one.SensorType) + "&status=" + one.Status + "&provider=" + one.ProviderSlug, tool: "search_sensors",
			args: map[string]any{"sensor_type": one.SensorType, "status": one.Status, "provider": one.ProviderSlug}},
		{name: "text search", rest: "search=" + url.QueryEscape(one.ExternalID), tool: "search_sensors", args: map[string]any{"query": one.ExternalID}},
		{name: "limit at its bound", rest: "limit=1000", tool: "search_sensors", args: map[string]any{"limit": 1000}},
		{name: "limit past its bound is clamped", rest: "limit=1001", tool: "search_sensors", args: map[string]any{"limit": 1001}},
		{name: "limit below its bound", rest: "limit=0", tool: "search_sensors", args: map[string]any{"limit": 0}, refused: "limit", culprit: "limit"},
		{name: "sort by distance without a centre", rest: "sort=distance", tool: "search_sensors", args: map[string]any{"sort": "distance"}, refused: "sort", culprit: "sort"},
		{name: "registry near", rest: fmt.Sprintf("registry:lat=%g&lon=%g&radius_km=20038", lat, lon), tool: "list_sensors",
			args: map[string]any{"latitude": lat, "longitude": lon, "radius_km": 20038}},
		{name: "registry radius past its bound", rest: fmt.Sprintf("registry:lat=%g&lon=%g&radius_km=20039", lat, lon), tool: "list_sensors",
			args: map[string]any{"latitude": lat, "longitude": lon, "radius_km": 20039}, refused: "radius_km", culprit: "radius_km"},
		{name: "registry longitude alone", rest: "registry:lon=3", tool: "list_sensors", args: map[string]any{"longitude": 3}, refused: "lat", culprit: "latitude"},
	}
	for _, q := range qs {
		t.Run(q.name, func(t *testing.T) {
			path, query := "/api/v1/sensors", q.rest
			endpoint := "/api/v1/catalog/mcp"
			if rest, ok := strings.CutPrefix(q.rest, "registry:"); ok {
				path, query, endpoint = "/api/v1/sensors/registry", rest, "/api/v1/sensors/registry/mcp"
			}
			status, body := restGet(t, gw, path+"?"+query)
			tr := callTool(t, gw, endpoint, q.tool, q.args)
			if q.refused != "" {
				var e struct{ Error string }
				_ = json.Unmarshal([]byte(body), &e)
				if status != http.StatusBadRequest || !strings.HasPrefix(e.Error, fmt.Sprintf("invalid parameter %q: ", q.refused)) {
					t.Fatalf("REST: %d %s, want 400 naming %s", status, body, q.refused)
				}
				reason := e.Error[strings.Index(e.Error, ": ")+2:]
				want := fmt.Sprintf("%s: invalid argument %q: %s (invalid_parameter)", q.tool, q.culprit, reason)
				if !tr.IsError || tr.text() != want {
					t.Fatalf("MCP: %s (isError %v)\nwant: %s", tr.text(), tr.IsError, want)
				}
				return
			}
			if status != http.StatusOK {
				t.Fatalf("REST: %d %s", status, body)
			}
			var rest struct {
				Sensors    []sensorFace `json:"sensors"`
				Pagination struct {
					Limit int `json:"limit"`
					Total int `json:"total"`
				} `json:"pagination"`
			}
			if err := json.Unmarshal([]byte(body), &rest); err != nil {
				t.Fatal(err)
			}
			var mcpPage struct {
				Sensors    []sensorFace `json:"sensors"`
				Total      *int         `json:"total"`
				Limit      *int         `json:"limit"`
				Pagination *struct {
					Limit int `json:"limit"`
					Total int `json:"total"`
				} `json:"pagination"`
			}
			tr.decode(t, &mcpPage)
			total, limit := mcpPage.Total, mcpPage.Limit
			if p := mcpPage.Pagination; p != nil {
				total, limit = &p.Total, &p.Limit
			}
			if total == nil || *total != rest.Pagination.Total || limit == nil || *limit != rest.Pagination.Limit {
				t.Errorf("total/limit: MCP %v/%v, REST %d/%d", fmtPtr(total), fmtPtr(limit), rest.Pagination.Total, rest.Pagination.Limit)
			}
			if len(rest.Sensors) == 0 {
				t.Fatalf("REST lists no sensors for %s: the question asks nothing", query)
			}
			if !reflect.DeepEqual(rest.Sensors, mcpPage.Sensors) {
				r, _ := json.Marshal(rest.Sensors)
				m, _ := json.Marshal(mcpPage.Sensors)
				t.Errorf("sensors differ:\nREST %s\nMCP  %s", r, m)
			}
		})
	}

	t.Run("paging with cursors", func(t *testing.T) {
		var restIDs, mcpIDs []string
		for page := 1; page <= 3; page++ {
			_, body := restGet(t, gw, fmt.Sprintf("/api/v1/sensors?limit=1&page=%d", page))
			var p struct{ Sensors []sensorFace }
			_ = json.Unmarshal([]byte(body), &p)
			for _, s := range p.Sensors {
				restIDs = append(restIDs, s.ID)
			}
		}
		args := map[string]any{"limit": 1}
		for range 3 {
			var p struct {
				Sensors    []sensorFace
				NextCursor string `json:"nextCursor"`
			}
			callTool(t, gw, "/api/v1/catalog/mcp", "search_sensors", args).decode(t, &p)
			for _, s := range p.Sensors {
				mcpIDs = append(mcpIDs, s.ID)
			}
			if p.NextCursor == "" {
				break
			}
			args = map[string]any{"limit": 1, "cursor": p.NextCursor}
		}
		if len(restIDs) < 2 || !reflect.DeepEqual(restIDs, mcpIDs) {
			t.Errorf("pages: REST %v, MCP %v", restIDs, mcpIDs)
		}
	})

	for _, ref := range []string{s0.ID, s0.ExternalID} {
		t.Run("describe by "+ref, func(t *testing.T) {
			_, body := restGet(t, gw, "/api/v1/sensors/"+url.PathEscape(ref))
			var rest map[string]any
			if err := json.Unmarshal([]byte(body), &rest); err != nil {
				t.Fatal(err)
			}
			var d struct {
				Sensor map[string]any `json:"sensor"`
			}
			callTool(t, gw, "/api/v1/catalog/mcp", "describe_sensor", map[string]any{"sensor_id": ref}).decode(t, &d)
			// MCP's record is REST's plus feed_slug and reporting_interval_s.
			for k, v := range rest {
				if !reflect.DeepEqual(d.Sensor[k], v) {
					t.Errorf("%s: MCP %v, REST %v", k, d.Sensor[k], v)
				}
			}
		})
	}

	t.Run("unknown sensor", func(t *testing.T) {
		const ref = "00000000-0000-4000-8000-000000000000"
		status, body := restGet(t, gw, "/api/v1/sensors/"+ref)
		tr := callTool(t, gw, "/api/v1/catalog/mcp", "describe_sensor", map[string]any{"sensor_id": ref})
		if status != http.StatusNotFound || !strings.Contains(body, "sensor_not_found") || !tr.IsError || !strings.Contains(tr.text(), "(sensor_not_found)") {
			t.Errorf("REST %d %s; MCP %s", status, body, tr.text())
		}
	})
}

// sensorFace is what both faces of a sensor list say of each sensor.
type sensorFace struct {
	ID         string   `json:"id"`
	ExternalID string   `json:"external_id"`
	Name       string   `json:"name"`
	SensorType string   `json:"sensor_type"`
	Status     string   `json:"status"`
	DataTypes  []string `json:"data_types"`
	Latitude   *float64 `json:"latitude"`
	Longitude  *float64 `json:"longitude"`
	DistanceKM *float64 `json:"distance_km"`
}

type restRecord struct {
	sensorFace
	ProviderSlug string `json:"provider_slug"`
}

func restGet(t *testing.T, gw, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, gw+path, nil)
	req.Header.Set("x-api-key", devKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func restSensor(t *testing.T, gw, id string) restRecord {
	t.Helper()
	status, body := restGet(t, gw, "/api/v1/sensors/"+id)
	var r restRecord
	if err := json.Unmarshal([]byte(body), &r); status != http.StatusOK || err != nil || r.Latitude == nil {
		t.Fatalf("sensor %s: %d %s", id, status, body)
	}
	return r
}

func callTool(t *testing.T, gw, endpoint, tool string, args any) toolResult {
	t.Helper()
	g := &gateway{URL: gw}
	return g.call(t, endpoint, tool, args)
}

func fmtPtr(p *int) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprint(*p)
}
